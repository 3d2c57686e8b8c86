/**
 * `plugboard token --grant` (docs/plugins.md#requiring-capabilities): the local user's token carries the
 * abilities, proven by a delegation from the local oracle's key, so the oracle that shares the
 * data directory grants them; a malformed ability is a usage error.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeUcanVerifier } from "@plugboard/ucan"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliIO, token, UsageError } from "../src/cli/Commands.js"
import { createOracleApp, type OracleApp, quietLogger } from "../src/index.js"
import { weather } from "./helpers.js"

let dir: string
let app: OracleApp

const io = () => {
  const out: Array<string> = []
  const value: CliIO = {
    out: (t) => void out.push(t),
    err: () => {},
    env: { PLUGBOARD_DATA_DIR: dir },
    cwd: dir
  }
  return { io: value, out: () => out.join("").trim() }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-grant-"))
  app = await createOracleApp({ plugins: [weather], env: { PLUGBOARD_DATA_DIR: dir }, logger: quietLogger })
})
afterAll(async () => {
  await app.close(1_000)
  rmSync(dir, { recursive: true, force: true })
})

describe("plugboard token --grant", () => {
  it("mints a token the local oracle verifies with those capabilities", async () => {
    const t = io()
    expect(await token(["--grant", "admin/read, ops/restart"], t.io)).toBe(0)
    const verified = await makeUcanVerifier({ oracleDid: app.oracleDid }).verify({
      authorization: `Bearer ${t.out()}`,
      authType: "ucan"
    })
    expect(verified.capabilities).toEqual([
      { can: "admin/read", with: "ixo:oracle" },
      { can: "ops/restart", with: "ixo:oracle" }
    ])
    const plain = io()
    expect(await token([], plain.io)).toBe(0)
    const none = await makeUcanVerifier({ oracleDid: app.oracleDid }).verify({
      authorization: `Bearer ${plain.out()}`,
      authType: "ucan"
    })
    expect(none.capabilities).toEqual([])
  })

  it("a malformed ability is a usage error", async () => {
    await expect(token(["--grant", "admin"], io().io)).rejects.toBeInstanceOf(UsageError)
    await expect(token(["--grant", "admin/*"], io().io)).rejects.toThrow(/no wildcard/)
    await expect(token(["--grant", ","], io().io)).rejects.toThrow(/--grant needs abilities/)
  })
})
