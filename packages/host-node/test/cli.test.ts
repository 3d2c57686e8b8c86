/**
 * The CLI commands in-process against a real server: `token` mints what the server accepts,
 * `credits` reads and tops up the same SQLite ledger the server charges, `chat` creates a session
 * and prints the streamed turn readably. Usage errors are refused with a message.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliIO, chat, credits, token, UsageError } from "../src/cli/Commands.js"
import { createOracleApp, creditsPlugin, type OracleApp, quietLogger } from "../src/index.js"
import { call, weather } from "./helpers.js"

let dir: string
let app: OracleApp
let url: string

const io = () => {
  const out: Array<string> = []
  const err: Array<string> = []
  const value: CliIO = {
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    env: { PLUGBOARD_DATA_DIR: dir, PORT: new URL(url).port },
    cwd: dir
  }
  return { io: value, out: () => out.join(""), err: () => err.join("") }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-cli-"))
  // The server and the CLI share one data directory, as `pnpm plugboard serve` and `token` do.
  app = await createOracleApp({
    plugins: [weather, creditsPlugin],
    env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000" },
    logger: quietLogger
  })
  url = (await app.listen(0, "127.0.0.1")).url
})
afterAll(async () => {
  await app.close(2_000)
  rmSync(dir, { recursive: true, force: true })
})

describe("plugboard CLI", () => {
  it("token, credits and chat work against the local oracle", async () => {
    const t = io()
    expect(await token([], t.io)).toBe(0)
    const headers = { authorization: `Bearer ${t.out().trim()}`, "x-auth-type": "ucan" }
    // The local user has no credits yet: no turn (their own data stays theirs to read).
    expect((await call(`${url}/sessions`, { headers })).status).toBe(200)
    expect(
      (await call(`${url}/messages/cli`, { method: "POST", headers, body: { message: "hi" } })).status
    ).toBe(402)

    const balance = io()
    expect(await credits(["balance"], balance.io)).toBe(0)
    expect(balance.out()).toMatch(/^did:key:\S+: 0 credits\n$/)
    const topUp = io()
    expect(await credits(["top-up", "50"], topUp.io)).toBe(0)
    expect(topUp.out()).toMatch(/: 50 credits\n$/)
    const did = /^(did:key:\S+):/.exec(topUp.out())![1]!
    expect(await app.credits.balance(did)).toBe(50)
    expect((await call(`${url}/sessions`, { headers })).status).toBe(200)

    const c = io()
    expect(await chat(["What's the weather in Berlin?"], c.io)).toBe(0)
    const lines = c.out()
    expect(lines).toMatch(/^session \S+\n/)
    const order = [
      "… The user asks “What's the weather in Berlin?”; the Weather plugin (weather) fits; loading it.",
      '→ load_capability {"names":["weather"]}',
      '→ get_current_weather {"city":"Berlin"}',
      "Here is what Weather",
      "← done"
    ].map((needle) => lines.indexOf(needle))
    expect(order.every((at) => at >= 0)).toBe(true)
    expect([...order].sort((a, b) => a - b)).toEqual(order)
    // The turn was charged.
    expect(await app.credits.balance(did)).toBeLessThan(50)
  })

  it("refuses bad command lines with a usage error", async () => {
    const t = io()
    await expect(credits(["top-up", "-3"], t.io)).rejects.toBeInstanceOf(UsageError)
    await expect(credits(["top-up"], t.io)).rejects.toBeInstanceOf(UsageError)
    await expect(credits(["refund"], t.io)).rejects.toBeInstanceOf(UsageError)
    await expect(token(["--ttl", "3600"], t.io)).rejects.toThrow(/--ttl must be a whole number from 1 to 900/)
    await expect(chat([], t.io)).rejects.toBeInstanceOf(UsageError)
    await expect(chat(["hi", "--bogus", "1"], t.io)).rejects.toThrow(/Unknown option --bogus/)
  })

  it("chat says clearly when no oracle answers", async () => {
    const t = io()
    await expect(chat(["hi", "--url", "http://127.0.0.1:9"], t.io)).rejects.toThrow(
      /No oracle answers at http:\/\/127.0.0.1:9/
    )
  })
})
