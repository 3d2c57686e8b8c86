/** Properties: whatever a client sends, the verifier answers with an AuthError or the signer's DID. */

import { Auth } from "@plugboard/core"
import { generateSigner, isAuthError, makeUcanVerifier, mintInvocation, type Signer } from "@plugboard/ucan"
import { ed25519 } from "@ucanto/principal"
import fc from "fast-check"
import { beforeAll, describe, expect, it } from "vitest"
import * as NativeEd25519 from "../src/NativeEd25519.js"
import { bearer } from "./helpers.js"

let oracle: Signer
let user: Signer
let token: string
const reasons: ReadonlyArray<string> = Auth.AuthErrorReason.literals

beforeAll(async () => {
  oracle = await generateSigner()
  user = await generateSigner()
  token = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 600 })
})

/** Resolves to "accepted:<did>" or "refused:<reason>"; anything else thrown fails the property. */
const outcome = async (promise: Promise<{ did: string }>): Promise<string> => {
  try {
    return `accepted:${(await promise).did}`
  } catch (error) {
    if (!isAuthError(error)) throw new Error(`not an AuthError: ${String(error)}`)
    expect(reasons).toContain(error.reason)
    expect(typeof error.message).toBe("string")
    return `refused:${error.reason}`
  }
}

const header = fc.option(
  fc.oneof(
    fc.string(),
    fc.string({ unit: "binary" }),
    fc.base64String(),
    fc.constantFrom("ucan", "UCAN", "Bearer", "Bearer ", "bearer x"),
    fc.base64String().map((s) => `Bearer ${s}`)
  ),
  { nil: undefined }
)

describe("fuzz", () => {
  it("arbitrary header strings are refused with an AuthError, never anything else", async () => {
    const v = makeUcanVerifier({ oracleDid: oracle.did() })
    await fc.assert(
      fc.asyncProperty(header, header, header, async (authorization, authType, ucanDelegation) => {
        const result = await outcome(v.verify({ authorization, authType, ucanDelegation }))
        expect(result.startsWith("refused:")).toBe(true)
      }),
      { numRuns: 400 }
    )
  })

  it("flipping any bit of a valid token never makes it someone else's", async () => {
    const v = makeUcanVerifier({ oracleDid: oracle.did(), cacheSize: 0 })
    const bytes = Buffer.from(token, "base64")
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length * 8 - 1 }), async (bit) => {
        const tampered = Buffer.from(bytes)
        tampered[bit >> 3] = (tampered[bit >> 3] ?? 0) ^ (1 << (bit & 7))
        const result = await outcome(v.verify(bearer(tampered.toString("base64"))))
        // An encoding-only change that decodes to the same signed UCAN may pass; a new identity never does.
        expect([`accepted:${user.did()}`, ...reasons.map((r) => `refused:${r}`)]).toContain(result)
      }),
      { numRuns: 300 }
    )
  })

  it("random byte strings and prefixes of a valid token are refused as malformed or worse, never accepted", async () => {
    const v = makeUcanVerifier({ oracleDid: oracle.did() })
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b).toString("base64")),
          fc.nat({ max: 1_000 }).map((n) => token.slice(0, n % token.length))
        ),
        async (candidate) => {
          const result = await outcome(v.verify({ ucanDelegation: candidate }))
          expect(result.startsWith("refused:")).toBe(true)
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe("NativeEd25519", () => {
  it("agrees with ucanto's own Ed25519 verifier on genuine and tampered signatures", async () => {
    const signer = await ed25519.Signer.generate()
    const reference = ed25519.Verifier.parse(signer.did())
    const native = NativeEd25519.parse(signer.did())
    expect(native.did()).toBe(signer.did())
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 256 }),
        fc.nat(),
        fc.boolean(),
        async (payload, at, tamper) => {
          const signature = await signer.sign(payload)
          if (tamper) {
            const raw = signature.raw
            raw[at % raw.length] = (raw[at % raw.length] ?? 0) ^ 0x40
          }
          // noble throws on a signature whose R is not a curve point; that is a refusal too.
          const expected = await Promise.resolve()
            .then(() => reference.verify(payload, signature))
            .catch(() => false)
          expect(await native.verify(payload, signature)).toBe(expected)
          expect(expected).toBe(!tamper)
        }
      ),
      { numRuns: 100 }
    )
  })

  it("refuses to parse what is not an Ed25519 did:key", () => {
    for (const did of [
      "did:web:example.com",
      "did:key:zQ3shokFTS3brHcDQrn82RDDfCZESWL1ZdCEJwekUDPQiYBme",
      "did:key:"
    ]) {
      expect(() => NativeEd25519.parse(did)).toThrow()
    }
  })
})
