/**
 * A Postgres restart in the middle of a run (issue 36, item 1): the live client still gets the whole
 * answer, and a rejoin afterwards gets every frame the store took, numbered without a hole, then an
 * explicit `gap` frame (how many frames the log lacks) and `done` `interrupted` with reason
 * `log-gap`. Never a log that silently renumbers past the frames it lost.
 *
 * The test runs its own PostgreSQL cluster (Debian's binaries, through scripts/services/postgres.sh
 * on a folder and port of its own) so that stopping it disturbs no other suite; skipped, saying
 * why, where PostgreSQL is not installed.
 */
import { execFile } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { definePlugin, defineTool } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newSession, type Running, start, user } from "./helpers.js"
import { ROOT } from "./runCli.js"

const run = promisify(execFile)
const installed = existsSync("/usr/lib/postgresql") && readdirSync("/usr/lib/postgresql").length > 0
if (!installed)
  console.warn(
    "[skip] PostgreSQL is not installed (apt-get install postgresql): the mid-run restart test is skipped"
  )

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** The raw frames of an SSE body: `{ id, event, data }` per frame (comments skipped). */
const framesOf = (text: string) =>
  text
    .split("\n\n")
    .filter((f) => f.trim() !== "" && !f.startsWith(":"))
    .map((f) => ({
      id: /^id: (\d+)$/m.exec(f)?.[1],
      event: /^event: (.+)$/m.exec(f)?.[1] ?? "?",
      data: JSON.parse(/^data: (.*)$/m.exec(f)?.[1] ?? "{}") as Record<string, unknown>
    }))

describe.skipIf(!installed)("a Postgres restart mid-run (issue 36, item 1)", () => {
  let server: Running
  let env: Record<string, string>
  let release: () => void = () => {}
  let toolStarted: () => void = () => {}
  const started = new Promise<void>((resolve) => {
    toolStarted = resolve
  })
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  const words = Array.from({ length: 50 }, (_, i) => `w${i + 1}`).join(" ")
  const waiting = definePlugin({
    name: "waiting",
    manifest: {
      title: "Waiting",
      summary: "Waits until it is let go.",
      whenToUse: ["When asked to wait."],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "wait_for_gate",
        description: "Waits.",
        input: Schema.Struct({}),
        handler: async () => {
          toolStarted()
          await gate
          return "let go"
        }
      })
    ]
  })

  beforeAll(async () => {
    const base = mkdtempSync(join(tmpdir(), "plugboard-pg-restart-"))
    // The cluster belongs to `postgres` under root: its folder must be reachable.
    chmodSync(base, 0o755)
    env = { PLUGBOARD_POSTGRES_DIR: join(base, "cluster"), PLUGBOARD_POSTGRES_PORT: String(await freePort()) }
    const pg = (command: string) =>
      run(join(ROOT, "scripts/services/postgres.sh"), [command], { env: { ...process.env, ...env } })
    await pg("start")
    const { stdout } = await pg("env")
    const url = /PLUGBOARD_TEST_POSTGRES_URL=(\S+)/.exec(stdout)![1]!
    Object.assign(env, { url, base })
    server = await start({
      plugins: [waiting],
      model: ScriptedChatModel.script([{ tool: "wait_for_gate", args: {} }, words]),
      env: { DATABASE_URL: url, DATABASE_SCHEMA: "restart", DATABASE_POOL_MAX: "4" }
    })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await run(join(ROOT, "scripts/services/postgres.sh"), ["reset"], {
      env: { ...process.env, ...env }
    }).catch(() => {})
    if (env?.base !== undefined) rmSync(env.base, { recursive: true, force: true })
  }, 60_000)

  it("the live client gets the answer; a rejoin gets the stored frames, a gap frame and done interrupted (log-gap)", async () => {
    const pg = (command: string) =>
      run(join(ROOT, "scripts/services/postgres.sh"), [command], { env: { ...process.env, ...env } })
    const { headers } = await user(server.app.oracleDid)
    const session = await newSession(server.url, headers)
    const response = await fetch(`${server.url}/messages/${session}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ message: "wait, then answer", stream: true })
    })
    const runId = response.headers.get("x-run-id")!
    const live = response.text()
    // The tool runs: its isRunning frame is stored. Then the database goes away, and the tool ends.
    await started
    await pg("stop")
    release()
    const liveFrames = framesOf(await live)
    await pg("start")

    // The live client saw everything: the tool's end, every word, and how the turn ended.
    expect(liveFrames.at(-1)!.event).toBe("done")
    const unnumbered = liveFrames.filter((f) => f.id === undefined && f.event !== "done")
    expect(unnumbered.length).toBeGreaterThan(0)

    // A rejoin from 0 (it follows until the log is ended: the repair runs once the store is back).
    const rejoin = await fetch(`${server.url}/runs/${runId}?after=0`, { headers })
    expect(rejoin.status).toBe(200)
    const stored = framesOf(await rejoin.text())
    const ids = stored.map((f) => Number(f.id))
    expect(ids).toEqual(ids.map((_, i) => i + 1))
    // Every stored frame is one the live client saw numbered the same, in the same order.
    const numbered = liveFrames.filter((f) => f.id !== undefined)
    expect(stored.slice(0, numbered.length)).toEqual(numbered)
    expect(stored.at(-2)).toMatchObject({ event: "gap", data: { missed: unnumbered.length } })
    expect(stored.at(-1)).toMatchObject({ event: "done", data: { status: "interrupted", reason: "log-gap" } })
    expect(stored).toHaveLength(numbered.length + 2)
  }, 120_000)
})
