/**
 * Core's `AuthConformance` suite against the UCAN adapter (the `Auth` port as the server runs
 * it), with the refusals only UCAN can forge: another audience, expired, not yet valid, no
 * expiry, expiry too far ahead, a flipped signature bit, the wrong capability, an unknown
 * X-Auth-Type, and a delegation when bare delegations are turned off.
 */

import { Clock } from "@plugboard/core"
import { AuthConformance } from "@plugboard/testing"
import {
  encodeToken,
  generateSigner,
  mintDelegation,
  mintInvocation,
  type Signer,
  UcanAuth
} from "@plugboard/ucan"
import { Effect } from "effect"
import { bearer, craftInvocation, flipSignatureBit, nowSeconds } from "./helpers.js"

/** `via`: which header the issued (valid) credentials use. */
const harness = (
  options: { readonly acceptBareDelegation?: boolean; readonly via?: "invocation" | "delegation" } = {}
) =>
  Effect.gen(function* () {
    const oracle: Signer = yield* Effect.promise(() => generateSigner())
    const auth = yield* UcanAuth.make({
      oracleSigner: oracle,
      ...(options.acceptBareDelegation === undefined
        ? {}
        : { acceptBareDelegation: options.acceptBareDelegation })
    }).pipe(Effect.provide(Clock.layer))
    const issue = () =>
      Effect.promise(async () => {
        const user = await generateSigner()
        const audience = oracle.did()
        return {
          did: user.did(),
          credentials:
            options.via === "delegation"
              ? { ucanDelegation: await encodeToken(await mintDelegation({ issuer: user, audience })) }
              : bearer(await mintInvocation({ issuer: user, audience, ttlSeconds: 300 }))
        }
      })
    const refused = () =>
      Effect.promise(async (): Promise<ReadonlyArray<AuthConformance.RefusedCase>> => {
        const user = await generateSigner()
        const audience = oracle.did()
        const now = nowSeconds()
        const valid = await mintInvocation({ issuer: user, audience })
        const cases: Array<AuthConformance.RefusedCase> = [
          {
            name: "another audience",
            credentials: bearer(
              await mintInvocation({ issuer: user, audience: (await generateSigner()).did() })
            ),
            reason: "wrong-audience"
          },
          {
            name: "expired",
            credentials: bearer(await craftInvocation({ issuer: user, audience, expiration: now - 60 })),
            reason: "expired"
          },
          {
            name: "not yet valid",
            credentials: bearer(
              await craftInvocation({ issuer: user, audience, expiration: now + 300, notBefore: now + 120 })
            ),
            reason: "not-yet-valid"
          },
          {
            name: "no expiry",
            credentials: bearer(await craftInvocation({ issuer: user, audience, expiration: Infinity })),
            reason: "no-expiry"
          },
          {
            name: "expiry beyond 15 minutes",
            credentials: bearer(await craftInvocation({ issuer: user, audience, expiration: now + 16 * 60 })),
            reason: "expiry-too-far"
          },
          {
            name: "bad signature",
            credentials: bearer(await flipSignatureBit(valid)),
            reason: "bad-signature"
          },
          {
            name: "wrong resource",
            credentials: bearer(await craftInvocation({ issuer: user, audience, with: "ixo:elsewhere" })),
            reason: "wrong-capability"
          },
          {
            name: "wrong ability",
            credentials: bearer(await craftInvocation({ issuer: user, audience, can: "store/add" })),
            reason: "wrong-capability"
          },
          {
            name: "a valid token without X-Auth-Type",
            credentials: { authorization: `Bearer ${valid}` },
            reason: "malformed"
          },
          {
            name: "an unknown X-Auth-Type",
            credentials: { authorization: `Bearer ${valid}`, authType: "jwt" },
            reason: "unsupported"
          }
        ]
        if (options.acceptBareDelegation === false) {
          cases.push({
            name: "a bare delegation where only invocations authenticate",
            credentials: {
              ucanDelegation: await encodeToken(await mintDelegation({ issuer: user, audience }))
            },
            reason: "missing"
          })
        }
        return cases
      })
    return { auth, issue, refused }
  })

AuthConformance.run("ucan (invocation)", () => harness(), { numRuns: 60 })

AuthConformance.run("ucan (x-ucan-delegation)", () => harness({ via: "delegation" }), { numRuns: 30 })

AuthConformance.run("ucan (bare delegations refused)", () => harness({ acceptBareDelegation: false }), {
  numRuns: 30
})
