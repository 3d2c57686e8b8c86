/**
 * The CreditLedger port itself (`CreditLedger.ts` is its public face and says what it is for).
 */
import { Context, Effect, Schema } from "effect"
import { isDid } from "../../Auth.js"

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
