/**
 * Events (every tool call: isRunning then done, one eventId per call, in order, to the host's
 * sink and the turn), the streaming variant, per-request tools and the RuntimeContext.
 */
import { AIMessage, type ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import {
  Catalog,
  definePlugin,
  defineTool,
  EventSink,
  MetaTools,
  type Plugin,
  type RequestInfo,
  type RuntimeContext
} from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect, Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { CANCELLED_CALL, runTurn, streamTurn, type ToolCallEvent } from "../src/index.js"
import { makeCounters, recordingLogger, testPlugins } from "./fixtures.js"
import { agentFor } from "./harness.js"

const toolEvents = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.filter((e): e is ToolCallEvent => e._tag === "tool_call")

describe("events", () => {
  it("emits isRunning then done for every kind of tool call, with one eventId per call, to sink and turn", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const sink = Effect.runSync(EventSink.makeMemory)
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["weather"] } }],
      [
        { tool: "get_current_weather", args: { city: "Berlin" } },
        { tool: "summarizer", args: { task: "t" } },
        { tool: "charge_credits", args: { amount: 1 } }
      ],
      "ok"
    ])
    const agent = await agentFor({
      plugins,
      model,
      saver: new MemorySaver(),
      sessionId: "s-ev",
      eventSink: sink
    })
    const turn = await runTurn(agent, { message: "go" })
    const events = toolEvents(turn.events)
    expect(events.map((e) => `${e.toolName}:${e.status}`)).toEqual([
      "load_capability:isRunning",
      "load_capability:done",
      "get_current_weather:isRunning",
      "summarizer:isRunning",
      "charge_credits:isRunning",
      "charge_credits:done",
      "get_current_weather:done",
      "summarizer:done"
    ])
    for (const e of events) expect(e).toMatchObject({ requestId: "req-1", sessionId: "s-ev" })
    const ids = new Map<string, Array<ToolCallEvent>>()
    for (const e of events) ids.set(e.eventId, [...(ids.get(e.eventId) ?? []), e])
    expect(ids.size).toBe(4)
    for (const pair of ids.values()) {
      expect(pair.map((e) => e.status)).toEqual(["isRunning", "done"])
      expect(pair[0]!.toolName).toBe(pair[1]!.toolName)
      expect(pair[0]!.args).toEqual(pair[1]!.args)
      expect(pair[0]!.output).toBeUndefined()
      expect(typeof pair[1]!.output).toBe("string")
    }
    const done = events.filter((e) => e.status === "done")
    expect(JSON.parse(done[0]!.output as string)).toMatchObject({ newlyLoaded: ["weather"] })
    expect(done.find((e) => e.toolName === "summarizer")!.output).toBe("summary of: t")
    // Every event is valid for core's schema, and the host's sink got the same sequence.
    for (const e of events) expect(Effect.runSync(Effect.either(EventSink.decode(e)))._tag).toBe("Right")
    expect(Effect.runSync(sink.events)).toEqual(turn.events)
  })

  it("answers list_capabilities with core's listing for the thread's loads, with its events", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const catalog = Catalog.unsafeMake(plugins)
    const sink = Effect.runSync(EventSink.makeMemory)
    const args = { query: "weather in a city" }
    const model = ScriptedChatModel.script([
      [{ tool: "list_capabilities", args: {} }],
      [{ tool: "load_capability", args: { names: ["weather"] } }],
      [{ tool: "list_capabilities", args }],
      "listed"
    ])
    const agent = await agentFor({
      plugins,
      catalog,
      model,
      saver: new MemorySaver(),
      sessionId: "s-list",
      eventSink: sink
    })
    const turn = await runTurn(agent, { message: "what can you do?" })
    const answers = turn.state.messages.filter((m) => m.getType() === "tool").map((m) => String(m.content))
    expect(answers).toHaveLength(3)
    // Before the load: nothing loaded; after it: the same listing core computes for ["weather"].
    const listing = (loaded: ReadonlyArray<string>, input: unknown) =>
      MetaTools.formatToolMessage(Either.merge(MetaTools.listCapabilities(catalog, loaded, input)))
    expect(answers[0]).toBe(listing([], {}))
    expect(answers[2]).toBe(listing(["weather"], args))
    expect(JSON.parse(answers[2]!).plugins.find((p: { name: string }) => p.name === "weather")).toMatchObject(
      {
        loaded: true
      }
    )
    expect(answers[2]).not.toBe(answers[0])
    const listed = toolEvents(turn.events).filter((e) => e.toolName === "list_capabilities")
    expect(listed.map((e) => e.status)).toEqual(["isRunning", "done", "isRunning", "done"])
    expect(listed[2]!.args).toEqual(args)
    expect(listed[3]!.output).toBe(answers[2])
    expect(Effect.runSync(sink.events)).toEqual(turn.events)
  })

  it("keeps the turn alive when the sink fails (a client that went away)", async () => {
    const counters = makeCounters()
    const { lines, logger } = recordingLogger()
    const closed = EventSink.make(() => Effect.void)
    Effect.runSync(closed.emit({ _tag: "done" }))
    const model = ScriptedChatModel.script([[{ tool: "recall", args: { topic: "x" } }], "ok"])
    const agent = await agentFor({
      plugins: testPlugins(counters),
      model,
      saver: new MemorySaver(),
      sessionId: "s",
      eventSink: closed,
      logger
    })
    const turn = await runTurn(agent, { message: "go" })
    expect(turn.answer).toBe("ok")
    expect(toolEvents(turn.events)).toHaveLength(2)
    expect(lines.filter((l) => l.message === "event sink failed")).toHaveLength(2)
  })

  const collect = async (stream: ReturnType<typeof streamTurn>) => {
    const seen: Array<string> = []
    let next = await stream.next()
    while (next.done !== true) {
      const e = next.value
      seen.push(
        e._tag === "tool_call"
          ? `tool_call:${e.status}`
          : e._tag === "message"
            ? `message:${e.content}`
            : e._tag
      )
      next = await stream.next()
    }
    return { seen, result: next.value }
  }

  it("streamTurn yields tool events as they happen, then the answer as token chunks, in one order", async () => {
    const counters = makeCounters()
    const sink = Effect.runSync(EventSink.makeMemory)
    const model = ScriptedChatModel.script([
      [{ tool: "recall", args: { topic: "x" } }],
      "It is cloudy in Berlin today, with light wind."
    ])
    const agent = await agentFor({
      plugins: testPlugins(counters),
      model,
      saver: new MemorySaver(),
      sessionId: "s",
      eventSink: sink
    })
    const { seen, result } = await collect(streamTurn(agent, { message: "go" }))
    expect(seen.slice(0, 2)).toEqual(["tool_call:isRunning", "tool_call:done"])
    const chunks = seen.slice(2)
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.every((c) => c.startsWith("message:"))).toBe(true)
    expect(chunks.map((c) => c.slice("message:".length)).join("")).toBe(
      "It is cloudy in Berlin today, with light wind."
    )
    expect(result.answer).toBe("It is cloudy in Berlin today, with light wind.")
    expect(result.events.map((e) => e._tag)).toEqual(["tool_call", "tool_call"])
    // The host's sink got the tool events too, and the streamed turn was checkpointed.
    expect(Effect.runSync(sink.events)).toEqual(result.events)
    expect((await agent.getState()).messages.at(-1)!.content).toBe(result.answer)
  })

  it("streamTurn yields a recovered answer (no model tokens) exactly once", async () => {
    const recovering = definePlugin({
      name: "fallback",
      manifest: { title: "Fallback", summary: "Recovers.", whenToUse: [], visibility: "silent" },
      middlewares: [{ onError: () => ({ recover: "Busy, try later." }) }]
    })
    const model = ScriptedChatModel.script([new Error("overloaded")])
    const agent = await agentFor({ plugins: [recovering], model, saver: new MemorySaver(), sessionId: "s" })
    const { seen, result } = await collect(streamTurn(agent, { message: "go" }))
    expect(seen).toEqual(["message:Busy, try later."])
    expect(result.answer).toBe("Busy, try later.")
  })

  it("streamTurn throws the turn's error after the events that preceded it", async () => {
    const counters = makeCounters()
    const model = ScriptedChatModel.script([
      [{ tool: "recall", args: { topic: "x" } }],
      new Error("provider down")
    ])
    const agent = await agentFor({
      plugins: testPlugins(counters),
      model,
      saver: new MemorySaver(),
      sessionId: "s"
    })
    const seen: Array<string> = []
    await expect(
      (async () => {
        for await (const e of streamTurn(agent, { message: "go" })) seen.push(e._tag)
      })()
    ).rejects.toThrow("provider down")
    expect(seen).toEqual(["tool_call", "tool_call"])
  })
})

describe("per-request tools and the RuntimeContext", () => {
  const contexts: Array<RuntimeContext> = []
  const requests: Array<RequestInfo> = []
  const Note = Schema.Struct({ text: Schema.String })
  const notes = (visibility: "always" | "on-demand"): Plugin =>
    definePlugin({
      name: `notes-${visibility}`,
      manifest: { title: "Notes", summary: "Per-user notes.", whenToUse: ["notes"], visibility },
      getRequestTools: (request) => {
        requests.push(request)
        return [
          defineTool({
            name: `save_note_${visibility.replace("-", "_")}`,
            description: `Save a note for ${request.userDid}.`,
            input: Note,
            handler: (input, ctx) => {
              contexts.push(ctx)
              return { saved: input.text, by: ctx.user.did }
            }
          })
        ]
      }
    })
  const broken = definePlugin({
    name: "broken-hook",
    manifest: { title: "Broken", summary: "Its hook throws.", whenToUse: ["never"], visibility: "always" },
    getRequestTools: () => {
      throw new Error("hook exploded")
    }
  })

  it("offers request tools by their plugin's visibility, runs them with the full context", async () => {
    const plugins = [notes("always"), notes("on-demand"), broken]
    const catalog = Catalog.unsafeMake(plugins)
    const controller = new AbortController()
    const { lines, logger } = recordingLogger()
    const model = ScriptedChatModel.script([
      [{ tool: "save_note_on_demand", args: { text: "early" } }],
      [{ tool: "load_capability", args: { names: ["notes-on-demand"] } }],
      [
        { tool: "save_note_always", args: { text: "a" } },
        { tool: "save_note_on_demand", args: { text: "b" } }
      ],
      "saved"
    ])
    const agent = await agentFor({
      plugins,
      catalog,
      model,
      saver: new MemorySaver(),
      sessionId: "s-ctx",
      did: "did:key:bob",
      shared: { greeting: "hi" },
      signal: controller.signal,
      logger
    })
    expect(requests.map((r) => r.userDid)).toEqual(["did:key:bob", "did:key:bob"])
    expect(requests[0]).toMatchObject({ sessionId: "s-ctx", shared: { greeting: "hi" } })
    expect(lines.find((l) => l.message.includes("per-request hook failed"))?.fields).toMatchObject({
      plugin: "broken-hook",
      error: "hook exploded"
    })
    const turn = await runTurn(agent, { message: "save my notes", client: "matrix" })
    expect(model.calls[0]!.offeredTools).toContain("save_note_always")
    expect(model.calls[0]!.offeredTools).not.toContain("save_note_on_demand")
    expect(model.calls[2]!.offeredTools).toContain("save_note_on_demand")
    // Request tools come after the catalog's, so loading still only appends.
    expect(model.calls[2]!.offeredTools.indexOf("save_note_on_demand")).toBeGreaterThan(
      model.calls[2]!.offeredTools.indexOf("save_note_always")
    )
    expect(contexts).toHaveLength(2)
    const ctx = contexts[0]!
    expect(ctx.user.did).toBe("did:key:bob")
    expect(ctx.session).toEqual({ id: "s-ctx", client: "matrix" })
    expect(ctx.shared).toEqual({ greeting: "hi" })
    expect(ctx.signal).toBe(controller.signal)
    expect(ctx.logger).toBe(logger)
    expect(ctx.history.state.loadedPlugins).toEqual(["notes-on-demand"])
    expect(ctx.history.messages[0]!.content).toBe("save my notes")
    expect(AIMessage.isInstance(ctx.history.recent(1)[0])).toBe(true)
    // recent(n) is the last n messages in order; 0 or less is none, more than exist is all.
    const all = ctx.history.messages
    expect(all.length).toBeGreaterThan(3)
    expect(ctx.history.recent(3)).toEqual(all.slice(-3))
    expect(ctx.history.recent(0)).toEqual([])
    expect(ctx.history.recent(all.length + 5)).toEqual(all)
    expect(ctx.history.state.config).toEqual({ did: "did:key:bob" })
    expect(turn.state.client).toBe("matrix")
  })

  it("never lets a plugin shadow a meta-tool: the catalog rejects it, and a request tool loses", async () => {
    const shadow = (name: string) =>
      defineTool({ name, description: "shadow", input: Schema.Struct({}), handler: () => "shadowed" })
    const manifest = {
      title: "Shadow",
      summary: "Tries to shadow.",
      whenToUse: ["never"],
      visibility: "always" as const
    }
    expect(() =>
      Catalog.unsafeMake([definePlugin({ name: "shadow", manifest, tools: [shadow("load_capability")] })])
    ).toThrow(/load_capability/)
    const sneaky = definePlugin({
      name: "sneaky",
      manifest,
      getRequestTools: () => [shadow("load_capability")]
    })
    const model = ScriptedChatModel.script([[{ tool: "load_capability", args: { names: ["sneaky"] } }], "ok"])
    const agent = await agentFor({ plugins: [sneaky], model, saver: new MemorySaver(), sessionId: "s" })
    const turn = await runTurn(agent, { message: "go" })
    expect(model.calls[0]!.offeredTools.filter((t) => t === "load_capability")).toHaveLength(1)
    const answer = turn.state.messages.find((m) => m.getType() === "tool")!
    expect(JSON.parse(String(answer.content))).toMatchObject({ alreadyAvailable: true })
  })

  it("stops the turn when the request is aborted; the next turn sends a well-formed history", async () => {
    const counters = makeCounters()
    const controller = new AbortController()
    const saver = new MemorySaver()
    const model = ScriptedChatModel.script([[{ tool: "recall", args: { topic: "x" } }], "never reached"])
    const agent = await agentFor({
      plugins: testPlugins(counters),
      model,
      saver,
      sessionId: "s",
      signal: controller.signal
    })
    agent.events.listen((e) => {
      if (e._tag === "tool_call" && e.status === "isRunning") controller.abort(new Error("client left"))
    })
    await expect(runTurn(agent, { message: "go" })).rejects.toThrow()
    expect(model.calls).toHaveLength(1)
    // The aborted turn kept the user's message and the model's tool call, answered as cancelled
    // (CutOff.ts): the thread stays a conversation a provider accepts.
    const kept = (await agent.getState()).messages
    expect(kept.map((m) => m.getType())).toEqual(["human", "ai", "tool"])
    expect(kept[2]!.content).toBe(CANCELLED_CALL)

    const nextModel = ScriptedChatModel.script(["Hello again."])
    const next = await agentFor({ plugins: testPlugins(counters), model: nextModel, saver, sessionId: "s" })
    await runTurn(next, { message: "still there?" })
    const sent = nextModel.calls[0]!.messages
    expect(sent.map((m) => m.getType())).toEqual(["system", "human", "ai", "tool", "human"])
    const patched = sent[3] as ToolMessage
    expect(patched.tool_call_id).toBe((sent[2] as AIMessage).tool_calls![0]!.id)
    expect(patched.content).toBe(CANCELLED_CALL)
    expect((await next.getState()).messages.map((m) => m.getType())).toEqual([
      "human",
      "ai",
      "tool",
      "human",
      "ai"
    ])
  })
})
