/**
 * Runs: a streamed turn is a run with numbered frames (`X-Run-Id`, a `run` frame first, `done`
 * with its status). `GET /runs/:runId?after=N` replays what came after N and follows the rest;
 * `GET /sessions/:id/run` tells whether the session has a run going; a run that a killed server
 * left unfinished is reported interrupted after the restart, with every frame it had committed;
 * a turn cut short ends with a `done` that says how (`aborted` by the user, `interrupted` by a
 * newer message or shutdown) and carries the partial answer, which the thread keeps, marked.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import type { EventSink } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner } from "@plugboard/ucan"
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

  it("a deleted session's run no longer replays its text (issue 36, item 2)", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const response = await fetch(`${server.url}/messages/${session}`, {
      method: "POST",
      headers: u.headers,
      body: JSON.stringify({ message: "What's the weather in Berlin?", stream: true })
    })
    const runId = response.headers.get("x-run-id")!
    expect(await response.text()).toContain("Berlin")
    expect((await rejoin(server.url, runId, 0, u.headers)).status).toBe(200)
    const deleted = await fetch(`${server.url}/sessions/${session}`, { method: "DELETE", headers: u.headers })
    expect(deleted.status).toBe(200)
    const after = await rejoin(server.url, runId, 0, u.headers)
    expect(after.status).toBe(404)
    const body = await after.text()
    expect(body).not.toContain("Berlin")
    expect(JSON.parse(body)).toMatchObject({ statusCode: 404 })
    const active = await fetch(`${server.url}/sessions/${session}/run`, { headers: u.headers })
    expect(await active.json()).toEqual({ run: null })
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
    expect(followed.at(-1)).toEqual({ _tag: "done", status: "aborted", partialText: "", reason: "user" })
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

  it("is reported interrupted after the restart, with every frame it had committed, and its question is back in the history (issue 36, item 3)", async () => {
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
      expect(replay).toMatch(
        /event: done\ndata: \{"status":"interrupted","partialText":"","reason":"restart"\}/
      )
      // The turn never saved (it was killed mid-call): the restart put its question in the thread.
      const history = (await call(`${url}/messages/${session}`, { headers })).body.messages as ReadonlyArray<{
        type: string
        content: string
      }>
      expect(history.map((m) => [m.type, m.content])).toEqual([["human", "Run the slow job"]])
      // The next turn goes on from it.
      const next = await call(`${url}/messages/${session}`, {
        method: "POST",
        headers,
        body: { message: "What's the weather in Berlin?" }
      })
      expect(next.status).toBe(200)
      const after = (await call(`${url}/messages/${session}`, { headers })).body.messages as ReadonlyArray<{
        type: string
        content: string
      }>
      expect(after.slice(0, 2).map((m) => [m.type, m.content])).toEqual([
        ["human", "Run the slow job"],
        ["human", "What's the weather in Berlin?"]
      ])
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
  }, 120_000)
})

/**
 * A scripted model that streams the first words of its answer, then stalls until its call is
 * aborted: a turn cut off in the middle of its answer.
 */
const stallingModel = (answer: string): ScriptedChatModel => {
  const stall = (m: ScriptedChatModel): ScriptedChatModel => {
    const chunks = m._streamResponseChunks.bind(m)
    const bind = m.bindTools.bind(m)
    m._streamResponseChunks = async function* (messages, options, runManager) {
      let sent = 0
      for await (const chunk of chunks(messages, options, runManager)) {
        yield chunk
        if (++sent === 2) {
          await new Promise((_, reject) => {
            options.signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true })
          })
        }
      }
    }
    m.bindTools = (...args) => stall(bind(...args))
    return m
  }
  return stall(ScriptedChatModel.script([answer, answer, answer]))
}

/** Polls `check` (at most 10 s). */
const until = async (check: () => Promise<boolean>): Promise<void> => {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50))
}

describe("a turn cut short", () => {
  const answer = "The first words arrive, then the model stalls for good."

  const cutTurn = async (
    server: Running,
    cut: (session: string, headers: Record<string, string>) => Promise<unknown>
  ) => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const { response, events } = await stream(server.url, session, u.headers, "Say something long.")
    const iterator = events[Symbol.asyncIterator]()
    const seen: Array<EventSink.AgentEvent> = []
    // Until the streamed words arrive.
    while (!seen.some((e) => e._tag === "message"))
      seen.push((await iterator.next()).value as EventSink.AgentEvent)
    await cut(session, u.headers)
    seen.push(...(await collect({ [Symbol.asyncIterator]: () => iterator })))
    const streamed = seen
      .filter((e): e is Extract<EventSink.AgentEvent, { _tag: "message" }> => e._tag === "message")
      .map((e) => e.content)
      .join("")
    const history = async () =>
      (await call(`${server.url}/messages/${session}`, { headers: u.headers })).body.messages
    return {
      seen,
      streamed,
      history,
      session,
      headers: u.headers,
      requestId: response.headers.get("x-request-id")
    }
  }

  it("aborted by the user: done says aborted with the partial text, and the thread keeps that text, marked cut off", async () => {
    const server = await start({ model: stallingModel(answer) })
    try {
      const { seen, streamed, history, requestId } = await cutTurn(server, (sessionId, headers) =>
        call(`${server.url}/messages/abort`, { method: "POST", headers, body: { sessionId } })
      )
      expect(streamed.length).toBeGreaterThan(0)
      expect(answer.startsWith(streamed)).toBe(true)
      expect(streamed).not.toBe(answer)
      expect(seen.at(-1)).toEqual({ _tag: "done", status: "aborted", partialText: streamed, reason: "user" })
      expect((await history()).at(-1)).toMatchObject({
        type: "ai",
        content: streamed,
        id: requestId,
        cutOff: true
      })
    } finally {
      await server.stop()
    }
  })

  it("replaced by a newer message: done says interrupted, with the partial text kept", async () => {
    const server = await start({ model: stallingModel(answer) })
    try {
      let next: Promise<ReadonlyArray<EventSink.AgentEvent>> | undefined
      const { seen, streamed, history, session, headers } = await cutTurn(server, async (sessionId, h) => {
        const { events } = await stream(server.url, sessionId, h, "Never mind.")
        next = collect(events)
      })
      expect(seen.at(-1)).toEqual({
        _tag: "done",
        status: "interrupted",
        partialText: streamed,
        reason: "replaced"
      })
      // The newer turn (it stalls too) is the user's to stop.
      await until(
        async () => (await call(`${server.url}/sessions/${session}/run`, { headers })).body.run !== null
      )
      await call(`${server.url}/messages/abort`, { method: "POST", headers, body: { sessionId: session } })
      expect((await next!).at(-1)).toMatchObject({ _tag: "done", status: "aborted" })
      const kept = (await history()).filter((m: { cutOff?: boolean }) => m.cutOff === true)
      expect(kept[0]).toMatchObject({ content: streamed })
    } finally {
      await server.stop()
    }
  })

  it("cut by shutdown: done says interrupted, with the partial text kept", async () => {
    const server = await start({ model: stallingModel(answer), env: { SHUTDOWN_DEADLINE_MS: "100" } })
    let closing: Promise<void> | undefined
    try {
      const { seen, streamed } = await cutTurn(server, async () => {
        closing = server.app.close(100)
      })
      expect(seen.at(-1)).toEqual({
        _tag: "done",
        status: "interrupted",
        partialText: streamed,
        reason: "shutdown"
      })
      await closing
    } finally {
      await server.stop()
    }
  })
})
