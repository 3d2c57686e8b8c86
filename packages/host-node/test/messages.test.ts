/**
 * Sessions and messages over real sockets: the streamed weather turn in order, its history, the
 * per-user wall (404), abort mid-stream, the JSON (non-stream) answer, heartbeats, and the host's
 * `checkpointerForUser` override.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel"
import type { IncomingMessage } from "node:http"
import type { Socket } from "node:net"
import { Clock } from "@plugboard/core"
import { MemorySaver } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { examplePlugins } from "../../../examples/catalog/index.js"
import { readSse } from "../src/cli/Sse.js"
import { call, collect, newSession, slowJob, start, stream, user, weather } from "./helpers.js"

/**
 * The server's socket of the next request to `method path` (node's `http.server.request.start`
 * channel): a client's disconnect is seen by the server once that socket has closed.
 */
const serverSocketOf = (method: string, path: string): Promise<Socket> =>
  new Promise((resolve) => {
    const onStart = (message: unknown) => {
      const { request, socket } = message as { request: IncomingMessage; socket: Socket }
      if (request.method !== method || request.url !== path) return
      unsubscribe("http.server.request.start", onStart)
      resolve(socket)
    }
    subscribe("http.server.request.start", onStart)
  })

const toolCalls = (events: ReadonlyArray<{ _tag: string; toolName?: string; status?: string }>) =>
  events.filter((e) => e._tag === "tool_call" && e.status === "isRunning").map((e) => e.toolName)

/** The streamed answer: its `message` chunks put together. */
const answerOf = (events: ReadonlyArray<{ _tag: string; content?: string }>) =>
  events
    .filter((e) => e._tag === "message")
    .map((e) => e.content ?? "")
    .join("")

/**
 * The scripted router's reasoning for the weather turn, one per model call: what the model
 * exposed (as a provider does), not a placeholder.
 */
const WEATHER_REASONING = [
  "The user asks “What's the weather in Berlin?”; the Weather plugin (weather) fits; loading it.",
  'The user asks “What\'s the weather in Berlin?”; the Weather plugin (weather) fits; calling get_current_weather with {"city":"Berlin"}.',
  "get_current_weather answered; summarising the result for the user."
]

const reasoningOf = (events: ReadonlyArray<{ _tag: string; content?: string }>) =>
  events.filter((e) => e._tag === "reasoning").map((e) => e.content)

/** Every tool call of every AI message in a history has an answer. */
const consistent = (
  messages: ReadonlyArray<{ type: string; toolCalls?: Array<{ id: string }>; toolCallId?: string }>
) => {
  const answered = new Set(messages.filter((m) => m.type === "tool").map((m) => m.toolCallId))
  return messages.every((m) => (m.toolCalls ?? []).every((c) => answered.has(c.id)))
}

describe("streamed turn", () => {
  it("reasoning, load_capability, get_current_weather, message, done; then history; another user gets 404", async () => {
    const server = await start()
    try {
      const alice = await user(server.app.oracleDid)
      const session = await newSession(server.url, alice.headers)
      const { response, events } = await stream(
        server.url,
        session,
        alice.headers,
        "What's the weather in Berlin?"
      )
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      expect(response.headers.get("cache-control")).toBe("no-cache, no-transform")
      expect(response.headers.get("x-accel-buffering")).toBe("no")
      expect(response.headers.get("x-request-id")).toMatch(/^[\w-]+$/)
      const seen = await collect(events)
      // Order of first appearance of each kind of event.
      const order = seen
        .map((e) => (e._tag === "tool_call" ? `tool_call:${e.toolName}` : e._tag))
        .filter((tag, i, all) => all.indexOf(tag) === i)
      expect(order).toEqual([
        "run",
        "reasoning",
        "tool_call:load_capability",
        "tool_call:get_current_weather",
        "message",
        "done"
      ])
      expect(seen.filter((e) => e._tag === "done")).toEqual([{ _tag: "done", status: "finished" }])
      // The run's frame names the run the X-Run-Id header names.
      expect(seen[0]).toMatchObject({ _tag: "run", runId: response.headers.get("x-run-id") })
      expect(response.headers.get("access-control-expose-headers")).toBe("X-Request-Id, X-Run-Id")
      // The model's own reasoning, each before its call's tool calls or answer.
      expect(reasoningOf(seen)).toEqual(WEATHER_REASONING)
      for (const e of seen.filter((e) => e._tag === "reasoning"))
        expect(Date.parse((e as { timestamp: string }).timestamp)).not.toBeNaN()
      const calls = seen.filter((e) => e._tag === "tool_call")
      for (const c of calls)
        expect(c).toMatchObject({ sessionId: session, requestId: response.headers.get("x-request-id") })
      const answer = answerOf(seen)
      expect(answer).toContain("Berlin")

      const history = await call(`${server.url}/messages/${session}`, { headers: alice.headers })
      expect(history.status).toBe(200)
      const types = history.body.messages.map((m: { type: string }) => m.type)
      expect(types).toEqual(["human", "ai", "tool", "ai", "tool", "ai"])
      // The chunks put together are the stored answer.
      expect(answer).toBe(history.body.messages[5].content)
      expect(history.body.messages[0].content).toBe("What's the weather in Berlin?")
      expect(history.body.messages[3].toolCalls[0].name).toBe("get_current_weather")

      const bob = await user(server.app.oracleDid)
      const stolen = await call(`${server.url}/messages/${session}`, { headers: bob.headers })
      expect(stolen).toMatchObject({ status: 404, body: { statusCode: 404 } })
      expect(
        (await call(`${server.url}/sessions/${session}`, { method: "DELETE", headers: bob.headers })).status
      ).toBe(404)
      const listed = await call(`${server.url}/sessions`, { headers: alice.headers })
      expect(listed.body).toMatchObject({ total: 1, sessions: [{ sessionId: session }] })
      expect((await call(`${server.url}/sessions`, { headers: bob.headers })).body.total).toBe(0)
    } finally {
      await server.stop()
    }
  })

  it("the same turn over the examples' catalog (serve's default module, 55 plugins)", async () => {
    const server = await start({ plugins: [...examplePlugins] })
    try {
      const u = await user(server.app.oracleDid)
      const seen = await collect(
        (await stream(server.url, "cat", u.headers, "What's the weather in Berlin?")).events
      )
      // Consecutive answer chunks shown as one `message`.
      const kinds = seen.map((e) => (e._tag === "tool_call" ? `${e.toolName}:${e.status}` : e._tag))
      expect(kinds.filter((k, i) => k !== "message" || kinds[i - 1] !== "message")).toEqual([
        "run",
        "reasoning",
        "load_capability:isRunning",
        "load_capability:done",
        "reasoning",
        "get_current_weather:isRunning",
        "get_current_weather:done",
        "reasoning",
        "message",
        "done"
      ])
      expect(reasoningOf(seen)).toEqual(WEATHER_REASONING)
      // Reasoning never leaks into the answer.
      expect(answerOf(seen)).not.toContain("fits")
    } finally {
      await server.stop()
    }
  })

  it("the answer streams as several `message` chunks, after the tool calls, then done", async () => {
    const server = await start()
    try {
      const u = await user(server.app.oracleDid)
      const seen = await collect(
        (await stream(server.url, "chunks", u.headers, "What's the weather in Berlin?")).events
      )
      const chunks = seen.filter((e) => e._tag === "message")
      expect(chunks.length).toBeGreaterThan(1)
      const lastToolCall = seen.map((e) => e._tag).lastIndexOf("tool_call")
      const firstChunk = seen.findIndex((e) => e._tag === "message")
      expect(firstChunk).toBeGreaterThan(lastToolCall)
      // Chunks are contiguous and end right before `done`.
      expect(seen.slice(firstChunk, firstChunk + chunks.length).every((e) => e._tag === "message")).toBe(true)
      expect(seen.slice(firstChunk + chunks.length).map((e) => e._tag)).toEqual(["done"])
      for (const c of chunks)
        expect(c).toMatchObject({ content: expect.any(String), timestamp: expect.any(String) })
      // Each tool call event is sent once: one isRunning and one done per call.
      const calls = seen.filter((e) => e._tag === "tool_call")
      expect(calls.map((e) => (e._tag === "tool_call" ? `${e.toolName}:${e.status}` : ""))).toEqual([
        "load_capability:isRunning",
        "load_capability:done",
        "get_current_weather:isRunning",
        "get_current_weather:done"
      ])
      expect(new Set(calls.map((e) => (e._tag === "tool_call" ? e.eventId : ""))).size).toBe(2)
      // The JSON (non-stream) answer of the same question is the whole text at once.
      const whole = await call(`${server.url}/messages/chunks-json`, {
        method: "POST",
        headers: u.headers,
        body: { message: "What's the weather in Berlin?" }
      })
      expect(whole.status).toBe(200)
      expect(answerOf(seen)).toBe(whole.body.message.content)
    } finally {
      await server.stop()
    }
  })

  it("without stream: JSON {message:{type,content,id}, sessionId}; a session is created on first contact", async () => {
    const server = await start()
    try {
      const u = await user(server.app.oracleDid)
      const r = await call(`${server.url}/messages/my-own-id`, {
        method: "POST",
        headers: u.headers,
        body: { message: "What's the weather in Berlin?" }
      })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ sessionId: "my-own-id", message: { type: "ai" } })
      expect(r.body.message.content).toContain("Berlin")
      expect(typeof r.body.message.id).toBe("string")
      expect(r.headers.get("server-timing")).toMatch(
        /auth;dur=.*limit;dur=.*load;dur=.*agent;dur=.*save;dur=/
      )
      const listed = await call(`${server.url}/sessions`, { headers: u.headers })
      expect(listed.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["my-own-id"])
      const deleted = await call(`${server.url}/sessions/my-own-id`, { method: "DELETE", headers: u.headers })
      expect(deleted).toMatchObject({ status: 200, body: { success: true } })
      expect((await call(`${server.url}/messages/my-own-id`, { headers: u.headers })).status).toBe(404)
    } finally {
      await server.stop()
    }
  })

  it("a post is the session's activity: lastUpdatedAt moves when the message is posted, not when the turn ends", async () => {
    // The sessions' clock: each step below happens at a later, known time.
    const clock = Effect.runSync(Clock.makeTest(Date.now()))
    const later = () => Effect.runPromise(clock.advance(5))
    const server = await start({ plugins: [weather, slowJob], clock: Layer.succeed(Clock.Clock, clock) })
    try {
      const u = await user(server.app.oracleDid)
      const older = await newSession(server.url, u.headers)
      await later()
      const newer = await newSession(server.url, u.headers)
      const listed = async () =>
        (await call(`${server.url}/sessions`, { headers: u.headers })).body.sessions as Array<{
          sessionId: string
          lastUpdatedAt: string
        }>
      expect((await listed()).map((s) => s.sessionId)).toEqual([newer, older])

      await later()
      const posted = Effect.runSync(clock.now())
      const { events } = await stream(server.url, older, u.headers, "Run the slow job")
      const it = events[Symbol.asyncIterator]()
      const seen: Array<string> = []
      while (seen.at(-1) !== "tool_call") seen.push((await it.next()).value._tag)
      // The turn is still running: the session it was posted to is already the most recent.
      const during = await listed()
      expect(during.map((s) => s.sessionId)).toEqual([older, newer])
      const at = Date.parse(during[0]!.lastUpdatedAt)
      expect(at).toBe(posted)
      await later() // the turn ends at a later time than it was posted
      await call(`${server.url}/messages/abort`, {
        method: "POST",
        headers: u.headers,
        body: { sessionId: older }
      })
      for (let next = await it.next(); next.done !== true; next = await it.next()) seen.push(next.value._tag)
      expect(seen.at(-1)).toBe("done")
      // Ending the turn does not move it again.
      expect(Date.parse((await listed())[0]!.lastUpdatedAt)).toBe(at)
    } finally {
      await server.stop()
    }
  })

  it("sends the headers at once, before the model has said anything", async () => {
    let open!: () => void
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    let modelCalled!: () => void
    const called = new Promise<void>((resolve) => {
      modelCalled = resolve
    })
    // A model whose first token is a long way off (a real provider thinking); `bindTools` makes
    // the copy the agent calls, so each copy waits too.
    const gated = (m: ScriptedChatModel): ScriptedChatModel => {
      const generate = m._generate.bind(m)
      const chunks = m._streamResponseChunks.bind(m)
      const bind = m.bindTools.bind(m)
      m._generate = async (...args) => {
        modelCalled()
        await gate
        return generate(...args)
      }
      m._streamResponseChunks = async function* (...args) {
        modelCalled()
        await gate
        yield* chunks(...args)
      }
      m.bindTools = (...args) => gated(bind(...args))
      return m
    }
    const model = gated(ScriptedChatModel.script(["Hello, slowly."]))
    // Heartbeats every 50 ms: the server's own marks in the stream, to read up to.
    const server = await start({ model, env: { SSE_HEARTBEAT_MS: "50" } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const response = await fetch(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: JSON.stringify({ message: "hi", stream: true })
      })
      const [bytes, forEvents] = response.body!.tee()
      const events = readSse(forEvents)
      // fetch resolved: the status and headers arrived while the model was still waiting.
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      expect(response.headers.get("x-request-id")).toBeTruthy()
      // The run's own frame comes at once, naming the run the headers named…
      const iterator = events[Symbol.asyncIterator]()
      expect((await iterator.next()).value).toEqual({
        _tag: "run",
        runId: response.headers.get("x-run-id"),
        requestId: response.headers.get("x-request-id"),
        resumed: false,
        message: expect.any(String)
      })
      // …and no event of the turn yet: the model is waiting (called, gate shut), and up to two
      // heartbeats the server wrote since, the stream holds the run frame only.
      await called
      const first = iterator.next()
      const reader = bytes.getReader()
      let text = ""
      while (text.split(": heartbeat").length - 1 < 2)
        text += new TextDecoder().decode((await reader.read()).value)
      const frames = text.split("\n\n").filter((f) => f.includes("data:"))
      expect(frames).toHaveLength(1)
      expect(frames[0]).toContain("event: run")
      void reader.cancel()
      open()
      const seen = [(await first).value, ...(await collect({ [Symbol.asyncIterator]: () => iterator }))]
      expect(
        seen
          .filter((e) => e._tag === "message")
          .map((e) => (e as { content: string }).content)
          .join("")
      ).toBe("Hello, slowly.")
      expect(seen.at(-1)?._tag).toBe("done")
    } finally {
      open()
      await server.stop()
    }
  })

  it("sends `: heartbeat` comments while a turn runs", async () => {
    const server = await start({ plugins: [weather, slowJob], env: { SSE_HEARTBEAT_MS: "50" } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const response = await fetch(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: JSON.stringify({ message: "Run the slow job", stream: true })
      })
      const reader = response.body!.getReader()
      let text = ""
      while (!text.includes(": heartbeat\n\n")) text += new TextDecoder().decode((await reader.read()).value)
      await call(`${server.url}/messages/abort`, {
        method: "POST",
        headers: u.headers,
        body: { sessionId: session }
      })
      while (true) {
        const { value, done } = await reader.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
      expect(text).toMatch(
        /\nid: \d+\nevent: done\ndata: \{"status":"aborted","partialText":"","reason":"user"\}\n\n$/
      )
    } finally {
      await server.stop()
    }
  })
})

describe("abort", () => {
  it("mid-stream: the stream ends with done, the thread stays consistent and takes the next turn", async () => {
    const server = await start({ plugins: [weather, slowJob] })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const { events } = await stream(server.url, session, u.headers, "Run the slow job")
      const seen = []
      for await (const e of events) {
        seen.push(e)
        if (e._tag === "tool_call" && e.toolName === "run_slow_job" && e.status === "isRunning") {
          const aborted = await call(`${server.url}/messages/abort`, {
            method: "POST",
            headers: u.headers,
            body: { sessionId: session }
          })
          expect(aborted).toMatchObject({ status: 200, body: { success: true } })
        }
      }
      expect(toolCalls(seen)).toContain("run_slow_job")
      expect(seen.at(-1)?._tag).toBe("done")
      expect(seen.filter((e) => e._tag === "done")).toHaveLength(1)
      // Nothing left to abort.
      const again = await call(`${server.url}/messages/abort`, {
        method: "POST",
        headers: u.headers,
        body: { sessionId: session }
      })
      expect(again.body).toEqual({ success: false })

      const history = await call(`${server.url}/messages/${session}`, { headers: u.headers })
      expect(consistent(history.body.messages)).toBe(true)

      const next = await collect(
        (await stream(server.url, session, u.headers, "What's the weather in Berlin?")).events
      )
      expect(toolCalls(next)).toEqual(["load_capability", "get_current_weather"])
      expect(next.at(-1)?._tag).toBe("done")
      expect(next.some((e) => e._tag === "error")).toBe(false)
      const after = await call(`${server.url}/messages/${session}`, { headers: u.headers })
      expect(consistent(after.body.messages)).toBe(true)
      expect(after.body.messages.length).toBeGreaterThan(history.body.messages.length)
    } finally {
      await server.stop()
    }
  })

  it("a client that disconnects does not stop the run: a rejoin follows it, and an abort ends it consistently", async () => {
    const server = await start({ plugins: [weather, slowJob] })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const controller = new AbortController()
      const served = serverSocketOf("POST", `/messages/${session}`)
      const response = await fetch(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: JSON.stringify({ message: "Run the slow job", stream: true }),
        signal: controller.signal
      })
      const reader = response.body!.getReader()
      let text = ""
      while (!text.includes("run_slow_job")) text += new TextDecoder().decode((await reader.read()).value)
      const runId = response.headers.get("x-run-id")!
      controller.abort()
      // The client is gone (the server's socket of that request has closed); the run goes on,
      // and a rejoin follows it.
      const socket = await served
      if (!socket.destroyed) await new Promise((r) => socket.once("close", r))
      const going = await call(`${server.url}/sessions/${session}/run`, { headers: u.headers })
      expect(going.body.run).toMatchObject({ runId, status: "running" })
      const rejoined = collect(
        readSse((await fetch(`${server.url}/runs/${runId}?after=0`, { headers: u.headers })).body!)
      )
      await call(`${server.url}/messages/abort`, {
        method: "POST",
        headers: u.headers,
        body: { sessionId: session }
      })
      expect((await rejoined).at(-1)).toMatchObject({ _tag: "done", status: "aborted" })
      // The stored thread gets closed calls.
      let messages: Array<{ type: string; content: string }> = []
      for (let i = 0; i < 100; i++) {
        messages = (await call(`${server.url}/messages/${session}`, { headers: u.headers })).body.messages
        if (messages.some((m) => m.type === "tool")) break
        await new Promise((r) => setTimeout(r, 50))
      }
      expect(consistent(messages as never)).toBe(true)
      expect(messages.some((m) => m.type === "tool")).toBe(true)
    } finally {
      await server.stop()
    }
  })
})

describe("checkpointerForUser", () => {
  it("overrides the saver of that user only", async () => {
    const memory = new MemorySaver()
    let alice = ""
    const asked: Array<string> = []
    const server = await start({
      hooks: {
        checkpointerForUser: (did) => {
          asked.push(did)
          return did === alice ? memory : undefined
        }
      }
    })
    try {
      const a = await user(server.app.oracleDid)
      const b = await user(server.app.oracleDid)
      alice = a.did
      for (const u of [a, b]) {
        const done = await collect(
          (await stream(server.url, `s-${u === a ? "a" : "b"}`, u.headers, "What's the weather in Berlin?"))
            .events
        )
        expect(done.at(-1)?._tag).toBe("done")
      }
      expect(await memory.getTuple({ configurable: { thread_id: "s-a" } })).toBeDefined()
      expect(await memory.getTuple({ configurable: { thread_id: "s-b" } })).toBeUndefined()
      expect(asked).toContain(a.did)
      expect(asked).toContain(b.did)
      // Bob's thread went to the default per-user SQLite store and is served from it.
      const bobHistory = await call(`${server.url}/messages/s-b`, { headers: b.headers })
      expect(bobHistory.body.messages).toHaveLength(6)
      const aliceHistory = await call(`${server.url}/messages/s-a`, { headers: a.headers })
      expect(aliceHistory.body.messages).toHaveLength(6)
    } finally {
      await server.stop()
    }
  })
})
