import { createHash } from "node:crypto"
import type { Auth } from "@plugboard/core"
import {
  encodeToken,
  generateSigner,
  isAuthError,
  makeUcanVerifier,
  mintDelegation,
  mintInvocation,
  type Signer,
  type UcanVerifier
} from "@plugboard/ucan"
import { beforeAll, describe, expect, it } from "vitest"
import { bearer, craftInvocation, flipSignatureBit, nowSeconds, replaceBytes } from "./helpers.js"

let oracle: Signer
let user: Signer
let stranger: Signer

beforeAll(async () => {
  oracle = await generateSigner()
  user = await generateSigner()
  stranger = await generateSigner()
})

const verifier = (options: Partial<Parameters<typeof makeUcanVerifier>[0]> = {}): UcanVerifier =>
  makeUcanVerifier({ oracleDid: oracle.did(), ...options })

/** The reason `promise` was rejected with; fails the test if it resolved or threw something else. */
const reasonOf = async (promise: Promise<unknown>): Promise<Auth.AuthErrorReason> => {
  try {
    await promise
  } catch (error) {
    expect(isAuthError(error), `expected an AuthError, got ${String(error)}`).toBe(true)
    if (isAuthError(error)) {
      expect(error.message.length).toBeGreaterThan(0)
      return error.reason
    }
  }
  throw new Error("expected the credentials to be refused, but they were accepted")
}

describe("accepts", () => {
  it("a valid bearer invocation, as its issuer's DID, until its expiry", async () => {
    const expiration = nowSeconds() + 300
    const token = await craftInvocation({ issuer: user, audience: oracle.did(), expiration })
    const verified = await verifier().verify(bearer(token))
    expect(verified).toEqual({
      did: user.did(),
      expiresAt: expiration * 1000,
      via: "invocation",
      capabilities: [],
      tokenKey: createHash("sha256").update(token).digest("base64")
    })
  })

  it("a token minted by mintInvocation, with the auth type in any case and extra spaces", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 60 })
    const verified = await verifier().verify({ authorization: `  bearer   ${token} `, authType: " UCAN " })
    expect(verified.did).toBe(user.did())
  })

  it("an expiry exactly maxTtlSeconds ahead (the bound is inclusive)", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 900 })
    expect((await verifier().verify(bearer(token))).did).toBe(user.did())
  })

  it("an x-ucan-delegation alone (the legacy form), as its issuer", async () => {
    const token = encodeToken(await mintDelegation({ issuer: user, audience: oracle.did(), ttlSeconds: 120 }))
    const verified = await verifier().verify({ ucanDelegation: await token })
    expect(verified).toMatchObject({ did: user.did(), via: "delegation" })
  })

  it("the invocation when both headers are sent: the delegation does not decide who calls", async () => {
    const invocation = await mintInvocation({ issuer: user, audience: oracle.did() })
    const othersDelegation = await encodeToken(
      await mintDelegation({ issuer: stranger, audience: oracle.did(), ttlSeconds: 7 * 24 * 3600 })
    )
    const verified = await verifier().verify({ ...bearer(invocation), ucanDelegation: othersDelegation })
    expect(verified).toMatchObject({ did: user.did(), via: "invocation" })
  })

  it("a configured resource, and an oracle identified by its signer", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), resource: "acme:oracle" })
    const v = makeUcanVerifier({ oracleSigner: oracle, resource: "acme:oracle" })
    expect((await v.verify(bearer(token))).did).toBe(user.did())
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("wrong-capability")
  })
})

describe("refuses, with the right reason", () => {
  it("no credentials at all → missing", async () => {
    expect(await reasonOf(verifier().verify({}))).toBe("missing")
    expect(
      await reasonOf(verifier().verify({ authorization: "  ", authType: "ucan", ucanDelegation: "" }))
    ).toBe("missing")
  })

  it("a bare delegation when only invocations are accepted → missing", async () => {
    const token = await encodeToken(await mintDelegation({ issuer: user, audience: oracle.did() }))
    expect(await reasonOf(verifier({ acceptBareDelegation: false }).verify({ ucanDelegation: token }))).toBe(
      "missing"
    )
  })

  it("an Authorization header without X-Auth-Type: ucan, or not of the Bearer scheme → malformed", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    expect(await reasonOf(verifier().verify({ authorization: `Bearer ${token}` }))).toBe("malformed")
    expect(await reasonOf(verifier().verify({ authorization: `Basic ${token}`, authType: "ucan" }))).toBe(
      "malformed"
    )
    expect(await reasonOf(verifier().verify({ authorization: "Bearer", authType: "ucan" }))).toBe("malformed")
    expect(await reasonOf(verifier().verify({ authorization: `Bearer ${token} x`, authType: "ucan" }))).toBe(
      "malformed"
    )
  })

  it("another X-Auth-Type, or an issuer that is not an Ed25519 did:key → unsupported", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    expect(await reasonOf(verifier().verify({ authorization: `Bearer ${token}`, authType: "jwt" }))).toBe(
      "unsupported"
    )
    const web = await mintInvocation({
      issuer: user.withDID("did:web:example.com") as unknown as Signer,
      audience: oracle.did()
    })
    expect(await reasonOf(verifier().verify(bearer(web)))).toBe("unsupported")
  })

  it("garbage → malformed", async () => {
    const v = verifier()
    for (const garbage of [
      "not a token!",
      "eyJhbGciOiJFZERTQSJ9.eyJpc3MiOiJ4In0.c2ln", // a JWT-shaped string
      Buffer.from("hello world").toString("base64"),
      Buffer.from(new Uint8Array(300).fill(7)).toString("base64"),
      "A".repeat(70_000)
    ]) {
      expect(await reasonOf(v.verify(bearer(garbage))), garbage.slice(0, 30)).toBe("malformed")
      expect(await reasonOf(v.verify({ ucanDelegation: garbage })), garbage.slice(0, 30)).toBe("malformed")
    }
  })

  it("a truncated token → malformed", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    expect(await reasonOf(verifier().verify(bearer(token.slice(0, Math.floor(token.length / 2)))))).toBe(
      "malformed"
    )
  })

  it("a token for another audience → wrong-audience", async () => {
    const token = await mintInvocation({ issuer: user, audience: stranger.did() })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("wrong-audience")
  })

  it("an expired token → expired", async () => {
    const token = await craftInvocation({
      issuer: user,
      audience: oracle.did(),
      expiration: nowSeconds() - 60
    })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("expired")
  })

  it("a token not valid yet → not-yet-valid", async () => {
    const token = await craftInvocation({
      issuer: user,
      audience: oracle.did(),
      notBefore: nowSeconds() + 120,
      expiration: nowSeconds() + 300
    })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("not-yet-valid")
  })

  it("a token without expiry → no-expiry", async () => {
    const token = await craftInvocation({
      issuer: user,
      audience: oracle.did(),
      expiration: Number.POSITIVE_INFINITY
    })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("no-expiry")
    const delegation = await encodeToken(
      await mintDelegation({ issuer: user, audience: oracle.did(), ttlSeconds: Infinity })
    )
    expect(await reasonOf(verifier().verify({ ucanDelegation: delegation }))).toBe("no-expiry")
  })

  it("an expiry more than 15 minutes ahead → expiry-too-far (and the bound is configurable)", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 901 })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("expiry-too-far")
    const week = await encodeToken(
      await mintDelegation({ issuer: user, audience: oracle.did(), ttlSeconds: 7 * 86400 })
    )
    expect(await reasonOf(verifier().verify({ ucanDelegation: week }))).toBe("expiry-too-far")
    const short = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 120 })
    expect(await reasonOf(verifier({ maxTtlSeconds: 60 }).verify(bearer(short)))).toBe("expiry-too-far")
  })

  it("a token whose signature bytes were tampered with → bad-signature", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    expect(await reasonOf(verifier().verify(bearer(await flipSignatureBit(token))))).toBe("bad-signature")
  })

  it("a token whose claims were edited after signing → bad-signature, not the edited claim's verdict", async () => {
    // Signed for another resource, then the bytes edited to claim the oracle's.
    const signed = await mintInvocation({ issuer: user, audience: oracle.did(), resource: "ixo:oraclX" })
    const forged = replaceBytes(signed, "ixo:oraclX", "ixo:oracle")
    expect(await reasonOf(verifier().verify(bearer(forged)))).toBe("bad-signature")
  })

  it("a token signed by another key than the issuer it claims → bad-signature", async () => {
    const impostor = stranger.withDID(user.did()) as unknown as Signer
    const token = await mintInvocation({ issuer: impostor, audience: oracle.did() })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("bad-signature")
  })

  it("another ability or another resource → wrong-capability", async () => {
    const otherCan = await craftInvocation({ issuer: user, audience: oracle.did(), can: "store/add" })
    expect(await reasonOf(verifier().verify(bearer(otherCan)))).toBe("wrong-capability")
    const otherWith = await craftInvocation({ issuer: user, audience: oracle.did(), with: "ixo:memory" })
    expect(await reasonOf(verifier().verify(bearer(otherWith)))).toBe("wrong-capability")
  })

  it("checks the signature before the claims: a forged token for another audience is still bad-signature", async () => {
    const token = await mintInvocation({ issuer: user, audience: stranger.did() })
    expect(await reasonOf(verifier().verify(bearer(await flipSignatureBit(token))))).toBe("bad-signature")
  })
})

describe("delegation chains", () => {
  it("with rootIssuers, accepts an invoker holding a valid proof from a root, as the invoker", async () => {
    const proof = await mintDelegation({ issuer: stranger, audience: user.did(), ttlSeconds: 3600 })
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), proofs: [proof] })
    const verified = await verifier({ rootIssuers: [stranger.did()] }).verify(bearer(token))
    expect(verified.did).toBe(user.did())
  })

  it("reports the earliest expiry of the chain", async () => {
    const proof = await mintDelegation({ issuer: stranger, audience: user.did(), ttlSeconds: 30 })
    const token = await mintInvocation({
      issuer: user,
      audience: oracle.did(),
      ttlSeconds: 300,
      proofs: [proof]
    })
    const verified = await verifier({ rootIssuers: [stranger.did()] }).verify(bearer(token))
    expect(verified.expiresAt).toBe(proof.expiration * 1000)
  })

  it("with rootIssuers, refuses an invoker without a proof, or with one from a non-root → wrong-capability", async () => {
    const v = verifier({ rootIssuers: [oracle.did()] })
    const bare = await mintInvocation({ issuer: user, audience: oracle.did() })
    expect(await reasonOf(v.verify(bearer(bare)))).toBe("wrong-capability")
    const proof = await mintDelegation({ issuer: stranger, audience: user.did(), ttlSeconds: 3600 })
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), proofs: [proof] })
    expect(await reasonOf(v.verify(bearer(token)))).toBe("wrong-capability")
  })

  it("refuses an expired proof → expired", async () => {
    const proof = await mintDelegation({ issuer: stranger, audience: user.did(), ttlSeconds: -10 })
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), proofs: [proof] })
    expect(await reasonOf(verifier().verify(bearer(token)))).toBe("expired")
  })

  it("refuses a proof with a forged signature → bad-signature", async () => {
    const proof = await mintDelegation({
      issuer: oracle.withDID(stranger.did()) as unknown as Signer,
      audience: user.did(),
      ttlSeconds: 3600
    })
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), proofs: [proof] })
    expect(await reasonOf(verifier({ rootIssuers: [stranger.did()] }).verify(bearer(token)))).toBe(
      "bad-signature"
    )
  })

  it("refuses a proof addressed to someone else than the invoker → wrong-capability", async () => {
    const proof = await mintDelegation({ issuer: stranger, audience: oracle.did(), ttlSeconds: 3600 })
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), proofs: [proof] })
    expect(await reasonOf(verifier({ rootIssuers: [stranger.did()] }).verify(bearer(token)))).toBe(
      "wrong-capability"
    )
  })
})

describe("cache", () => {
  it("does not verify the same token twice", async () => {
    const v = verifier()
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    const first = await v.verify(bearer(token))
    const second = await v.verify({ ucanDelegation: token })
    expect(second).toEqual({ ...first, via: "delegation" })
    expect(v.stats()).toEqual({ verifications: 1, cacheHits: 1, cached: 1 })
  })

  it("shares one verification between concurrent requests with the same token", async () => {
    const v = verifier()
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    const results = await Promise.all(Array.from({ length: 8 }, () => v.verify(bearer(token))))
    expect(new Set(results.map((r) => r.did))).toEqual(new Set([user.did()]))
    expect(v.stats().verifications).toBe(1)
  })

  it("refuses a cached token once it has expired (injected clock)", async () => {
    let now = Date.now()
    const v = verifier({ clock: () => now })
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 60, now })
    const { expiresAt } = await v.verify(bearer(token))
    now = expiresAt - 1
    expect((await v.verify(bearer(token))).did).toBe(user.did())
    now = expiresAt
    expect(await reasonOf(v.verify(bearer(token)))).toBe("expired")
    expect(v.stats()).toMatchObject({ verifications: 1, cacheHits: 2, cached: 0 })
    // Gone from the cache, it is verified afresh — and still refused.
    expect(await reasonOf(v.verify(bearer(token)))).toBe("expired")
    expect(v.stats().verifications).toBe(2)
  })

  it("never caches a refusal", async () => {
    const v = verifier()
    const token = await mintInvocation({ issuer: user, audience: stranger.did() })
    await reasonOf(v.verify(bearer(token)))
    await reasonOf(v.verify(bearer(token)))
    expect(v.stats()).toEqual({ verifications: 2, cacheHits: 0, cached: 0 })
  })

  it("is bounded: the least recently used token is evicted", async () => {
    const v = verifier({ cacheSize: 2 })
    const [a, b, c] = await Promise.all(
      [10, 20, 30].map((ttlSeconds) => mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds }))
    )
    if (a === undefined || b === undefined || c === undefined) throw new Error("unreachable")
    await v.verify(bearer(a))
    await v.verify(bearer(b))
    await v.verify(bearer(a)) // a is now the most recently used
    await v.verify(bearer(c)) // evicts b
    expect(v.stats()).toEqual({ verifications: 3, cacheHits: 1, cached: 2 })
    await v.verify(bearer(a))
    expect(v.stats().verifications).toBe(3)
    await v.verify(bearer(b))
    expect(v.stats().verifications).toBe(4)
  })
})

describe("configuration", () => {
  it("refuses at construction what could never accept anything", async () => {
    expect(() => makeUcanVerifier({})).toThrow(TypeError)
    expect(() => makeUcanVerifier({ oracleDid: "oracle" })).toThrow(TypeError)
    expect(() => makeUcanVerifier({ oracleSigner: oracle, oracleDid: user.did() })).toThrow(/not the DID/)
    expect(() => makeUcanVerifier({ oracleDid: oracle.did(), maxTtlSeconds: 0 })).toThrow(TypeError)
    expect(() => makeUcanVerifier({ oracleDid: oracle.did(), resource: "" })).toThrow(TypeError)
  })
})
