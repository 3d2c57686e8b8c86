/**
 * The `CreditLedger` port on Postgres ("a deduction is a transaction, so concurrent
 * turns cannot overspend"). A balance is one row of `credit_accounts`, and every change takes
 * that row's lock first (an upsert that returns it), computes the amount with the balance it
 * read, and writes the new balance and the history entry in the same transaction. Changes of
 * one user are therefore serialized across every host, and a deduct can never take the
 * balance below zero (a CHECK constraint says so too). Reservations (migration 4) are
 * rows of `credit_reservations`, read and written under the same account row lock, so concurrent
 * reserves on any number of hosts never promise more than the balance; expired rows stop
 * counting at once and are deleted by the user's next reserve.
 */
import { Clock, CreditLedger } from "@plugboard/core"
import { Effect, Layer } from "effect"
import type pg from "pg"
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
          const balance = await lockBalance(client, owner)
          if (kind === "top-up" && balance + requested > Number.MAX_SAFE_INTEGER) {
            throw new Abort(CreditLedger.overflowError(did, balance, requested))
          }
          const amount =
            kind === "top-up" ? requested : Math.min(requested, balance - (await held(client, owner, at)))
          const after = kind === "top-up" ? balance + amount : balance - amount
          return record(client, owner, did, kind, requested, amount, after, reason, at)
        })
      )

    const record = async (
      client: pg.PoolClient,
      owner: string,
      did: string,
      kind: CreditLedger.LedgerEntry["kind"],
      requested: number,
      amount: number,
      after: number,
      reason: string | undefined,
      at: number
    ) => {
      const written = await client.query<EntryRow>(
        `WITH u AS (UPDATE ${s}.credit_accounts SET balance = $3 WHERE owner = $1)
             INSERT INTO ${s}.credit_entries
               (owner, did, kind, requested, amount, shortfall, balance_after, reason, at)
             VALUES ($1, $2, $4, $5, $6, $7, $3, $8, $9)
             RETURNING ${ENTRY_COLUMNS}`,
        [owner, did, after, kind, requested, amount, requested - amount, encodeOptional(reason), at]
      )
      return toEntry(written.rows[0]!)
    }

    // The no-op update makes the upsert lock the row whether it was there or not, and return
    // the balance under that lock: every change of one user, reservations included, queues here.
    const lockBalance = async (client: pg.PoolClient, owner: string): Promise<number> => {
      const locked = await client.query<{ balance: string }>(
        `INSERT INTO ${s}.credit_accounts AS a (owner, balance) VALUES ($1, 0)
         ON CONFLICT (owner) DO UPDATE SET balance = a.balance RETURNING balance`,
        [owner]
      )
      return int(locked.rows[0]!.balance)
    }

    /** The user's live reservations, summed. */
    const held = async (client: pg.PoolClient, owner: string, now: number): Promise<number> => {
      const result = await client.query<{ held: string | null }>(
        `SELECT sum(amount) AS held FROM ${s}.credit_reservations WHERE owner = $1 AND expires_at > $2`,
        [owner, now]
      )
      return int(result.rows[0]?.held ?? 0)
    }

    /** Removes the user's reservation `id` (under the account lock); its amount when it was live. */
    const take = async (client: pg.PoolClient, owner: string, id: string, now: number): Promise<number> => {
      const row = /^[1-9]\d{0,14}$/.test(id)
        ? (
            await client.query<{ amount: string; expires_at: string }>(
              `DELETE FROM ${s}.credit_reservations WHERE id = $1 AND owner = $2 RETURNING amount, expires_at`,
              [id, owner]
            )
          ).rows[0]
        : undefined
      if (row === undefined || int(row.expires_at) <= now)
        throw new Abort(CreditLedger.unknownReservation(id))
      return int(row.amount)
    }

    const reserveTx = (did: string, amount: number, ttl: number, now: number) =>
      sql(
        transaction<CreditLedger.Reservation, CreditLedger.CreditLedgerError>(db, async (client) => {
          const owner = ownerKey(did)
          const balance = await lockBalance(client, owner)
          await client.query(`DELETE FROM ${s}.credit_reservations WHERE owner = $1 AND expires_at <= $2`, [
            owner,
            now
          ])
          const available = balance - (await held(client, owner, now))
          if (available < amount) throw new Abort(CreditLedger.insufficientCredits(did, amount, available))
          const inserted = await client.query<{ id: string }>(
            `INSERT INTO ${s}.credit_reservations (owner, amount, expires_at) VALUES ($1, $2, $3) RETURNING id`,
            [owner, amount, now + ttl]
          )
          return { id: String(inserted.rows[0]!.id), did, amount, expiresAt: now + ttl }
        })
      )

    const settleTx = (did: string, id: string, cost: number, reason: string | undefined, now: number) =>
      sql(
        transaction<CreditLedger.SettleResult, CreditLedger.CreditLedgerError>(db, async (client) => {
          const owner = ownerKey(did)
          const balance = await lockBalance(client, owner)
          const reserved = await take(client, owner, id, now)
          const available = balance - (await held(client, owner, now)) - reserved
          const moved = CreditLedger.settlement(cost, reserved, available)
          const after = balance - moved.charged
          const entry =
            cost === 0
              ? undefined
              : await record(client, owner, did, "deduct", cost, moved.charged, after, reason, now)
          return { ...moved, balance: after, entry }
        })
      )

    const releaseTx = (did: string, id: string, now: number) =>
      sql(
        transaction<void, CreditLedger.CreditLedgerError>(db, async (client) => {
          const owner = ownerKey(did)
          await lockBalance(client, owner)
          await take(client, owner, id, now)
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
      available: (did) =>
        Effect.flatMap(Effect.all([CreditLedger.checkDid(did), clock.now()]), ([d, now]) =>
          Effect.map(
            // One statement, one snapshot: the balance and the holds are read as of the same moment.
            sql(
              query<{ available: string }>(
                db,
                `SELECT coalesce((SELECT balance FROM ${s}.credit_accounts WHERE owner = $1), 0)
                   - coalesce((SELECT sum(amount) FROM ${s}.credit_reservations
                               WHERE owner = $1 AND expires_at > $2), 0) AS available`,
                [ownerKey(d), now]
              )
            ),
            (result) => int(result.rows[0]!.available)
          )
        ),
      reserve: (did, amount, options) =>
        Effect.flatMap(
          Effect.zip(CreditLedger.checkReserve(did, amount, options), clock.now()),
          ([[d, a, ttl], now]) => reserveTx(d, a, ttl, now)
        ),
      settle: (did, reservationId, actualCost, reason) =>
        Effect.flatMap(
          Effect.zip(CreditLedger.checkSettle(did, reservationId, actualCost, reason), clock.now()),
          ([[d, id, cost, r], now]) => settleTx(d, id, cost, r, now)
        ),
      release: (did, reservationId) =>
        Effect.flatMap(
          Effect.zip(CreditLedger.checkRelease(did, reservationId), clock.now()),
          ([[d, id], now]) => releaseTx(d, id, now)
        ),
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
          Effect.map(apply(d, "top-up", a, r, at), CreditLedger.topUpResult)
        ),
      deduct: (did, amount, reason) =>
        Effect.flatMap(validated(did, amount, reason), ([d, a, r, at]) =>
          Effect.map(apply(d, "deduct", a, r, at), CreditLedger.deductResult)
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
