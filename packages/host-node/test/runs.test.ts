/**
 * Runs: a streamed turn is a run with numbered frames (`X-Run-Id`, a `run` frame first, `done`
 * with its status). `GET /runs/:runId?after=N` replays what came after N and follows the rest;
 * `GET /sessions/:id/run` tells whether the session has a run going; a run that a killed server
 * left unfinished is reported interrupted after the restart, with every frame it had committed.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { generateSigner } from "@plugboard/adapters/ucan"
import type { EventSink } from "@plugboard/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import {
  call,
  collect,
  headersFor,
  newSession,
  type Running,
  slowJob,
  spawnServe,
  start,
  stream,
  user,
  weather
} from "./helpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(here, "../../..")

/** The raw frames of an SSE body: `[id, event]` per frame (comments skipped). */
const rawFrames = (text: string): Array<[number | undefined, string]> =>
  text
    .split("\n\n")
    .filter((f) => f.trim() !== "" && !f.startsWith(":"))
    .map((f) => {
      const id = /^id: (\d+)$/m.exec(f)?.[1]
      return [id === undefined ? undefined : Number(id), /^event: (.+)$/m.exec(f)?.[1] ?? "?"]
    })

const rejoin = (url: string, runId: string, after: number, headers: Record<string, string>) =>
  fetch(`${url}/runs/${encodeURIComponent(runId)}?after=${after}`, { headers })

describe("runs", () => {
  let server: Running
  beforeAll(async () => {
    server = await start({ plugins: [weather, slowJob] })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("numbers every frame from 1, names the run, and replays what came after N", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const response = await fetch(`${server.url}/messages/${session}`, {
      method: "POST",
      headers: u.headers,
      body: JSON.stringify({ message: "What's the weather in Berlin?", stream: true })
    })
    const runId = response.headers.get("x-run-id")!
    expect(runId).toMatch(/^run_/)
    const text = await response.text()
    const frames = rawFrames(text)
    expect(frames.map(([id]) => id)).toEqual(frames.map((_, i) => i + 1))
    expect(frames[0]![1]).toBe("run")
    expect(frames.at(-1)![1]).toBe("done")

    // A rejoin after frame 3 gets frames 4.. exactly, the same bytes as the original stream.
    const again = await rejoin(server.url, runId, 3, u.headers)
    expect(again.status).toBe(200)
    expect(again.headers.get("x-run-id")).toBe(runId)
    expect(again.headers.get("x-request-id")).toBe(response.headers.get("x-request-id"))
    const replay = await again.text()
    expect(rawFrames(replay)).toEqual(frames.slice(3))
    const body = (t: string) => t.split("\n\n").filter((f) => /^id: /m.test(f))
    expect(body(replay)).toEqual(body(text).slice(3))
    // Resume after a reload starts at 0: the whole run.
    expect(rawFrames(await (await rejoin(server.url, runId, 0, u.headers)).text())).toEqual(frames)
    // The run is over: the session has none going.
    expect((await call(`${server.url}/sessions/${session}/run`, { headers: u.headers })).body).toEqual({
      run: null
    })
  })

  it("a run going on is the session's run, followed live by a rejoin; aborted, it ends so", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const { response, events } = await stream(server.url, session, u.headers, "Run the slow job")
    const runId = response.headers.get("x-run-id")!
    const iterator = events[Symbol.asyncIterator]()
    // Wait for the slow call to start.
    for (;;) {
      const e = (await iterator.next()).value as EventSink.AgentEvent
      if (e._tag === "tool_call" && e.toolName === "run_slow_job") break
    }
    const active = await call(`${server.url}/sessions/${session}/run`, { headers: u.headers })
    expect(active.body.run).toMatchObject({ runId, status: "running" })
    // A second client follows the run live from its start.
    const follower = collect(readSse((await rejoin(server.url, runId, 0, u.headers)).body!))
    await call(`${server.url}/messages/abort`, {
      method: "POST",
      headers: u.headers,
      body: { sessionId: session }
    })
    const followed = await follower
    expect(followed[0]).toMatchObject({ _tag: "run", runId })
    expect(followed.at(-1)).toEqual({ _tag: "done", status: "aborted", partialText: "" })
    const rest = await collect({ [Symbol.asyncIterator]: () => iterator })
    expect(rest.at(-1)).toEqual(followed.at(-1))
  })

  it("404 for a run that is unknown or another user's, 400 for a bad cursor", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const { response, events } = await stream(server.url, session, u.headers, "What's the weather in Paris?")
    await collect(events)
    const runId = response.headers.get("x-run-id")!
    expect((await rejoin(server.url, "run_nope", 0, u.headers)).status).toBe(404)
    const other = await user(server.app.oracleDid)
    const theirs = await rejoin(server.url, runId, 0, other.headers)
    expect(theirs.status).toBe(404)
    expect(await theirs.json()).toMatchObject({ statusCode: 404 })
    const bad = await fetch(`${server.url}/runs/${runId}?after=-1`, { headers: u.headers })
    expect(bad.status).toBe(400)
  })
})

describe("a run cut by kill -9", () => {
  const cwd = mkdtempSync(join(tmpdir(), "plugboard-runs-kill-"))
  const command = [
    process.execPath,
    "--conditions=@plugboard/source",
    join(ROOT, "scripts/plugboard.mjs"),
    "serve",
    join(here, "fixtures", "runs", "slow.ts")
  ] as const
  afterAll(() => rmSync(cwd, { recursive: true, force: true }))

  it("is reported interrupted after the restart, with every frame it had committed", async () => {
    const first = spawnServe(command, cwd, { PORT: "0" })
    let runId: string
    let session: string
    let seen: Array<[number | undefined, string]>
    const signer = await generateSigner()
    try {
      const url = await first.url
      const oracleDid = (await call(`${url}/health`)).body.oracleDid as string
      const headers = await headersFor(signer, oracleDid)
      session = await newSession(url, headers)
      const response = await fetch(`${url}/messages/${session}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ message: "Run the slow job", stream: true })
      })
      runId = response.headers.get("x-run-id")!
      const reader = response.body!.getReader()
      let text = ""
      while (!/event: tool_call\ndata: [^\n]*"toolName":"run_slow_job"/.test(text)) {
        text += new TextDecoder().decode((await reader.read()).value)
      }
      seen = rawFrames(text)
      first.child.kill("SIGKILL")
      await first.exited
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill("SIGKILL")
    }

    const second = spawnServe(command, cwd, { PORT: "0" })
    try {
      const url = await second.url
      const oracleDid = (await call(`${url}/health`)).body.oracleDid as string
      const headers = await headersFor(signer, oracleDid)
      expect((await call(`${url}/sessions/${session}/run`, { headers })).body).toEqual({ run: null })
      const replay = await (await rejoin(url, runId, 0, headers)).text()
      const frames = rawFrames(replay)
      // Every frame the client saw before the kill is there, in order, then the interrupted done.
      expect(frames.slice(0, seen.length)).toEqual(seen)
      expect(frames.at(-1)).toEqual([frames.length, "done"])
      expect(replay).toMatch(/event: done\ndata: \{"status":"interrupted","partialText":""\}/)
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
  }, 120_000)
})
