import { it } from "@effect/vitest"
import { Auth, Clock } from "@plugboard/core"
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
