/**
 * The UCAN verifier as core's `Auth` port. Time comes from core's `Clock` port, so a test that
 * moves the clock sees cached tokens expire, and the live layer reads Effect's clock.
 */
import { Auth, Clock } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { isAuthError, refuse } from "./Refusal.js"
import { makeUcanVerifier, type UcanVerifier, type UcanVerifierOptions } from "./UcanVerifier.js"

/** Adapts a built verifier to the Auth port, reading time from `clock`. */
export const fromVerifier = (verifier: UcanVerifier, clock: Clock.ClockService): Auth.AuthService => ({
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
    ).pipe(Effect.map(({ did, expiresAt, capabilities }) => ({ did, expiresAt, capabilities })))
})

/** Builds the Auth service; the verifier's own `clock` option is ignored in favour of the Clock port. */
export const make = (options: UcanVerifierOptions): Effect.Effect<Auth.AuthService, never, Clock.Clock> =>
  Effect.map(Clock.Clock, (clock) => fromVerifier(makeUcanVerifier(options), clock))

/**
 * `Auth` verifying UCANs for the oracle of `options` (its DID or signer). Construction throws a
 * `TypeError` (a defect) for a configuration that could never accept anything.
 */
export const layer = (options: UcanVerifierOptions): Layer.Layer<Auth.Auth, never, Clock.Clock> =>
  Layer.effect(Auth.Auth, make(options))
