/**
 * The capabilities a verified UCAN grants (docs/plugins.md#requiring-capabilities): only those proven from
 * a grant issuer (the oracle, `rootIssuers`, or `grantIssuers`) count; a claim signed by nobody
 * the oracle trusts grants nothing and does not fail the request.
 */

import { Access } from "@plugboard/core"
import {
  generateSigner,
  makeUcanVerifier,
  mintDelegation,
  mintInvocation,
  type Signer
} from "@plugboard/ucan"
import { beforeAll, describe, expect, it } from "vitest"
import { bearer } from "./helpers.js"

let oracle: Signer
let user: Signer
let admin: Signer

const ADMIN = { can: "admin/read", with: "ixo:oracle" }
const BILLING = { can: "billing/charge", with: "ixo:oracle:billing" }

beforeAll(async () => {
  oracle = await generateSigner()
  user = await generateSigner()
  admin = await generateSigner()
})

describe("granted capabilities", () => {
  it("a token with only the oracle capability grants nothing", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did() })
    const verified = await makeUcanVerifier({ oracleDid: oracle.did() }).verify(bearer(token))
    expect(verified.did).toBe(user.did())
    expect(verified.capabilities).toEqual([])
  })

  it("a capability the user claims without a proof grants nothing, and the request is still accepted", async () => {
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), capabilities: [ADMIN] })
    const verified = await makeUcanVerifier({ oracleDid: oracle.did() }).verify(bearer(token))
    expect(verified.did).toBe(user.did())
    expect(verified.capabilities).toEqual([])
  })

  it("a capability delegated by the oracle is granted", async () => {
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [ADMIN],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const token = await mintInvocation({
      issuer: user,
      audience: oracle.did(),
      capabilities: [ADMIN],
      proofs: [proof]
    })
    const verified = await makeUcanVerifier({ oracleDid: oracle.did() }).verify(bearer(token))
    expect(verified.capabilities).toEqual([ADMIN])
  })

  it("a wildcard delegated by the oracle (`admin/*`) proves the ability claimed under it", async () => {
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [{ can: "admin/*", with: "ixo:oracle" }],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const token = await mintInvocation({
      issuer: user,
      audience: oracle.did(),
      capabilities: [ADMIN, BILLING],
      proofs: [proof]
    })
    const verified = await makeUcanVerifier({ oracleDid: oracle.did() }).verify(bearer(token))
    // billing is on another resource, which the proof does not cover.
    expect(verified.capabilities).toEqual([ADMIN])
  })

  it("a delegation from someone who is not a grant issuer grants nothing; naming them in grantIssuers does", async () => {
    const proof = await mintDelegation({
      issuer: admin,
      audience: user.did(),
      capabilities: [ADMIN],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const token = await mintInvocation({
      issuer: user,
      audience: oracle.did(),
      capabilities: [ADMIN],
      proofs: [proof]
    })
    const refused = await makeUcanVerifier({ oracleDid: oracle.did() }).verify(bearer(token))
    expect(refused.capabilities).toEqual([])
    const trusted = await makeUcanVerifier({
      oracleDid: oracle.did(),
      grantIssuers: [admin.did()]
    }).verify(bearer(token))
    expect(trusted.capabilities).toEqual([ADMIN])
  })

  it("an expired grant is refused with the token (the chain's time bounds hold for grants too)", async () => {
    const now = Date.now()
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [ADMIN],
      withoutOracleCapability: true,
      ttlSeconds: 10,
      now
    })
    const token = await mintInvocation({
      issuer: user,
      audience: oracle.did(),
      capabilities: [ADMIN],
      proofs: [proof],
      now
    })
    const v = makeUcanVerifier({ oracleDid: oracle.did() })
    await expect(v.verify(bearer(token), now + 60_000)).rejects.toMatchObject({ reason: "expired" })
  })

  it("what it grants covers a plugin's requirement by core's rule", async () => {
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [{ can: "admin/*", with: "ixo:oracle" }],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const token = await mintInvocation({
      issuer: user,
      audience: oracle.did(),
      capabilities: [{ can: "admin/*", with: "ixo:oracle" }],
      proofs: [proof]
    })
    const { capabilities } = await makeUcanVerifier({ oracleDid: oracle.did() }).verify(bearer(token))
    expect(Access.missing(capabilities, [ADMIN, { can: "admin/write", with: "ixo:oracle" }])).toEqual([])
    expect(Access.missing(capabilities, [BILLING])).toEqual([BILLING])
  })
})
