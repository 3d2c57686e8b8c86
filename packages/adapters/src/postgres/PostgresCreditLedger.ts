/**
 * The `CreditLedger` port on Postgres (issue 17: "a deduction is a transaction, so concurrent
 * turns cannot overspend"). A balance is one row of `credit_accounts`, and every change takes
 * that row's lock first (an upsert that returns it), computes the amount with the balance it
 * read, and writes the new balance and the history entry in the same transaction. Changes of
 * one user are therefore serialized across every host, and a deduct can never take the
 * balance below zero (a CHECK constraint says so too).
 */
import { Clock, CreditLedger } from "@plugboard/core"
import { Effect, Layer } from "effect"
import {
  Abort,
  decodeOptional,
  encodeOptional,
  int,
  ownerKey,
  type PgFailure,
  query,
  transaction
} from "./internal/sql.js"
import { PgDatabase, type PgDatabaseService } from "./PgDatabase.js"

interface EntryRow {
  id: string
  did: string
  kind: "top-up" | "deduct"
  requested: string
  amount: string
  shortfall: string
  balance_after: string
  reason: string | null
  at: string
}

const ENTRY_COLUMNS = "id, did, kind, requested, amount, shortfall, balance_after, reason, at"

const toEntry = (row: EntryRow): CreditLedger.LedgerEntry => ({
  id: String(row.id),
  did: row.did,
  kind: row.kind,
  requested: int(row.requested),
  amount: int(row.amount),
  shortfall: int(row.shortfall),
  balanceAfter: int(row.balance_after),
  reason: decodeOptional(row.reason),
  at: int(row.at)
})

const unavailable = (failure: PgFailure) =>
  new CreditLedger.CreditLedgerError({
    reason: "unavailable",
    message: `credit ledger unavailable: ${failure.message}`
  })

/** Builds the Postgres ledger on a database. */
export const makeCreditLedger = (
  db: PgDatabaseService
): Effect.Effect<CreditLedger.CreditLedgerService, never, Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const s = db.schema
    const sql = <A>(effect: Effect.Effect<A, PgFailure | CreditLedger.CreditLedgerError>) =>
      Effect.mapError(Effect.zipRight(db.ready, effect), (e) => (e._tag === "PgFailure" ? unavailable(e) : e))

    const apply = (
      did: string,
      kind: CreditLedger.LedgerEntry["kind"],
      requested: number,
      reason: string | undefined,
      at: number
    ) =>
      sql(
        transaction<CreditLedger.LedgerEntry, CreditLedger.CreditLedgerError>(db, async (client) => {
          const owner = ownerKey(did)
          // The no-op update makes the upsert lock the row whether it was there or not, and
          // return the balance under that lock.
          const locked = await client.query<{ balance: string }>(
            `INSERT INTO ${s}.credit_accounts AS a (owner, balance) VALUES ($1, 0)
             ON CONFLICT (owner) DO UPDATE SET balance = a.balance RETURNING balance`,
            [owner]
          )
          const balance = int(locked.rows[0]!.balance)
          if (kind === "top-up" && balance + requested > Number.MAX_SAFE_INTEGER) {
            throw new Abort(CreditLedger.overflowError(did, balance, requested))
          }
          const amount = kind === "top-up" ? requested : Math.min(requested, balance)
          const after = kind === "top-up" ? balance + amount : balance - amount
          const written = await client.query<EntryRow>(
            `WITH u AS (UPDATE ${s}.credit_accounts SET balance = $3 WHERE owner = $1)
             INSERT INTO ${s}.credit_entries
               (owner, did, kind, requested, amount, shortfall, balance_after, reason, at)
             VALUES ($1, $2, $4, $5, $6, $7, $3, $8, $9)
             RETURNING ${ENTRY_COLUMNS}`,
            [owner, did, after, kind, requested, amount, requested - amount, encodeOptional(reason), at]
          )
          return toEntry(written.rows[0]!)
        })
      )

    const validated = (did: string, amount: number, reason: string | undefined) =>
      Effect.all([
        CreditLedger.checkDid(did),
        CreditLedger.checkAmount(amount),
        CreditLedger.checkReason(reason),
        clock.now()
      ])

    return {
      balance: (did) =>
        Effect.flatMap(CreditLedger.checkDid(did), (d) =>
          Effect.map(
            sql(
              query<{ balance: string }>(db, `SELECT balance FROM ${s}.credit_accounts WHERE owner = $1`, [
                ownerKey(d)
              ])
            ),
            (result) => int(result.rows[0]?.balance ?? 0)
          )
        ),
      topUp: (did, amount, reason) =>
        Effect.flatMap(validated(did, amount, reason), ([d, a, r, at]) =>
          Effect.map(apply(d, "top-up", a, r, at), (entry) => ({ balance: entry.balanceAfter, entry }))
        ),
      deduct: (did, amount, reason) =>
        Effect.flatMap(validated(did, amount, reason), ([d, a, r, at]) =>
          Effect.map(apply(d, "deduct", a, r, at), (entry) => ({
            charged: entry.amount,
            shortfall: entry.shortfall,
            balance: entry.balanceAfter,
            entry
          }))
        ),
      history: (did, limit) =>
        Effect.flatMap(Effect.all([CreditLedger.checkDid(did), CreditLedger.checkLimit(limit)]), ([d, l]) =>
          Effect.map(
            sql(
              query<EntryRow>(
                db,
                `SELECT ${ENTRY_COLUMNS} FROM ${s}.credit_entries WHERE owner = $1 ORDER BY id DESC LIMIT $2`,
                [ownerKey(d), l]
              )
            ),
            (result) => result.rows.map(toEntry)
          )
        )
    }
  })

/** The CreditLedger port on the `PgDatabase`. */
export const layerCreditLedger: Layer.Layer<CreditLedger.CreditLedger, never, PgDatabase | Clock.Clock> =
  Layer.effect(CreditLedger.CreditLedger, Effect.flatMap(PgDatabase, makeCreditLedger))
