/**
 * `plugboard console` (docs/console.md): a fresh token of the local user in the link's
 * fragment, never its query, that the server accepts; clear failures when no oracle answers or
 * its console is off.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliIO, openConsole } from "../../src/cli/Commands.js"
import { call, type Running, start } from "../helpers.js"

const ioFor = (dir: string) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const io: CliIO = {
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    env: { PLUGBOARD_DATA_DIR: dir },
    cwd: dir
  }
  return { io, out, err }
}

describe("plugboard console", () => {
  let running: Running
  let dir: string
  beforeAll(async () => {
    running = await start()
    dir = mkdtempSync(join(tmpdir(), "plugboard-console-cli-"))
  }, 60_000)
  afterAll(async () => {
    await running.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("opens the console with a token in the fragment that the server accepts", async () => {
    const { io, out } = ioFor(dir)
    const opened: Array<string> = []
    const code = await openConsole(["--url", running.url], io, async (url) => void opened.push(url))
    expect(code).toBe(0)
    expect(opened).toHaveLength(1)
    const link = new URL(opened[0]!)
    expect(link.pathname).toBe("/console")
    expect(link.search).toBe("")
    const token = new URLSearchParams(link.hash.slice(1)).get("token")!
    expect(token.length).toBeGreaterThan(100)
    // The terminal line names the page, never the token.
    expect(out.join("")).not.toContain(token)
    const r = await call(`${running.url}/console/api/catalog`, {
      headers: { authorization: `Bearer ${token}`, "x-auth-type": "ucan" }
    })
    expect(r.status).toBe(200)
  })

  it("prints the link with --print, or when no browser opens", async () => {
    const printed = ioFor(dir)
    expect(await openConsole(["--url", running.url, "--print"], printed.io, async () => undefined)).toBe(0)
    expect(printed.out.join("")).toMatch(/\/console#token=/)
    const noBrowser = ioFor(dir)
    const code = await openConsole(["--url", running.url], noBrowser.io, async () => {
      throw new Error("spawn xdg-open ENOENT")
    })
    expect(code).toBe(0)
    expect(noBrowser.err.join("")).toContain("No browser could be opened")
    expect(noBrowser.out.join("")).toMatch(/\/console#token=/)
  })

  it("says so when no oracle answers, or when its console is off", async () => {
    const none = ioFor(dir)
    expect(await openConsole(["--url", "http://127.0.0.1:9"], none.io, async () => undefined)).toBe(1)
    expect(none.err.join("")).toContain("No oracle answers at http://127.0.0.1:9")
    const off = await start({ env: { CONSOLE: "false" } })
    try {
      const closed = ioFor(dir)
      expect(await openConsole(["--url", off.url], closed.io, async () => undefined)).toBe(1)
      expect(closed.err.join("")).toContain("CONSOLE=true")
    } finally {
      await off.stop()
    }
  })

  it("refuses a lifetime the server would refuse", async () => {
    const { io } = ioFor(dir)
    await expect(
      openConsole(["--url", running.url, "--ttl", "3600"], io, async () => undefined)
    ).rejects.toThrow(/--ttl must be a whole number from 1 to 900/)
  })
})
