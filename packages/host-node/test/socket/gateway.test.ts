/**
 * The Socket.IO gateway and client-side tools, over real sockets on 127.0.0.1 (random port),
 * with the scripted model in script mode calling the client's tools.
 */
import { ToolMessage } from "@langchain/core/messages"
import { definePlugin, defineTool, type EventSink, type Plugin } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { mintInvocation } from "@plugboard/ucan"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { readSse } from "../../src/cli/Sse.js"
import { call, collect, newSession, stream, user } from "../helpers.js"
import { socketHarness } from "./harness.js"

/** An always-visible plugin with a local tool (no network). */
const echo: Plugin = definePlugin({
  name: "echo",
  manifest: {
    title: "Echo",
    summary: "Repeats a text back.",
    whenToUse: ["When asked to echo a text."],
    examples: [{ user: "Echo hello", tool: "echo_text", args: { text: "hello" } }],
    tags: ["echo"],
    visibility: "always"
  },
  tools: [
    defineTool({
      name: "echo_text",
      description: "Returns the text it is given.",
      input: Schema.Struct({ text: Schema.String }),
      handler: (input) => `echo: ${input.text}`
    })
  ]
})

const pickColor = {
  name: "pick_color",
  description: "Asks the user to pick a color in the page.",
  schema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] }
}

const harness = socketHarness()
const { connect } = harness

const boot = async (model: ScriptedChatModel, env: Record<string, string> = {}) => {
  return harness.start({ plugins: [echo], model, env: { CLIENT_TOOL_TIMEOUT_MS: "60000", ...env } })
}

/** Connects a socket; resolves with it and its `connected` payload, or rejects with the connect_error. */

/** A user with a session and a connected socket for it. */
const member = async (url: string, audience: string) => {
  const u = await user(audience)
  const sessionId = await newSession(url, u.headers)
  const invocation = await mintInvocation({ issuer: u.signer, audience, ttlSeconds: 600 })
  return { ...u, sessionId, invocation }
}

const send = (
  url: string,
  sessionId: string,
  headers: Record<string, string>,
  body: Record<string, unknown>
) => call(`${url}/messages/${sessionId}`, { method: "POST", headers, body })

const toolMessagesOf = (model: ScriptedChatModel) =>
  model.calls.flatMap((c) => c.messages).filter((m): m is ToolMessage => ToolMessage.isInstance(m))

describe("client-side tools over Socket.IO", () => {
  it("the QiForge client SDK's answers ({toolCallId, sessionId, result} and its error form) reach the model", async () => {
    const model = ScriptedChatModel.script([
      { tool: "pick_color", args: { prompt: "Your color?" } },
      { tool: "pick_color", args: { prompt: "Again?" } },
      "Done."
    ])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    let calls = 0
    socket.on("browser_tool_call", (payload: Record<string, unknown>) => {
      // As the SDK answers: the call's `toolCallId` echoed, `result`, or `result: null` + `error`.
      expect(typeof payload.toolCallId).toBe("string")
      socket.emit(
        "tool_result",
        ++calls === 1
          ? { toolCallId: payload.toolCallId, sessionId: a.sessionId, result: { color: "teal" } }
          : {
              toolCallId: payload.toolCallId,
              sessionId: a.sessionId,
              result: null,
              error: "Tool pick_color not found"
            }
      )
    })
    const answer = await send(url, a.sessionId, a.headers, { message: "Pick a color", tools: [pickColor] })
    expect(answer.status).toBe(200)
    const last = model.calls.at(-1)!.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m))
    expect(last.map((m) => [m.name, m.content, m.status])).toEqual([
      ["pick_color", '{"color":"teal"}', "success"],
      ["pick_color", "Tool 'pick_color' failed: the client reported: Tool pick_color not found", "error"]
    ])
    socket.disconnect()
    await app.close(2_000)
  })

  it("the model calls a browser tool, the socket answers, and the answer reaches the model", async () => {
    const model = ScriptedChatModel.script([
      { tool: "pick_color", args: { prompt: "Your color?" } },
      "You picked teal."
    ])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const { socket, connected } = await connect(url, { invocation: a.invocation }, a.sessionId)
    expect(connected).toMatchObject({ sessionId: a.sessionId })
    const seen: Array<Record<string, unknown>> = []
    const toolCalls: Array<Record<string, unknown>> = []
    socket.on("tool_call", (payload: Record<string, unknown>) => toolCalls.push(payload))
    socket.on("browser_tool_call", (payload: Record<string, unknown>) => {
      seen.push(payload)
      socket.emit("tool_result", { callId: payload.callId, result: { color: "teal" } })
    })
    const answer = await send(url, a.sessionId, a.headers, {
      message: "Pick a color",
      tools: [pickColor],
      requestId: "req-1"
    })
    expect(answer.status).toBe(200)
    expect(answer.body.message.content).toBe("You picked teal.")
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({
      sessionId: a.sessionId,
      requestId: "req-1",
      toolName: "pick_color",
      args: { prompt: "Your color?" }
    })
    // Offered after the server's tools (meta-tools, then the plugin's), so the cached prefix holds.
    const offered = model.calls[0]!.offeredTools
    expect(offered.at(-1)).toBe("pick_color")
    expect(offered.indexOf("echo_text")).toBeLessThan(offered.indexOf("pick_color"))
    const results = toolMessagesOf(model)
    expect(results.map((m) => [m.name, m.content])).toEqual([["pick_color", '{"color":"teal"}']])
    // A JSON turn's tool calls reach the session's sockets too.
    await expect.poll(() => toolCalls.map((p) => p.status)).toEqual(["isRunning", "done"])
    expect(toolCalls[1]).toMatchObject({
      toolName: "pick_color",
      requestId: "req-1",
      output: '{"color":"teal"}'
    })
    // Stored in the thread's state, so `GET /messages` shows the exchange.
    const history = await call(`${url}/messages/${a.sessionId}`, { headers: a.headers })
    expect(JSON.stringify(history.body)).toContain("teal")
  })

  it("an AG-UI action goes out as action_call and its action_call_result reaches the model", async () => {
    const model = ScriptedChatModel.script([{ tool: "open_panel", args: { panel: "billing" } }, "Opened."])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    socket.on("action_call", (payload: Record<string, unknown>) => {
      socket.emit("action_call_result", { callId: payload.callId, result: "panel billing is open" })
    })
    const action = {
      name: "open_panel",
      description: "Opens a panel.",
      schema: { type: "object", properties: { panel: { type: "string", enum: ["billing", "profile"] } } }
    }
    const answer = await send(url, a.sessionId, a.headers, { message: "Open billing", agActions: [action] })
    expect(answer.status).toBe(200)
    expect(toolMessagesOf(model).map((m) => m.content)).toEqual(["panel billing is open"])
  })

  it("no answer: the call times out as a ToolMessage the model sees, and the stream ends with done", async () => {
    const model = ScriptedChatModel.script([
      { tool: "pick_color", args: { prompt: "?" } },
      "The page did not answer."
    ])
    const { app, url } = await boot(model, { CLIENT_TOOL_TIMEOUT_MS: "300" })
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    let asked = 0
    socket.on("browser_tool_call", () => asked++)
    const response = await fetch(`${url}/messages/${a.sessionId}`, {
      method: "POST",
      headers: a.headers,
      body: JSON.stringify({ message: "Pick a color", stream: true, tools: [pickColor] })
    })
    const events = await collect(readSse(response.body!))
    expect(asked).toBe(1)
    expect(events.at(-1)?._tag).toBe("done")
    expect(events.some((e) => e._tag === "error")).toBe(false)
    const results = toolMessagesOf(model)
    expect(results).toHaveLength(1)
    expect(results[0]!.status).toBe("error")
    expect(String(results[0]!.content)).toContain("did not answer within 300 ms")
  })

  it("with no socket of the session connected, the call fails at once (no wait for the timeout)", async () => {
    const model = ScriptedChatModel.script([{ tool: "pick_color", args: { prompt: "?" } }, "No page."])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const answer = await send(url, a.sessionId, a.headers, { message: "Pick a color", tools: [pickColor] })
    expect(answer.status).toBe(200)
    expect(String(toolMessagesOf(model)[0]!.content)).toContain("no client of this session is connected")
  })
})

describe("a client call and the turn's end", () => {
  it("aborting the turn ends a call still waiting for the client at once", async () => {
    const model = ScriptedChatModel.script([{ tool: "pick_color", args: { prompt: "?" } }, "unused"])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    socket.on("browser_tool_call", () => {
      void send(url, "abort", a.headers, { sessionId: a.sessionId })
    })
    const started = Date.now()
    const response = await fetch(`${url}/messages/${a.sessionId}`, {
      method: "POST",
      headers: a.headers,
      body: JSON.stringify({ message: "Pick", stream: true, tools: [pickColor] })
    })
    const events = await collect(readSse(response.body!))
    expect(events.at(-1)?._tag).toBe("done")
    // The call's timeout is 60 s: the abort, not the timeout, ended it.
    expect(Date.now() - started).toBeLessThan(30_000)
    const history = await call(`${url}/messages/${a.sessionId}`, { headers: a.headers })
    expect(history.status).toBe(200)
  })

  it("shutdown fails a waiting call at once and disconnects the sockets", async () => {
    const model = ScriptedChatModel.script([{ tool: "pick_color", args: { prompt: "?" } }, "Closed."])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    const disconnected = new Promise<string>((resolve) => socket.once("disconnect", resolve))
    let closing: Promise<void> | undefined
    socket.on("browser_tool_call", () => {
      closing = app.close(20_000)
    })
    const answer = await send(url, a.sessionId, a.headers, { message: "Pick", tools: [pickColor] })
    expect(answer.status).toBe(200)
    expect(String(toolMessagesOf(model)[0]!.content)).toContain("shutting down")
    expect(await disconnected).toBe("io server disconnect")
    await closing
  })
})

describe("the gateway's handshake", () => {
  it("a socket with a bad token, or none, is refused with a clear connect_error", async () => {
    const { app, url } = await boot(ScriptedChatModel.script([]))
    const a = await member(url, app.oracleDid)
    const bad = connect(url, { invocation: "not-a-ucan" }, a.sessionId)
    await expect(bad).rejects.toMatchObject({ data: { status: 401 } })
    await expect(connect(url, {}, a.sessionId)).rejects.toThrow(/Missing credentials/)
    // A token for another audience is refused as over HTTP.
    const other = await mintInvocation({
      issuer: a.signer,
      audience: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
      ttlSeconds: 600
    })
    await expect(connect(url, { invocation: other }, a.sessionId)).rejects.toMatchObject({
      data: { status: 401 }
    })
    // A delegation in the handshake goes through the same port.
    await expect(connect(url, { ucanDelegation: "not-a-ucan" }, a.sessionId)).rejects.toMatchObject({
      data: { status: 401 }
    })
    // An unknown session is refused.
    await expect(connect(url, { invocation: a.invocation }, "no-such-session")).rejects.toThrow(/not found/)
  })

  it("a handshake takes a slot of the user's rate limit, shared with HTTP; over it: 429 with retryAfter", async () => {
    const { app, url } = await boot(ScriptedChatModel.script([]), { THROTTLE_LIMIT: "4" })
    const a = await member(url, app.oracleDid) // POST /sessions: slot 1
    await connect(url, { invocation: a.invocation }, a.sessionId) // slot 2
    await connect(url, { invocation: a.invocation }, a.sessionId) // slot 3
    const listed = await call(`${url}/sessions`, { headers: a.headers }) // slot 4, over HTTP
    expect(listed.status).toBe(200)
    const refused = connect(url, { invocation: a.invocation }, a.sessionId)
    await expect(refused).rejects.toMatchObject({
      message: expect.stringMatching(/Too many requests: at most 4 per window/),
      data: { status: 429, error: "rate-limited", retryAfter: expect.any(Number) }
    })
    const { data } = (await refused.catch((e: { data: { retryAfter: number } }) => e)) as {
      data: { retryAfter: number }
    }
    expect(data.retryAfter).toBeGreaterThanOrEqual(1)
    // HTTP is throttled too: the socket flood spent the same user's budget.
    expect((await call(`${url}/sessions`, { headers: a.headers })).status).toBe(429)
    // Another user is not affected.
    const b = await member(url, app.oracleDid)
    await expect(connect(url, { invocation: b.invocation }, b.sessionId)).resolves.toMatchObject({
      connected: { sessionId: b.sessionId }
    })
  })

  it("user B cannot join user A's session, nor answer for it", async () => {
    const model = ScriptedChatModel.script([{ tool: "pick_color", args: { prompt: "?" } }, "done"])
    const { app, url } = await boot(model, { CLIENT_TOOL_TIMEOUT_MS: "1500" })
    const a = await member(url, app.oracleDid)
    const b = await member(url, app.oracleDid)
    await expect(connect(url, { invocation: b.invocation }, a.sessionId)).rejects.toMatchObject({
      data: { status: 404, error: "session-not-found" }
    })
    // B on its own session, A on hers: B sees nothing of A's turn and its answers are ignored.
    const { socket: socketB } = await connect(url, { invocation: b.invocation }, b.sessionId)
    const { socket: socketA } = await connect(url, { invocation: a.invocation }, a.sessionId)
    const bSaw: Array<string> = []
    socketB.onAny((event: string) => bSaw.push(event))
    const acks: Array<unknown> = []
    socketA.on("browser_tool_call", async (payload: Record<string, unknown>) => {
      // B replays the call id it learnt out of band: not accepted.
      acks.push(await socketB.emitWithAck("tool_result", { callId: payload.callId, result: "forged" }))
    })
    const answer = await send(url, a.sessionId, a.headers, { message: "Pick", tools: [pickColor] })
    expect(answer.status).toBe(200)
    expect(acks).toEqual([{ accepted: false }])
    expect(bSaw).toEqual([])
    expect(String(toolMessagesOf(model)[0]!.content)).toContain("did not answer")
  })

  it("ping is answered with pong", async () => {
    const { app, url } = await boot(ScriptedChatModel.script([]))
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    const pong = new Promise<Record<string, unknown>>((resolve) => socket.once("pong", resolve))
    socket.emit("ping")
    expect(await pong).toMatchObject({ sessionId: a.sessionId })
  })
})

describe("live events", () => {
  it("the SSE stream and the socket see the same tool_call events in the same order", async () => {
    const model = ScriptedChatModel.script([
      {
        reasoning: "Echo the first two texts at once.",
        reply: [
          { tool: "echo_text", args: { text: "one" } },
          { tool: "echo_text", args: { text: "two" } }
        ]
      },
      { tool: "echo_text", args: { text: "three" } },
      { reasoning: "All three are echoed; say so.", reply: "All echoed." }
    ])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const { socket } = await connect(url, { invocation: a.invocation }, a.sessionId)
    const live: Array<Record<string, unknown>> = []
    const reasoning: Array<Record<string, unknown>> = []
    socket.on("tool_call", (p: Record<string, unknown>) => live.push(p))
    socket.on("reasoning", (p: Record<string, unknown>) => reasoning.push(p))
    const { response, events } = await stream(url, a.sessionId, a.headers, "Echo three texts")
    const sse = await collect(events)
    const requestId = response.headers.get("x-request-id")
    const sseCalls = sse.filter(
      (e): e is Extract<EventSink.AgentEvent, { _tag: "tool_call" }> => e._tag === "tool_call"
    )
    expect(sseCalls).toHaveLength(6)
    // The socket may still be receiving the last frames when the HTTP stream ends.
    await expect.poll(() => live.length).toBe(6)
    const strip = ({ _tag, ...rest }: Record<string, unknown>) => rest
    expect(live).toEqual(sseCalls.map((e) => strip(e)))
    for (const p of live) expect(p).toMatchObject({ sessionId: a.sessionId, requestId })
    // The model's own reasoning, where the model exposed it (not the step without), as the SSE has it.
    const sseReasoning = sse.filter(
      (e): e is Extract<EventSink.AgentEvent, { _tag: "reasoning" }> => e._tag === "reasoning"
    )
    expect(sseReasoning.map((e) => e.content)).toEqual([
      "Echo the first two texts at once.",
      "All three are echoed; say so."
    ])
    await expect.poll(() => reasoning.length).toBe(2)
    expect(reasoning).toEqual(sseReasoning.map((e) => ({ ...strip(e), sessionId: a.sessionId, requestId })))
  })
})

describe("client tools that are refused (400 naming the tool)", () => {
  const cases: ReadonlyArray<[string, Record<string, unknown>, RegExp]> = [
    [
      "schema not an object schema",
      { tools: [{ ...pickColor, schema: { type: "string" } }] },
      /'pick_color'.*type must be 'object'/
    ],
    [
      "properties not schemas",
      { tools: [{ ...pickColor, schema: { type: "object", properties: { a: 3 } } }] },
      /'pick_color'.*\/properties\/a must be object,boolean/
    ],
    ["no schema", { tools: [{ name: "pick_color", description: "x" }] }, /'pick_color'.*JSON Schema/],
    ["a plugin tool's name", { tools: [{ ...pickColor, name: "echo_text" }] }, /'echo_text'.*plugin 'echo'/],
    [
      "a meta-tool's name",
      { agActions: [{ ...pickColor, name: "load_capability" }] },
      /'load_capability'.*meta-tool/
    ],
    ["a duplicate name", { tools: [pickColor], agActions: [pickColor] }, /'pick_color' is given twice/],
    ["a bad name", { tools: [{ ...pickColor, name: "pick color!" }] }, /'pick color!'.*name must be/]
  ]
  it.each(cases)("%s", async (_label, extra, message) => {
    const model = ScriptedChatModel.script([])
    const { app, url } = await boot(model)
    const a = await member(url, app.oracleDid)
    const r = await send(url, a.sessionId, a.headers, { message: "hi", ...extra })
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(message)
    expect(model.calls).toHaveLength(0)
  })
})
