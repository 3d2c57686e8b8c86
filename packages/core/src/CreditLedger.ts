/**
 * The `CreditLedger` port: per-user credit balances and their history (issue 8, "Credits").
 *
 * Amounts are whole credits (positive safe integers). A balance is never negative.
 *
 * `deduct` takes what is there and reports the shortfall instead of failing: the credits
 * middleware charges *after* a model call, for usage that already happened, so refusing the
 * charge would record nothing and let the turn go free. Clamping records what could be taken,
 * leaves the balance at zero (the next request then gets 402 from the credit gate) and tells the
 * caller how much went unpaid. Invariant, under any interleaving of concurrent calls:
 * `balance = Σ topUp amounts − Σ charged`, `charged = min(requested, balance before)`.
 *
 * Reservations (concurrent turns can never take the balance below zero). A
 * turn reserves an estimate before it runs; `reserve` succeeds only while the balance minus the
 * user's live reservations (`available`) covers it, checked and recorded in one atomic step, so
 * concurrent reserves can never promise more than the balance holds. At its end the turn
 * `settle`s the actual cost and the rest of the hold is released. A reservation lives `ttlMs`
 * (measured on the `Clock` port) and then stops counting, so a process that dies mid-turn cannot
 * hold credits forever; settling or releasing an expired one fails `unknown-reservation`, as does
 * a second settle or release. Invariant, under any interleaving: `balance ≥ 0` and
 * `available = balance − Σ live reservations ≥ 0`. Hence a `deduct` takes only from `available`
 * (credits promised to a running turn are not there to take), and a settle whose actual cost
 * exceeds its reservation takes the excess from `available` too: it charges
 * `min(actual, reserved + available)` and reports the rest as shortfall, never going below zero
 * and never taking another turn's reservation.
 *
 * Every method names the user explicitly and may fail: implementations may keep balances in a
 * file, a shared database or another process.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { isDid } from "./Auth.js"
import { Clock } from "./Clock.js"

/** Why a ledger operation failed. */
export const CreditLedgerErrorReason = Schema.Literal(
  "invalid-did",
  "invalid-amount",
  "invalid-limit",
  "invalid-reason",
  "overflow",
  "invalid-ttl",
  "insufficient-credits",
  "unknown-reservation",
  "overflow",
  "corrupt",
  "incompatible",
  "unavailable"
)
/** Why a ledger operation failed. */
export type CreditLedgerErrorReason = typeof CreditLedgerErrorReason.Type

/** A ledger operation failed; nothing was changed. */
export class CreditLedgerError extends Schema.TaggedError<CreditLedgerError>()("CreditLedgerError", {
  reason: CreditLedgerErrorReason,
  message: Schema.String
}) {}

/** One line of a user's history. */
export interface LedgerEntry {
  /** Unique within the ledger; later entries of a user sort after earlier ones. */
  readonly id: string
  readonly did: string
  readonly kind: "top-up" | "deduct"
  /** The amount asked for. */
  readonly requested: number
  /** The amount actually moved: `requested` for top-ups, `min(requested, balance)` for deducts. */
  readonly amount: number
  /** `requested − amount`: what a deduct could not take. Always 0 for top-ups. */
  readonly shortfall: number
  /** The balance right after this entry. */
  readonly balanceAfter: number
  readonly reason?: string | undefined
  /** Epoch millis, from the `Clock` port. */
  readonly at: number
}

/** The outcome of a deduct. */
export interface DeductResult {
  /** Credits actually taken. */
  readonly charged: number
  /** Credits that could not be taken because the balance ran out. */
  readonly shortfall: number
  /** Balance after the deduct. */
  readonly balance: number
  readonly entry: LedgerEntry
}

/** The outcome of a top-up. */
export interface TopUpResult {
  readonly balance: number
  readonly entry: LedgerEntry
}

/** What a deduct returns, from the entry it recorded (the same for every implementation). */
export const deductResult = (entry: LedgerEntry): DeductResult => ({
  charged: entry.amount,
  shortfall: entry.shortfall,
  balance: entry.balanceAfter,
  entry
})

/** What a top-up returns, from the entry it recorded. */
export const topUpResult = (entry: LedgerEntry): TopUpResult => ({ balance: entry.balanceAfter, entry })

/** A live hold on part of a user's balance (`reserve`). */
export interface Reservation {
  /** Unique within the ledger and never reused; pass it to `settle` or `release`. */
  readonly id: string
  readonly did: string
  readonly amount: number
  /** Epoch millis (the `Clock` port) from which the reservation no longer counts. */
  readonly expiresAt: number
}

/** Options of `reserve`. */
export interface ReserveOptions {
  /** How long the reservation holds, in milliseconds (1 to `MAX_RESERVATION_TTL_MS`). */
  readonly ttlMs: number
}

/** The outcome of a settle. */
export interface SettleResult {
  /** Credits actually taken: `min(actual, reserved + available)`. */
  readonly charged: number
  /** What could not be taken (`actual − charged`). */
  readonly shortfall: number
  /** The part of the reservation given back (`reserved − min(charged, reserved)`). */
  readonly released: number
  /** Balance after the settle. */
  readonly balance: number
  /** The deduct entry of the charge; none when the actual cost was 0. */
  readonly entry?: LedgerEntry | undefined
}

/** The operations of the CreditLedger port. */
export interface CreditLedgerService {
  /** The user's balance; 0 for a user never seen. */
  readonly balance: (did: string) => Effect.Effect<number, CreditLedgerError>
  /** Adds `amount` credits. Fails with `overflow` past `Number.MAX_SAFE_INTEGER`. */
  readonly topUp: (
    did: string,
    amount: number,
    reason?: string
  ) => Effect.Effect<TopUpResult, CreditLedgerError>
  /**
   * Takes up to `amount` credits from what is available (the balance not reserved), never below
   * zero; reports the shortfall.
   */
  readonly deduct: (
    did: string,
    amount: number,
    reason?: string
  ) => Effect.Effect<DeductResult, CreditLedgerError>
  /** The balance minus the user's live reservations: what a `reserve` or `deduct` can take. */
  readonly available: (did: string) => Effect.Effect<number, CreditLedgerError>
  /**
   * Holds `amount` credits for `ttlMs`: fails `insufficient-credits` (nothing changed) unless
   * `available` covers it, checked and recorded atomically.
   */
  readonly reserve: (
    did: string,
    amount: number,
    options: ReserveOptions
  ) => Effect.Effect<Reservation, CreditLedgerError>
  /**
   * Charges `actualCost` (a whole number, 0 allowed) against the reservation and releases the
   * rest; past the reservation, the excess is taken from `available` (never below zero, never
   * from another reservation) and the remainder reported as shortfall. Fails
   * `unknown-reservation` for one that is not live (settled, released, expired, another user's).
   */
  readonly settle: (
    did: string,
    reservationId: string,
    actualCost: number,
    reason?: string
  ) => Effect.Effect<SettleResult, CreditLedgerError>
  /** Gives the whole reservation back; `unknown-reservation` when it is not live. */
  readonly release: (did: string, reservationId: string) => Effect.Effect<void, CreditLedgerError>
  /** The user's entries, newest first, at most `limit` (default 50, at most 1000). */
  readonly history: (
    did: string,
    limit?: number
  ) => Effect.Effect<ReadonlyArray<LedgerEntry>, CreditLedgerError>
}

/** The CreditLedger port. */
export class CreditLedger extends Context.Tag("@plugboard/core/CreditLedger")<
  CreditLedger,
  CreditLedgerService
>() {}

/** Default and maximum page size of `history`. */
export const DEFAULT_HISTORY_LIMIT = 50
/** Largest `limit` accepted by `history`. */
export const MAX_HISTORY_LIMIT = 1000
/** Longest `reason` kept; longer ones are refused rather than truncated. */
export const MAX_REASON_LENGTH = 500

/** Longest a reservation may hold: a day, far beyond any bounded turn. */
export const MAX_RESERVATION_TTL_MS = 86_400_000

/** Validates reserve options: `ttlMs` a whole number of milliseconds, 1 to `MAX_RESERVATION_TTL_MS`. */
export const checkTtl = (options: unknown): Effect.Effect<number, CreditLedgerError> => {
  const ttl =
    typeof options === "object" && options !== null ? (options as { ttlMs?: unknown }).ttlMs : undefined
  return typeof ttl === "number" && Number.isSafeInteger(ttl) && ttl > 0 && ttl <= MAX_RESERVATION_TTL_MS
    ? Effect.succeed(ttl)
    : Effect.fail(
        new CreditLedgerError({
          reason: "invalid-ttl",
          message: `A reservation's ttlMs must be a whole number from 1 to ${MAX_RESERVATION_TTL_MS}, got ${describe(ttl)}.`
        })
      )
}

/** Validates an actual cost: a non-negative safe integer (a turn may cost nothing). */
export const checkCost = (cost: unknown): Effect.Effect<number, CreditLedgerError> =>
  typeof cost === "number" && Number.isSafeInteger(cost) && cost >= 0
    ? Effect.succeed(cost)
    : Effect.fail(
        new CreditLedgerError({
          reason: "invalid-amount",
          message: `An actual cost must be a whole number of credits (0 or more), got ${describe(cost)}.`
        })
      )

/**
 * Validates a reservation id: a string of 1 to 64 characters. What an implementation does not
 * know is `unknown-reservation` as well, so a malformed id and a stale one read the same.
 */
export const checkReservationId = (id: unknown): Effect.Effect<string, CreditLedgerError> =>
  typeof id === "string" && id.length > 0 && id.length <= 64
    ? Effect.succeed(id)
    : Effect.fail(unknownReservation(describe(id)))

/** The error of a reservation that is not live, worded the same by every implementation. */
export const unknownReservation = (id: string): CreditLedgerError =>
  new CreditLedgerError({
    reason: "unknown-reservation",
    message: `No live reservation ${id.slice(0, 80)} (never made, another user's, already settled or released, or expired).`
  })

/** The refusal of a reserve, worded the same by every implementation. */
export const insufficientCredits = (did: string, amount: number, available: number): CreditLedgerError =>
  new CreditLedgerError({
    reason: "insufficient-credits",
    message: `Cannot reserve ${amount} credits for ${did}: ${available} available.`
  })

/**
 * What a settle moves (the rule every implementation applies): `available` is the balance minus
 * every live reservation, this one included (what is free besides it). The charge is the actual cost, capped by the reservation plus
 * what is available, so neither the balance nor any other turn's hold is overdrawn.
 */
export const settlement = (
  actual: number,
  reserved: number,
  available: number
): { readonly charged: number; readonly shortfall: number; readonly released: number } => {
  const charged = Math.min(actual, reserved + Math.max(0, available))
  return { charged, shortfall: actual - charged, released: reserved - Math.min(charged, reserved) }
}

/** Validates a DID argument; shared by every implementation so errors read the same. */
export const checkDid = (did: unknown): Effect.Effect<string, CreditLedgerError> =>
  isDid(did)
    ? Effect.succeed(did)
    : Effect.fail(new CreditLedgerError({ reason: "invalid-did", message: `Not a DID: ${describe(did)}.` }))

/** Validates an amount: a positive safe integer. */
export const checkAmount = (amount: unknown): Effect.Effect<number, CreditLedgerError> =>
  typeof amount === "number" && Number.isSafeInteger(amount) && amount > 0
    ? Effect.succeed(amount)
    : Effect.fail(
        new CreditLedgerError({
          reason: "invalid-amount",
          message: `Amount must be a positive whole number of credits, got ${describe(amount)}.`
        })
      )

/** Validates an optional reason: a string of at most `MAX_REASON_LENGTH` characters. */
export const checkReason = (reason: unknown): Effect.Effect<string | undefined, CreditLedgerError> =>
  reason === undefined || (typeof reason === "string" && reason.length <= MAX_REASON_LENGTH)
    ? Effect.succeed(reason as string | undefined)
    : Effect.fail(
        new CreditLedgerError({
          reason: "invalid-reason",
          message: `Reason must be a string of at most ${MAX_REASON_LENGTH} characters.`
        })
      )

/** The arguments of `reserve`, checked (every implementation's first step). */
export const checkReserve = (did: unknown, amount: unknown, options: unknown) =>
  Effect.all([checkDid(did), checkAmount(amount), checkTtl(options)])

/** The arguments of `settle`, checked. */
export const checkSettle = (did: unknown, reservationId: unknown, actualCost: unknown, reason: unknown) =>
  Effect.all([checkDid(did), checkReservationId(reservationId), checkCost(actualCost), checkReason(reason)])

/** The arguments of `release`, checked. */
export const checkRelease = (did: unknown, reservationId: unknown) =>
  Effect.all([checkDid(did), checkReservationId(reservationId)])

/** Validates a history limit, defaulting to `DEFAULT_HISTORY_LIMIT`. */
export const checkLimit = (limit: unknown): Effect.Effect<number, CreditLedgerError> =>
  limit === undefined
    ? Effect.succeed(DEFAULT_HISTORY_LIMIT)
    : typeof limit === "number" && Number.isSafeInteger(limit) && limit > 0 && limit <= MAX_HISTORY_LIMIT
      ? Effect.succeed(limit)
      : Effect.fail(
          new CreditLedgerError({
            reason: "invalid-limit",
            message: `History limit must be a whole number from 1 to ${MAX_HISTORY_LIMIT}, got ${describe(limit)}.`
          })
        )

/** The top-up overflow error, worded the same by every implementation. */
export const overflowError = (did: string, balance: number, amount: number): CreditLedgerError =>
  new CreditLedgerError({
    reason: "overflow",
    message: `Top-up of ${amount} would overflow the balance of ${did} (${balance}).`
  })

const describe = (value: unknown): string => {
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean")
    return String(value)
  return value === null ? "null" : typeof value
}

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
