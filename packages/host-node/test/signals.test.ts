/**
 * `pnpm plugboard serve`, the README's command, under a process supervisor: the SIGTERM a
 * supervisor sends to the process it started (pnpm) reaches the node server, which shuts down
 * gracefully. Before, pnpm passed it to the `sh -c` it runs scripts in,
 * which died without passing it on, and the server was left running with no parent.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { call, spawnServe } from "./helpers.js"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")

/** The pids whose parent is `pid`, from /proc (Linux). */
const childrenOf = (pid: number): Array<number> =>
  readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // After "(comm)" come the state and the parent's pid.
        const stat = readFileSync(`/proc/${name}/stat`, "utf8")
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid
      } catch {
        return false // gone meanwhile
      }
    })
    .map(Number)

const argvOf = (pid: number): Array<string> => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
  } catch {
    return []
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The node process serving under `pid`: a descendant node running scripts/plugboard.mjs. */
const serverUnder = (pid: number): number | undefined => {
  const queue = [pid]
  while (queue.length > 0) {
    const next = queue.shift()!
    const argv = argvOf(next)
    // node itself, not a shell whose command line names it
    if (next !== pid && basename(argv[0] ?? "") === "node" && argv.includes("scripts/plugboard.mjs"))
      return next
    queue.push(...childrenOf(next))
  }
  return undefined
}

const hasPnpm = (() => {
  try {
    execFileSync("pnpm", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

describe.skipIf(process.platform !== "linux" || !hasPnpm)("SIGTERM through pnpm", () => {
  it("pnpm plugboard serve: a SIGTERM to pnpm shuts the node server down gracefully", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plugboard-sigterm-"))
    const { child, url, exited, output } = spawnServe(["pnpm", "--dir", ROOT, "plugboard", "serve"], cwd, {
      PORT: "0",
      HOME: process.env.HOME ?? cwd
    })
    let server: number | undefined
    try {
      const listening = await url
      server = serverUnder(child.pid!)
      expect(server, "the node server runs under pnpm").toBeDefined()
      expect(server).not.toBe(child.pid)
      expect((await call(`${listening}/health`)).status).toBe(200)

      child.kill("SIGTERM")
      expect(await exited).toBe(0)
      expect(alive(server!), "the node server is gone when pnpm exits").toBe(false)
      expect(output()).toMatch(/SIGTERM: shutting down/)
      expect(output()).toMatch(/^stopped\.$/m)
      await expect(fetch(`${listening}/health`)).rejects.toThrow()
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
      if (server !== undefined && alive(server)) process.kill(server, "SIGKILL")
      rmSync(cwd, { recursive: true, force: true })
    }
  }, 120_000)
})
