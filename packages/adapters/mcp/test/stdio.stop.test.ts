/**
 * Issue 36, item 22: a stdio server that never answers `initialize` is stopped, with every
 * process it started, by the time the pool's `close()` resolves. Real processes: the silent
 * fixture and a grandchild of it that ignores SIGTERM.
 */
import { readFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import * as Discovery from "../src/Discovery.js"
import { mountMcpServers } from "../src/Mount.js"
import { McpPool } from "../src/Pool.js"
import { fixtures, serverOf, tempDir } from "./fixtures-config/helpers.js"

let dir: string
let cleanup: () => Promise<void>
const started: number[] = []
beforeEach(async () => {
  ;({ dir, cleanup } = await tempDir())
})
afterEach(async () => {
  // Whatever the outcome, no fixture outlives its test.
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {}
  }
  await cleanup()
})

/**
 * Whether `pid` still runs. A process that died but is not yet reaped (an orphan waiting for
 * init, a zombie) runs nothing: on Linux its `/proc` state tells.
 */
const runs = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH"
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2))
  } catch {
    return process.platform !== "linux"
  }
}

/** Polls until `check` holds or `ms` pass; the last answer. */
const within = async <T>(ms: number, check: () => Promise<T | undefined> | T | undefined) => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined || Date.now() >= deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const pidsOf = (file: string) =>
  within(10_000, async () => {
    const text = await readFile(file, "utf8").catch(() => "")
    if (text === "") return undefined
    const pids = JSON.parse(text) as { pid: number; grandchild: number }
    started.push(pids.pid, pids.grandchild)
    return pids
  })

const silent = (pidsFile: string, timeoutMs: number) =>
  serverOf("silent", {
    command: process.execPath,
    args: [join(fixtures, "silent-server.mjs")],
    env: { FIXTURE_PIDS: pidsFile },
    timeoutMs
  })

describe("stopping a stdio server", () => {
  it("issue 36 item 22: a server that never answers initialize is gone, with its grandchild, once the pool's close() resolves after discovery timed out", async () => {
    const pidsFile = join(dir, "pids.json")
    const pool = new McpPool()
    const discovering = Discovery.discover([silent(pidsFile, 2_000)], { pool, cacheDir: dir })
    const pids = await pidsOf(pidsFile)
    expect(pids).toBeDefined()
    const [found] = await discovering
    expect(found?.error).toMatch(
      /^MCP server 'silent' did not (answer|connect|finish initializing) within 2000 ms/
    )
    expect(runs(pids!.pid) || runs(pids!.grandchild)).toBe(true)
    await pool.close()
    // close() waited for both: what is left is the kernel's bookkeeping, bounded well under the grace.
    const alive = await within(500, () => (runs(pids!.pid) || runs(pids!.grandchild) ? undefined : false))
    expect({ child: runs(pids!.pid), grandchild: runs(pids!.grandchild), alive }).toEqual({
      child: false,
      grandchild: false,
      alive: false
    })
  })

  it("mounting a config whose server never answers returns with the server already gone", async () => {
    const pidsFile = join(dir, "pids.json")
    const mounting = mountMcpServers(
      {
        mcpServers: {
          silent: {
            command: process.execPath,
            args: [join(fixtures, "silent-server.mjs")],
            env: { FIXTURE_PIDS: pidsFile },
            timeoutMs: 2_000
          }
        }
      },
      { cacheDir: dir }
    )
    const pids = await pidsOf(pidsFile)
    expect(pids).toBeDefined()
    const mounted = await mounting
    expect(mounted.warnings.join("\n")).toMatch(/silent/)
    const alive = await within(500, () => (runs(pids!.pid) || runs(pids!.grandchild) ? undefined : false))
    expect(alive).toBe(false)
    await mounted.close()
  })
})
