/**
 * A turn's credits (docs/failure-modes.md): the reservation the credit stage made before the turn
 * (`CREDIT_RESERVE_ESTIMATE`), the tally of what the turn's model calls cost, and the settle at
 * its end. The credit stage (`Server.ts`, `guarded`) reserves; the message route hands the hold
 * to the turn in the turn's shared state (`TURN_CREDITS_KEY`), where the silent credits plugin
 * adds each model call's cost to the tally instead of deducting it; the turn settles the tally
 * against the reservation whatever its outcome, and releases the rest. A request that fails
 * before its turn starts releases the whole hold. A process that dies mid-turn settles nothing:
 * the hold expires after its ttl (the ledger's `Clock`), and the calls of that turn go unpaid.
 */
import { type CreditLedger, describe, type RuntimeLogger } from "@plugboard/core"
import { Deferred, Effect, FiberId } from "effect"

/** Key of the turn's `TurnCredits` in the shared state its plugins see. */
export const TURN_CREDITS_KEY = "plugboard.turnCredits"

/** One turn's hold on the user's credits. */
export interface TurnCredits {
  /** The ledger the hold is on. */
  readonly ledger: CreditLedger.CreditLedgerService
  readonly reservation: CreditLedger.Reservation
  /** Adds a model call's cost to the turn's tally; false once the turn has settled (charge it directly). */
  readonly charge: (amount: number) => boolean
  /** Whether a turn was started with the hold (then that turn settles it). */
  readonly attached: () => boolean
  /** Marks the hold as the started turn's. */
  readonly attach: () => void
  /** Charges the tally against the reservation and releases the rest; once, never fails. */
  readonly settle: (reason?: string) => Effect.Effect<void>
}

/** Whether a value (the shared state's entry) is a `TurnCredits`. */
export const isTurnCredits = (value: unknown): value is TurnCredits =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as { charge?: unknown }).charge === "function" &&
  typeof (value as { settle?: unknown }).settle === "function"

/** Wraps a reservation made for `did` as the turn's credits. */
export const make = (
  ledger: CreditLedger.CreditLedgerService,
  reservation: CreditLedger.Reservation,
  logger: RuntimeLogger
): TurnCredits => {
  let tally = 0
  let attached = false
  const did = reservation.did
  let settling: Effect.Effect<void> | undefined
  const settled = Deferred.unsafeMake<void>(FiberId.none)
  const settleNow = (reason: string): Effect.Effect<void> =>
    Effect.gen(function* () {
      const outcome = yield* Effect.either(ledger.settle(did, reservation.id, tally, reason))
      if (outcome._tag === "Right") {
        if (outcome.right.shortfall > 0)
          logger.warn("credits: the turn cost more than the balance held", {
            did,
            shortfall: outcome.right.shortfall
          })
        return
      }
      if (outcome.left.reason === "unknown-reservation" && tally > 0) {
        // The turn outlived its hold (expired): what it used is still owed, charged as usage.
        const charged = yield* Effect.either(ledger.deduct(did, tally, reason))
        if (charged._tag === "Right") return
        logger.error("credits: the turn's cost could not be charged", { did, error: charged.left.message })
        return
      }
      if (outcome.left.reason !== "unknown-reservation")
        logger.error("credits: the turn could not be settled", { did, error: outcome.left.message })
    })
  return {
    ledger,
    reservation,
    charge: (amount) => {
      if (settling !== undefined) return false
      tally += amount
      return true
    },
    attached: () => attached,
    attach: () => {
      attached = true
    },
    settle: (reason = "turn") =>
      Effect.suspend(() => {
        // Once: the first settle runs, a later one waits for it.
        if (settling !== undefined) return Deferred.await(settled)
        settling = settleNow(reason.slice(0, 500)).pipe(
          Effect.catchAllDefect((error) =>
            Effect.sync(() =>
              logger.error("credits: settling the turn failed", { did, error: describe(error) })
            )
          ),
          Effect.ensuring(Deferred.succeed(settled, undefined))
        )
        return settling
      })
  }
}

/**
 * The turn's dependencies with its credits in the shared state the plugins see, the hold marked
 * as this turn's; unchanged without credits.
 */
export const sharedWith = (
  shared: Readonly<Record<string, unknown>>,
  credits: TurnCredits | undefined
): Readonly<Record<string, unknown>> => {
  if (credits === undefined) return shared
  credits.attach()
  return { ...shared, [TURN_CREDITS_KEY]: credits }
}
