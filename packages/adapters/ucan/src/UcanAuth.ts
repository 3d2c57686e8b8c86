/**
 * The UCAN verifier as core's `Auth` port. Time comes from core's `Clock` port, so a test that
 * moves the clock sees cached tokens expire, and the live layer reads Effect's clock.
 *
 * Replays (docs/spec/wire.md#replay): QiForge's client caches one invocation and sends it on every
 * request until 30 s before it expires, so by default (`replay: "reuse"`) a token is accepted as
 * often as it is sent while it is valid, like any bearer token. With `replay: "once"` every
 * invocation authenticates one request: the `ReplayGuard` port remembers it until it expires (on
 * Redis, for every host), a second use is refused `replayed`, and a bare delegation (which is
 * reused by nature) does not authenticate at all.
 */
import { Auth, Clock, ReplayGuard } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { isAuthError, refuse } from "./Refusal.js"
import { makeUcanVerifier, type UcanVerifier, type UcanVerifierOptions } from "./UcanVerifier.js"

/** How often one token may authenticate: while valid (`reuse`), or once (`once`). */
export type ReplayPolicy = "reuse" | "once"

/** Adapts a built verifier to the Auth port, reading time from `clock`; with `guard`, every token is single-use. */
export const fromVerifier = (
  verifier: UcanVerifier,
  clock: Clock.ClockService,
  guard?: ReplayGuard.ReplayGuardService
): Auth.AuthService => ({
  verify: (credentials) =>
    Effect.flatMap(clock.now(), (now) =>
      Effect.tryPromise({
        try: () => verifier.verify(credentials, now),
        // The verifier only rejects with AuthError; the fallback keeps the port's error channel honest.
        catch: (cause) =>
          isAuthError(cause)
            ? cause
            : refuse("malformed", `The UCAN token could not be checked: ${String(cause)}`)
      })
    ).pipe(
      Effect.tap((verified) => (guard === undefined ? Effect.void : singleUse(guard, verified))),
      Effect.map(({ did, expiresAt, capabilities }) => ({ did, expiresAt, capabilities }))
    )
})

/** Refuses a token that was used before, or that cannot be single-use (a bare delegation). */
const singleUse = (
  guard: ReplayGuard.ReplayGuardService,
  verified: {
    readonly via: "invocation" | "delegation"
    readonly tokenKey: string
    readonly expiresAt: number
  }
): Effect.Effect<void, Auth.AuthError> => {
  if (verified.via === "delegation") {
    return Effect.fail(
      refuse(
        "unsupported",
        "This oracle takes each token once (UCAN_REPLAY=once): send an invocation (Authorization: Bearer, X-Auth-Type: ucan) minted for this request; a bare delegation does not authenticate."
      )
    )
  }
  return guard.firstUse(verified.tokenKey, verified.expiresAt).pipe(
    Effect.mapError(
      () =>
        new Auth.AuthError({
          reason: "unavailable",
          message: "The token could not be checked against earlier uses right now. Try again shortly."
        })
    ),
    Effect.flatMap((first) =>
      first
        ? Effect.void
        : Effect.fail(
            refuse(
              "replayed",
              "This invocation was already used: this oracle takes each token once (UCAN_REPLAY=once); mint a new one for every request."
            )
          )
    )
  )
}

/** Builds the Auth service; the verifier's own `clock` option is ignored in favour of the Clock port. */
export const make = (options: UcanVerifierOptions): Effect.Effect<Auth.AuthService, never, Clock.Clock> =>
  Effect.map(Clock.Clock, (clock) => fromVerifier(makeUcanVerifier(options), clock))

/** Builds the Auth service whose every invocation authenticates one request (`replay: "once"`). */
export const makeSingleUse = (
  options: UcanVerifierOptions
): Effect.Effect<Auth.AuthService, never, Clock.Clock | ReplayGuard.ReplayGuard> =>
  Effect.map(Effect.all([Clock.Clock, ReplayGuard.ReplayGuard]), ([clock, guard]) =>
    fromVerifier(makeUcanVerifier(options), clock, guard)
  )

/**
 * `Auth` verifying UCANs for the oracle of `options` (its DID or signer). Construction throws a
 * `TypeError` (a defect) for a configuration that could never accept anything.
 */
export const layer = (options: UcanVerifierOptions): Layer.Layer<Auth.Auth, never, Clock.Clock> =>
  Layer.effect(Auth.Auth, make(options))

/** `Auth` whose every invocation authenticates one request; replays are remembered by the `ReplayGuard`. */
export const layerSingleUse = (
  options: UcanVerifierOptions
): Layer.Layer<Auth.Auth, never, Clock.Clock | ReplayGuard.ReplayGuard> =>
  Layer.effect(Auth.Auth, makeSingleUse(options))
