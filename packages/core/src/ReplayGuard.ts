/**
 * The `ReplayGuard` port: remembers single-use credentials until they expire, so that a second use
 * of one is refused (docs/spec/wire.md#replay). The UCAN adapter asks it for every invocation when
 * the oracle runs with `UCAN_REPLAY=once`; shared by every host (on Redis) when the oracle runs on
 * several, since a replay may reach any of them.
 *
 * Semantics every implementation keeps: `firstUse(key, expiresAt)` answers `true` exactly once for
 * a key while the time (the `Clock` port's, or the engine's own) is before `expiresAt`, however
 * many calls race; once that time has passed the key is forgotten, and its next use is a first
 * use again (the credential itself has expired by then, which its verifier refuses).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { Clock } from "./Clock.js"

/** Why the guard could not answer. */
export const ReplayGuardErrorReason = Schema.Literal("invalid-input", "unavailable")
/** Why the guard could not answer. */
export type ReplayGuardErrorReason = typeof ReplayGuardErrorReason.Type

/** The guard could not answer: a request it cannot judge is refused, never let through. */
export class ReplayGuardError extends Schema.TaggedError<ReplayGuardError>()("ReplayGuardError", {
  reason: ReplayGuardErrorReason,
  message: Schema.String
}) {}

/** The operations of the ReplayGuard port. */
export interface ReplayGuardService {
  /**
   * Records `key` as used until `expiresAt` (epoch milliseconds): `true` the first time, `false`
   * for every later use before then.
   */
  readonly firstUse: (key: string, expiresAt: number) => Effect.Effect<boolean, ReplayGuardError>
}

/** The ReplayGuard port. */
export class ReplayGuard extends Context.Tag("@plugboard/core/ReplayGuard")<
  ReplayGuard,
  ReplayGuardService
>() {}

/** Longest key accepted (keys are digests of tokens; anything longer is a caller's bug). */
export const MAX_KEY_LENGTH = 512

/** Checks a call's input, the same for every implementation. */
export const validate = (key: unknown, expiresAt: unknown): Effect.Effect<void, ReplayGuardError> =>
  typeof key === "string" && key.length > 0 && key.length <= MAX_KEY_LENGTH
    ? typeof expiresAt === "number" && Number.isSafeInteger(expiresAt) && expiresAt >= 0
      ? Effect.void
      : Effect.fail(
          new ReplayGuardError({
            reason: "invalid-input",
            message: "expiresAt must be a non-negative whole number of epoch milliseconds"
          })
        )
    : Effect.fail(
        new ReplayGuardError({
          reason: "invalid-input",
          message: `key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`
        })
      )

/** How many first uses between sweeps of expired keys in the memory guard. */
const SWEEP_EVERY = 1024

/**
 * A guard in this process's memory, on the `Clock` port: enough for one host. Memory is one entry
 * per credential until it expires (UCAN invocations live at most 15 minutes); expired entries are
 * swept as new ones arrive.
 */
export const makeMemory: Effect.Effect<ReplayGuardService, never, Clock> = Effect.map(Clock, (clock) => {
  const seen = new Map<string, number>()
  let sinceSweep = 0
  const sweep = (now: number) => {
    for (const [key, until] of seen) if (until <= now) seen.delete(key)
  }
  return {
    firstUse: (key, expiresAt) =>
      Effect.zipRight(
        validate(key, expiresAt),
        Effect.map(clock.now(), (now) => {
          const until = seen.get(key)
          if (until !== undefined && now < until) return false
          if (++sinceSweep >= SWEEP_EVERY) {
            sinceSweep = 0
            sweep(now)
          }
          if (expiresAt > now) seen.set(key, expiresAt)
          return true
        })
      )
  }
})

/** The memory guard as a layer. */
export const layerMemory: Layer.Layer<ReplayGuard, never, Clock> = Layer.effect(ReplayGuard, makeMemory)
