/**
 * `pnpm plugboard serve`, the README's command, under a process supervisor: the SIGTERM a
 * supervisor sends to the process it started (pnpm) reaches the node server, which shuts down
 * gracefully. Before, pnpm passed it to the `sh -c` it runs scripts in,
 * which died without passing it on, and the server was left running with no parent.
 */
import { execFileSync } from "node:child_process"
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { call, spawnServe } from "./helpers.js"
import { workspaceTarballs } from "./initTarballs.js"
import { runCli } from "./runCli.js"

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

/** The state letter and parent pid of `pid` from /proc, or undefined once it is reaped. */
const statOf = (pid: number): { readonly state: string; readonly ppid: number } | undefined => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
    const [state, ppid] = fields.slice(fields.lastIndexOf(")") + 2).split(" ")
    return { state: state ?? "?", ppid: Number(ppid) }
  } catch {
    return undefined
  }
}

/** Running, not a zombie: an exited process its new parent has not reaped yet is not serving. */
const alive = (pid: number): boolean => {
  const stat = statOf(pid)
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X"
}

/** The node process serving under `pid`: a descendant node running scripts/plugboard.mjs. */
const serverUnder = (pid: number): number | undefined => {
  const queue = [pid]
  while (queue.length > 0) {
    const next = queue.shift()!
    const argv = argvOf(next)
    // node itself, not a shell whose command line names it
    if (
      next !== pid &&
      basename(argv[0] ?? "") === "node" &&
      argv.some((a) => a.endsWith("scripts/plugboard.mjs"))
    )
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

/**
 * A project `plugboard init` wrote (through the CLI), installed without a registry: its
 * node_modules links the repository's own, and its `plugboard` bin runs the CLI from the sources.
 */
const scaffolded = async (): Promise<{ readonly root: string; readonly app: string }> => {
  const root = mkdtempSync(join(tmpdir(), "plugboard-wrapper-"))
  // Stand-in tarballs: init from the checkout would pack it, which needs `pnpm build`.
  workspaceTarballs(join(root, "tarballs"))
  const made = await runCli(root, "init", "app", "--from", "tarballs")
  expect(made.code, made.stderr).toBe(0)
  const app = join(root, "app")
  const modules = join(app, "node_modules")
  mkdirSync(join(modules, ".bin"), { recursive: true })
  for (const entry of readdirSync(join(ROOT, "node_modules")))
    if (entry !== ".bin") symlinkSync(join(ROOT, "node_modules", entry), join(modules, entry))
  const bin = join(modules, ".bin", "plugboard")
  writeFileSync(
    bin,
    `#!/bin/sh\nexec "${process.execPath}" --conditions=@plugboard/source "${join(ROOT, "scripts/plugboard.mjs")}" "$@"\n`
  )
  chmodSync(bin, 0o755)
  return { root, app }
}

const hasNpm = (() => {
  try {
    execFileSync("npm", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

/** Resolves once `check` holds, polled every 100 ms; false after `ms`. */
const eventually = async (check: () => boolean, ms: number): Promise<boolean> => {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return check()
}

describe.skipIf(process.platform !== "linux" || !hasNpm)("issue 36 item 17: SIGTERM through npm", () => {
  const cases = [
    ["npm run serve", ["npm", "run", "serve"]],
    ["npx plugboard serve", ["npx", "--no-install", "plugboard", "serve", "src/index.ts"]]
  ] as const
  for (const [name, command] of cases) {
    it(`${name} in a scaffold: a SIGTERM to npm takes the server down`, async () => {
      const { root, app } = await scaffolded()
      const { child, url, exited, output } = spawnServe(command, app, {
        PORT: "0",
        HOME: root,
        npm_config_cache: join(root, ".npm"),
        npm_config_update_notifier: "false"
      })
      let server: number | undefined
      try {
        const listening = await url
        server = serverUnder(child.pid!)
        expect(server, "the node server runs under npm").toBeDefined()
        expect((await call(`${listening}/health`)).status).toBe(200)
        child.kill("SIGTERM")
        await exited
        expect(await eventually(() => !alive(server!), 15_000), `the server outlived npm:\n${output()}`).toBe(
          true
        )
        await expect(fetch(`${listening}/health`)).rejects.toThrow()
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL")
        if (server !== undefined && alive(server)) process.kill(server, "SIGKILL")
        rmSync(root, { recursive: true, force: true })
      }
    }, 120_000)
  }

  it("a wrapper killed outright (SIGKILL, nothing passed on) takes the server down", async () => {
    const { root, app } = await scaffolded()
    // A shell that runs the server as its child (no exec), as a hand-written wrapper does.
    const { child, url, exited, output } = spawnServe(
      ["sh", "-c", "node_modules/.bin/plugboard serve src/index.ts; echo wrapper-done"],
      app,
      { PORT: "0", HOME: root }
    )
    let server: number | undefined
    try {
      const listening = await url
      server = serverUnder(child.pid!)
      expect(server, "the node server runs under the shell").toBeDefined()
      child.kill("SIGKILL")
      await exited
      expect(
        await eventually(() => !alive(server!), 30_000),
        `the server outlived its parent (/proc stat ${JSON.stringify(statOf(server!))}):\n${output()}`
      ).toBe(true)
      await expect(fetch(`${listening}/health`)).rejects.toThrow()
    } finally {
      if (server !== undefined && alive(server)) process.kill(server, "SIGKILL")
      rmSync(root, { recursive: true, force: true })
    }
  }, 120_000)
})
