/**
 * The in-memory CreditLedger: the reference implementation every ledger's conformance suite also runs against.
 */
import { Effect, Layer } from "effect"
import { Clock } from "../../Clock.js"
import {
  CreditLedger,
  type CreditLedgerError,
  type CreditLedgerService,
  checkAmount,
  checkDid,
  checkLimit,
  checkReason,
  checkRelease,
  checkReserve,
  checkSettle,
  deductResult,
  insufficientCredits,
  type LedgerEntry,
  overflowError,
  settlement,
  topUpResult,
  unknownReservation
} from "./port.js"

interface Account {
  balance: number
  readonly entries: Array<LedgerEntry>
  readonly reservations: Map<string, { readonly amount: number; readonly expiresAt: number }>
}

/**
 * An in-memory ledger. State lives in this process only: fine for tests and the embedded
 * default with credits off; a real deployment uses the SQLite adapter or a shared engine.
 * Each change runs as one synchronous step, so concurrent fibers never interleave inside it
 * and never lose an update.
 */
export const makeMemory: Effect.Effect<CreditLedgerService, never, Clock> = Effect.gen(function* () {
  const clock = yield* Clock
  const accounts = new Map<string, Account>()
  let seq = 0
  let reservationSeq = 0

  const accountOf = (did: string): Account => {
    let account = accounts.get(did)
    if (account === undefined) {
      account = { balance: 0, entries: [], reservations: new Map() }
      accounts.set(did, account)
    }
    return account
  }

  /** Drops the expired reservations (they no longer count) and returns what is available. */
  const availableOf = (account: Account, now: number, except?: string): number => {
    let held = 0
    for (const [id, r] of account.reservations) {
      if (r.expiresAt <= now) account.reservations.delete(id)
      else if (id !== except) held += r.amount
    }
    return account.balance - held
  }

  const record = (
    did: string,
    account: Account,
    kind: LedgerEntry["kind"],
    requested: number,
    amount: number,
    reason: string | undefined,
    at: number
  ): LedgerEntry => {
    const balanceAfter = kind === "top-up" ? account.balance + amount : account.balance - amount
    seq += 1
    const entry: LedgerEntry = {
      id: String(seq),
      did,
      kind,
      requested,
      amount,
      shortfall: requested - amount,
      balanceAfter,
      reason,
      at
    }
    account.balance = balanceAfter
    account.entries.push(entry)
    return entry
  }

  const apply = (
    did: string,
    kind: LedgerEntry["kind"],
    requested: number,
    reason: string | undefined,
    at: number
  ): Effect.Effect<LedgerEntry, CreditLedgerError> =>
    Effect.suspend(() => {
      const account = accountOf(did)
      if (kind === "top-up" && account.balance + requested > Number.MAX_SAFE_INTEGER) {
        return Effect.fail(overflowError(did, account.balance, requested))
      }
      const amount = kind === "top-up" ? requested : Math.min(requested, availableOf(account, at))
      return Effect.succeed(record(did, account, kind, requested, amount, reason, at))
    })

  /** The live reservation `id` of `did`, removed; `unknown-reservation` otherwise. */
  const take = (did: string, id: string, now: number) => {
    const account = accounts.get(did)
    const held = account?.reservations.get(id)
    if (account === undefined || held === undefined) return undefined
    account.reservations.delete(id)
    return held.expiresAt <= now ? undefined : { account, amount: held.amount }
  }

  const validated = (did: string, amount: number, reason: string | undefined) =>
    Effect.all([checkDid(did), checkAmount(amount), checkReason(reason), clock.now()])

  return {
    balance: (did) => Effect.map(checkDid(did), (d) => accounts.get(d)?.balance ?? 0),
    available: (did) =>
      Effect.flatMap(Effect.all([checkDid(did), clock.now()]), ([d, now]) =>
        Effect.sync(() => {
          const account = accounts.get(d)
          return account === undefined ? 0 : availableOf(account, now)
        })
      ),
    topUp: (did, amount, reason) =>
      Effect.flatMap(validated(did, amount, reason), ([d, a, r, at]) =>
        Effect.map(apply(d, "top-up", a, r, at), topUpResult)
      ),
    deduct: (did, amount, reason) =>
      Effect.flatMap(validated(did, amount, reason), ([d, a, r, at]) =>
        Effect.map(apply(d, "deduct", a, r, at), deductResult)
      ),
    reserve: (did, amount, options) =>
      Effect.flatMap(Effect.zip(checkReserve(did, amount, options), clock.now()), ([[d, a, ttl], now]) =>
        Effect.suspend(() => {
          const account = accountOf(d)
          const available = availableOf(account, now)
          if (available < a) return Effect.fail(insufficientCredits(d, a, available))
          reservationSeq += 1
          const id = String(reservationSeq)
          const expiresAt = now + ttl
          account.reservations.set(id, { amount: a, expiresAt })
          return Effect.succeed({ id, did: d, amount: a, expiresAt })
        })
      ),
    settle: (did, reservationId, actualCost, reason) =>
      Effect.flatMap(
        Effect.zip(checkSettle(did, reservationId, actualCost, reason), clock.now()),
        ([[d, id, cost, r], now]) =>
          Effect.suspend(() => {
            const held = take(d, id, now)
            if (held === undefined) return Effect.fail(unknownReservation(id))
            const { account, amount } = held
            const moved = settlement(cost, amount, availableOf(account, now) - amount)
            const entry = cost === 0 ? undefined : record(d, account, "deduct", cost, moved.charged, r, now)
            return Effect.succeed({ ...moved, balance: account.balance, entry })
          })
      ),
    release: (did, reservationId) =>
      Effect.flatMap(Effect.zip(checkRelease(did, reservationId), clock.now()), ([[d, id], now]) =>
        take(d, id, now) === undefined ? Effect.fail(unknownReservation(id)) : Effect.void
      ),
    history: (did, limit) =>
      Effect.flatMap(Effect.all([checkDid(did), checkLimit(limit)]), ([d, l]) =>
        Effect.sync(() => (accounts.get(d)?.entries ?? []).slice(-l).reverse())
      )
  }
})

/** The in-memory ledger as a layer (needs a `Clock`). */
export const layerMemory: Layer.Layer<CreditLedger, never, Clock> = Layer.effect(CreditLedger, makeMemory)
