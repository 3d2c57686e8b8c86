import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  decodeToken,
  formatSigner,
  generateSigner,
  loadOrCreateSigner,
  makeUcanVerifier,
  mintInvocation,
  parseSigner
} from "@plugboard/ucan"
import { Delegation } from "@ucanto/core"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { bearer } from "./helpers.js"

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "plugboard-ucan-"))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe("keys as text", () => {
  it("format and parse round-trip to the same DID and a key that still signs", async () => {
    const signer = await generateSigner()
    const text = formatSigner(signer)
    expect(text).toMatch(/^M[A-Za-z0-9+/]+={0,2}$/)
    const parsed = parseSigner(`${text}\n`)
    expect(parsed.did()).toBe(signer.did())
    const oracle = await generateSigner()
    const token = await mintInvocation({ issuer: parsed, audience: oracle.did() })
    expect((await makeUcanVerifier({ oracleSigner: oracle }).verify(bearer(token))).did).toBe(signer.did())
  })

  it("parseSigner names the problem on bad text", () => {
    expect(() => parseSigner("not a key")).toThrow(/Ed25519 private key/)
  })

  it("loadOrCreateSigner creates the key once (owner-only) and returns the same key afterwards", async () => {
    const path = join(dir, "nested", "oracle.key")
    const first = await loadOrCreateSigner(path)
    expect(first.created).toBe(true)
    expect((await stat(path)).mode & 0o777).toBe(0o600)
    const second = await loadOrCreateSigner(path)
    expect(second.created).toBe(false)
    expect(second.signer.did()).toBe(first.signer.did())
  })

  it("concurrent first starts agree on one key", async () => {
    const path = join(dir, "user.key")
    const all = await Promise.all(Array.from({ length: 5 }, () => loadOrCreateSigner(path)))
    expect(new Set(all.map((r) => r.signer.did())).size).toBe(1)
    expect(all.filter((r) => r.created)).toHaveLength(1)
  })

  it("refuses a corrupt key file and leaves it as it was", async () => {
    const path = join(dir, "oracle.key")
    await writeFile(path, "garbage\n")
    await expect(loadOrCreateSigner(path)).rejects.toThrow(/corrupt/)
    expect(await readFile(path, "utf8")).toBe("garbage\n")
  })
})

describe("token format", () => {
  it("is standard base64 of a ucanto CAR archive, as QiForge clients send it", async () => {
    const user = await generateSigner()
    const oracle = await generateSigner()
    const token = await mintInvocation({ issuer: user, audience: oracle.did(), ttlSeconds: 120 })
    expect(token).toMatch(/^[A-Za-z0-9+/]+={0,2}$/)
    const extracted = await Delegation.extract(new Uint8Array(Buffer.from(token, "base64")))
    if (extracted.error) throw extracted.error
    expect(extracted.ok.version).toBe("0.9.1")
    expect(extracted.ok.capabilities).toEqual([{ can: "*", with: "ixo:oracle" }])
    expect(extracted.ok.audience.did()).toBe(oracle.did())
    expect(extracted.ok.issuer.did()).toBe(user.did())
    const decoded = await decodeToken(token)
    expect(decoded.cid.toString()).toBe(extracted.ok.cid.toString())
  })
})
