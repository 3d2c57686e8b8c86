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

/**
 * Whether a user with this balance may start a turn (the credit gate; 402 otherwise): any
 * positive balance. A turn's cost is known only after its model calls, so the last turn may take
 * the balance to zero (`deduct` clamps), and the next request is the one refused.
 */
export const mayStartTurn = (balance: number): boolean => Number.isFinite(balance) && balance > 0

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
  /** Takes up to `amount` credits, never below zero; reports the shortfall. */
  readonly deduct: (
    did: string,
    amount: number,
    reason?: string
  ) => Effect.Effect<DeductResult, CreditLedgerError>
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

  const apply = (
    did: string,
    kind: LedgerEntry["kind"],
    requested: number,
    reason: string | undefined,
    at: number
  ): Effect.Effect<LedgerEntry, CreditLedgerError> =>
    Effect.suspend(() => {
      const account = accounts.get(did) ?? { balance: 0, entries: [] }
      if (kind === "top-up" && account.balance + requested > Number.MAX_SAFE_INTEGER) {
        return Effect.fail(overflowError(did, account.balance, requested))
      }
      const amount = kind === "top-up" ? requested : Math.min(requested, account.balance)
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
      accounts.set(did, account)
      return Effect.succeed(entry)
    })

  const validated = (did: string, amount: number, reason: string | undefined) =>
    Effect.all([checkDid(did), checkAmount(amount), checkReason(reason), clock.now()])

  return {
    balance: (did) => Effect.map(checkDid(did), (d) => accounts.get(d)?.balance ?? 0),
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
      Effect.flatMap(Effect.all([checkDid(did), checkLimit(limit)]), ([d, l]) =>
        Effect.sync(() => (accounts.get(d)?.entries ?? []).slice(-l).reverse())
      )
  }
})

/** The in-memory ledger as a layer (needs a `Clock`). */
export const layerMemory: Layer.Layer<CreditLedger, never, Clock> = Layer.effect(CreditLedger, makeMemory)
