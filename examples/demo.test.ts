/**
 * `pnpm demo --once` as a newcomer runs it: a child process (tsx with the source condition, what
 * the root script runs) in an empty directory with nothing in its environment but PATH and HOME.
 * It must boot the oracle on its embedded defaults, chat with it over HTTP+SSE (a
 * `load_capability`, the weather tool, an answer; then a forecast without another load), and
 * exit 0, leaving its data under `./.plugboard/` of that directory.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const TSX = join(REPO, "node_modules", ".bin", "tsx")
const DEMO = join(REPO, "examples", "demo.ts")

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-demo-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Runs the demo to its end; its exit code and output. Killed (and failed) after `timeoutMs`. */
const runDemo = (
  args: ReadonlyArray<string>,
  cwd: string,
  extraEnv: Record<string, string> = {},
  timeoutMs = 90_000
) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
    const child: ChildProcess = spawn(TSX, ["--conditions=@plugboard/source", DEMO, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? cwd, ...extraEnv },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => {
      stdout += d
    })
    child.stderr!.on("data", (d) => {
      stderr += d
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      fail(new Error(`the demo did not exit within ${timeoutMs} ms:\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on("error", (e) => {
      clearTimeout(timer)
      fail(e)
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr })
    })
  })

/** Positions of `needles` in `text`, each searched after the previous one (-1 when missing). */
const inOrder = (text: string, needles: ReadonlyArray<string>) => {
  let from = 0
  return needles.map((n) => {
    const at = text.indexOf(n, from)
    if (at >= 0) from = at + n.length
    return at
  })
}

describe("pnpm demo --once", () => {
  it("boots on embedded defaults in an empty environment, chats over HTTP+SSE, exits 0", async () => {
    const cwd = tempDir()
    const { code, stdout, stderr } = await runDemo(["--once"], cwd)
    expect({ code, stderr }).toEqual({ code: 0, stderr: expect.any(String) })
    expect(stdout).toMatch(/plugboard oracle 'plugboard' listening on http:\/\/127\.0\.0\.1:\d+/)
    const positions = inOrder(stdout, [
      "> What's the weather in Berlin?",
      "→ load_capability",
      '"names":["weather"]',
      "→ get_current_weather",
      '"city":"Berlin"',
      "← get_current_weather",
      "returned: city: Berlin",
      "← done",
      "> And the forecast for Berlin this week?",
      "→ get_weather_forecast",
      "← done",
      "> What's the weather in Berlin, Paris and Rome: which is warmest?",
      '"city":"Berlin"',
      '"city":"Paris"',
      '"city":"Rome"',
      "← done",
      "pnpm plugboard chat",
      "pnpm -s plugboard token",
      "curl"
    ])
    expect(positions.every((p) => p >= 0)).toBe(true)
    // The forecast needs no second load: the thread already has the weather plugin.
    const second = stdout.slice(stdout.indexOf("> And the forecast"))
    expect(second).not.toContain("load_capability")
    expect(stdout).not.toContain("✗")
    // Its data lives under ./.plugboard of the directory it ran in.
    for (const file of ["oracle.key", "user.key", "credits.sqlite", "users"]) {
      expect(existsSync(join(cwd, ".plugboard", file))).toBe(true)
    }
  }, 120_000)

  it("with CODE_MODE=on, answers the three cities with one program whose calls stream under it", async () => {
    const { code, stdout } = await runDemo(["--once"], tempDir(), { CODE_MODE: "on" })
    expect(code).toBe(0)
    const third = stdout.slice(stdout.indexOf("> What's the weather in Berlin, Paris and Rome"))
    const positions = inOrder(third, [
      "→ run_code",
      "→ get_current_weather",
      '"city":"Berlin"',
      "→ get_current_weather",
      '"city":"Paris"',
      "→ get_current_weather",
      '"city":"Rome"',
      "← run_code",
      "returned: Berlin: (city: Berlin",
      "← done"
    ])
    expect(positions.every((p) => p >= 0)).toBe(true)
    // One program: no weather call between the load and run_code made by a model call of its own.
    expect(third.split("→ run_code").length - 1).toBe(1)
    expect(stdout).not.toContain("✗")
  }, 120_000)

  it("falls back to a free port, saying so, when PORT is taken", async () => {
    const cwd = tempDir()
    const holder: Server = createServer()
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", r))
    cleanups.push(() => holder.close())
    const taken = (holder.address() as { port: number }).port
    const { code, stdout } = await runDemo(["--once"], cwd, { PORT: String(taken) })
    expect(code).toBe(0)
    expect(stdout).toContain(`Port ${taken} is already in use`)
    const bound = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]
    expect(Number(bound)).not.toBe(taken)
    expect(stdout).toContain(`--url http://127.0.0.1:${bound}`)
    expect(stdout).toContain("→ get_current_weather")
  }, 120_000)

  it("refuses an unknown argument with its usage (exit 2)", async () => {
    const { code, stderr } = await runDemo(["--bogus"], tempDir())
    expect(code).toBe(2)
    expect(stderr).toContain("Unknown argument '--bogus'. Usage: pnpm demo [--once]")
  }, 120_000)
})
