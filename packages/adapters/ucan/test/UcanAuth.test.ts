import { it } from "@effect/vitest"
import { Auth, Clock, ReplayGuard } from "@plugboard/core"
import { generateSigner, mintInvocation, type Signer, UcanAuth } from "@plugboard/ucan"
import { Effect, Either, Layer } from "effect"
import { beforeAll, describe, expect } from "vitest"
import { bearer } from "./helpers.js"

let oracle: Signer
let user: Signer
beforeAll(async () => {
  oracle = await generateSigner()
  user = await generateSigner()
})

const start = Date.now()
const TestLayers = () =>
  UcanAuth.layer({ oracleSigner: oracle }).pipe(Layer.provideMerge(Clock.layerTest(start)))

describe("UcanAuth.layer (core Auth port)", () => {
  it.effect("verifies a bearer invocation into the issuer's DID and its expiry", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() =>
        mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 120, now: start })
      )
      const auth = yield* Auth.Auth
      const verified = yield* auth.verify(bearer(token))
      expect(verified).toEqual({
        did: user.did(),
        expiresAt: (Math.floor(start / 1000) + 120) * 1000,
        capabilities: []
      })
    }).pipe(Effect.provide(TestLayers()))
  )

  it.effect("fails with core's AuthError, with the reason", () =>
    Effect.gen(function* () {
      const auth = yield* Auth.Auth
      const missing = yield* Effect.either(auth.verify({}))
      expect(Either.isLeft(missing) && missing.left).toMatchObject({ _tag: "AuthError", reason: "missing" })
      const garbage = yield* Effect.flip(auth.verify(bearer("%%%")))
      expect(garbage).toBeInstanceOf(Auth.AuthError)
      expect(garbage.reason).toBe("malformed")
    }).pipe(Effect.provide(TestLayers()))
  )

  it.effect("reads time from the Clock port: a cached token expires when the clock passes its expiry", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() =>
        mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 60, now: start })
      )
      const auth = yield* Auth.Auth
      const control = yield* Clock.TestControl
      yield* auth.verify(bearer(token))
      yield* control.advance(30_000)
      expect((yield* auth.verify(bearer(token))).did).toBe(user.did())
      yield* control.advance(31_000)
      const refused = yield* Effect.flip(auth.verify(bearer(token)))
      expect(refused.reason).toBe("expired")
    }).pipe(Effect.provide(TestLayers()))
  )

  it("refuses a configuration without an oracle identity at layer construction", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.provide(Auth.Auth, UcanAuth.layer({}).pipe(Layer.provide(Clock.layer)))
    )
    expect(exit._tag).toBe("Failure")
  })
})

describe("UcanAuth.layerSingleUse (UCAN_REPLAY=once, issue 36 item 10)", () => {
  const SingleUse = (guard: Layer.Layer<ReplayGuard.ReplayGuard, never, Clock.Clock>) =>
    UcanAuth.layerSingleUse({ oracleSigner: oracle }).pipe(
      Layer.provide(guard),
      Layer.provideMerge(Clock.layerTest(start))
    )

  it.effect(
    "an invocation authenticates one request: its replay is refused `replayed`, a fresh one is accepted",
    () =>
      Effect.gen(function* () {
        const mint = () =>
          Effect.promise(() =>
            mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 120, now: start })
          )
        const auth = yield* Auth.Auth
        const token = yield* mint()
        expect((yield* auth.verify(bearer(token))).did).toBe(user.did())
        const replay = yield* Effect.flip(auth.verify(bearer(token)))
        expect(replay).toMatchObject({ _tag: "AuthError", reason: "replayed" })
        expect(replay.message).toMatch(/already used.*UCAN_REPLAY=once/)
        expect((yield* auth.verify(bearer(yield* mint()))).did).toBe(user.did())
      }).pipe(Effect.provide(SingleUse(ReplayGuard.layerMemory)))
  )

  it.effect("a bare delegation does not authenticate (it is sent again and again by nature)", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() =>
        mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 120, now: start })
      )
      const auth = yield* Auth.Auth
      const refused = yield* Effect.flip(auth.verify({ ucanDelegation: token }))
      expect(refused.reason).toBe("unsupported")
      expect(refused.message).toMatch(/UCAN_REPLAY=once/)
    }).pipe(Effect.provide(SingleUse(ReplayGuard.layerMemory)))
  )

  it.effect(
    "a guard that cannot answer refuses the request (`unavailable`, a 503), never lets it through",
    () =>
      Effect.gen(function* () {
        const token = yield* Effect.promise(() =>
          mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 120, now: start })
        )
        const auth = yield* Auth.Auth
        const refused = yield* Effect.flip(auth.verify(bearer(token)))
        expect(refused.reason).toBe("unavailable")
        expect(refused.message).not.toMatch(/engine down/)
      }).pipe(
        Effect.provide(
          SingleUse(
            Layer.succeed(ReplayGuard.ReplayGuard, {
              firstUse: () =>
                Effect.fail(
                  new ReplayGuard.ReplayGuardError({
                    reason: "unavailable",
                    message: "engine down at 10.0.0.5"
                  })
                )
            })
          )
        )
      )
  )

  it.effect("a refused token is not remembered: a bad signature does not use up anything", () =>
    Effect.gen(function* () {
      const auth = yield* Auth.Auth
      const garbage = yield* Effect.flip(auth.verify(bearer("%%%")))
      expect(garbage.reason).toBe("malformed")
      const again = yield* Effect.flip(auth.verify(bearer("%%%")))
      expect(again.reason).toBe("malformed")
    }).pipe(Effect.provide(SingleUse(ReplayGuard.layerMemory)))
  )
})
