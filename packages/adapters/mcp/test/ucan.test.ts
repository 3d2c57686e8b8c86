import { encodeToken, generateSigner, type Signer } from "@plugboard/ucan"
import { type API, invoke } from "@ucanto/core"
import { beforeAll, describe, expect, it } from "vitest"
import * as Config from "../src/Config.js"
import * as Ucan from "../src/Ucan.js"

let oracle: Signer
let stranger: Signer
const alice = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

beforeAll(async () => {
  oracle = await generateSigner()
  stranger = await generateSigner()
})

const servers = () =>
  Config.parse({
    mcpServers: {
      people: { url: "http://127.0.0.1:1/mcp", forwardUcan: true },
      crm: {
        url: "http://127.0.0.1:2/mcp",
        forwardUcan: { audience: "did:web:crm.example", header: "X-Ucan" }
      },
      files: { command: "node" }
    }
  }).servers

const refusal = async (promise: Promise<unknown>): Promise<{ reason: string; message: string }> => {
  try {
    await promise
  } catch (e) {
    return e as { reason: string; message: string }
  }
  throw new Error("expected a refusal")
}

describe("mintInvocations + readInvocationUser", () => {
  it("mints one invocation per forwardUcan server, and the server reads the user back", async () => {
    const tokens = await Ucan.mintInvocations(servers(), { signer: oracle, userDid: alice })
    expect(Object.keys(tokens).sort()).toEqual(["crm", "people"])
    expect(await Ucan.readInvocationUser(tokens.people!, { oracleDid: oracle.did(), server: "people" })).toBe(
      alice
    )
    expect(
      await Ucan.readInvocationUser(tokens.crm!, {
        oracleDid: oracle.did(),
        server: "crm",
        audience: "did:web:crm.example"
      })
    ).toBe(alice)
  })

  it("addresses the token to the oracle by default and expires it within 15 minutes", async () => {
    const now = Date.now()
    const token = await Ucan.mintMcpInvocation({ signer: oracle, server: "people", userDid: alice, now })
    const { decodeToken } = await import("@plugboard/ucan")
    const decoded = await decodeToken(token)
    expect(decoded.audience.did()).toBe(oracle.did())
    expect(decoded.issuer.did()).toBe(oracle.did())
    expect(decoded.capabilities).toEqual([{ can: "mcp/call", with: "mcp:people", nb: { user: alice } }])
    expect(decoded.expiration - Math.floor(now / 1000)).toBe(Ucan.DEFAULT_TTL_SECONDS)
    await expect(
      Ucan.mintMcpInvocation({ signer: oracle, server: "people", userDid: alice, ttlSeconds: 901 })
    ).rejects.toThrow(/at most 900/)
  })

  it("refuses a token for another server, another audience, or not signed by the oracle", async () => {
    const token = await Ucan.mintMcpInvocation({ signer: oracle, server: "people", userDid: alice })
    expect(
      (await refusal(Ucan.readInvocationUser(token, { oracleDid: oracle.did(), server: "crm" }))).reason
    ).toBe("wrong-capability")
    expect(
      (await refusal(Ucan.readInvocationUser(token, { oracleDid: oracle.did(), audience: "did:web:other" })))
        .reason
    ).toBe("wrong-audience")
    const forged = await Ucan.mintMcpInvocation({ signer: stranger, server: "people", userDid: alice })
    expect((await refusal(Ucan.readInvocationUser(forged, { oracleDid: oracle.did() }))).reason).toBe(
      "bad-signature"
    )
  })

  it("refuses a tampered token", async () => {
    const token = await Ucan.mintMcpInvocation({ signer: oracle, server: "people", userDid: alice })
    // Swap the user inside the signed payload: the CAR still decodes, the signature no longer verifies.
    const bytes = Buffer.from(token, "base64")
    const at = bytes.indexOf(Buffer.from(alice))
    expect(at).toBeGreaterThan(0)
    bytes[at + alice.length - 1] = "L".charCodeAt(0)
    const tampered = bytes.toString("base64")
    const refused = await refusal(Ucan.readInvocationUser(tampered, { oracleDid: oracle.did() }))
    expect(["bad-signature", "malformed"]).toContain(refused.reason)
  })

  it("refuses an expired token, and one that carries no user", async () => {
    const past = Date.now() - 20 * 60_000
    const expired = await Ucan.mintMcpInvocation({
      signer: oracle,
      server: "people",
      userDid: alice,
      now: past
    })
    expect((await refusal(Ucan.readInvocationUser(expired, { oracleDid: oracle.did() }))).reason).toBe(
      "expired"
    )
    const anonymous = await encodeToken(
      await invoke({
        issuer: oracle,
        audience: oracle,
        capability: { can: "mcp/call", with: "mcp:people" as API.Resource },
        expiration: Math.floor(Date.now() / 1000) + 60
      }).buildIPLDView()
    )
    expect((await refusal(Ucan.readInvocationUser(anonymous, { oracleDid: oracle.did() }))).reason).toBe(
      "malformed"
    )
    const forever = await encodeToken(
      await invoke({
        issuer: oracle,
        audience: oracle,
        capability: { can: "mcp/call", with: "mcp:people" as API.Resource, nb: { user: alice } },
        expiration: Math.floor(Date.now() / 1000) + 3600
      }).buildIPLDView()
    )
    expect((await refusal(Ucan.readInvocationUser(forever, { oracleDid: oracle.did() }))).reason).toBe(
      "expiry-too-far"
    )
  })
})
