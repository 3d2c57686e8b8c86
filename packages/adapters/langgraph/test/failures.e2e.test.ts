/**
 * End-to-end failure modes (docs/spec/pipeline.md#failure-modes) on both checkpointers: the
 * validation retry, a throwing handler, a failing sub-agent init, and a checkpointer whose load
 * fails.
 */
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { ScriptedChatModel } from "@plugboard/models"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { runTurn, type ToolArtifact, TurnSaver, threadMessages } from "../src/index.js"
import { makeCounters, recordingLogger, testPlugins } from "./fixtures.js"
import { agentFor, savers } from "./harness.js"

const toolMessages = (messages: ReadonlyArray<BaseMessage>) =>
  messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m))
const outcome = (m: ToolMessage) => (m.artifact as ToolArtifact).plugboard.outcome
const load = [{ tool: "load_capability", args: { names: ["weather"] } }]
const weather = (args: Record<string, unknown>) => [{ tool: "get_current_weather", args }]

describe.each(savers)("failure modes with %s", (_name, makeSaver) => {
  let fixture: ReturnType<typeof makeSaver>
  beforeEach(() => {
    fixture = makeSaver()
  })
  afterEach(() => fixture.close())

  it("retries a validation error exactly once: the second consecutive failure is final", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      load,
      weather({}),
      weather({ town: "Berlin" }),
      weather({ city: "Berlin" }),
      "I could not look it up."
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "Weather?" })
    const [, first, second, third] = toolMessages(turn.state.messages)
    expect(outcome(first!)).toBe("invalid_input")
    expect(String(first!.content)).toContain("city")
    expect(String(first!.content)).toContain("one retry")
    expect(outcome(second!)).toBe("invalid_input_final")
    expect(String(second!.content)).toContain("will not be run again in this turn")
    // Even a valid call is not run after the final failure: the one retry was used.
    expect(outcome(third!)).toBe("blocked_after_invalid_input")
    expect(counters.calls.get_current_weather).toBeUndefined()

    // The budget is per turn: the next turn may call the tool again.
    const nextModel = ScriptedChatModel.script([weather({ city: "Berlin" }), "Cloudy."])
    const next = await agentFor({ plugins, model: nextModel, saver: fixture.saver, sessionId: "s1" })
    await runTurn(next, { message: "Try again" })
    expect(counters.calls.get_current_weather).toBe(1)
  })

  it("runs the retry when it is valid, and a valid call resets the count", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      load,
      weather({}),
      weather({ city: "Berlin" }),
      weather({ city: 3 }),
      weather({ city: "Tokyo" }),
      "Done."
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "Weather?" })
    expect(toolMessages(turn.state.messages).slice(1).map(outcome)).toEqual([
      "invalid_input",
      "ok",
      "invalid_input",
      "ok"
    ])
    expect(counters.calls.get_current_weather).toBe(2)
  })

  it("counts failures of one batch in order: two invalid calls in one answer use up the retry", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      load,
      [
        { tool: "get_current_weather", args: {} },
        { tool: "get_current_weather", args: { city: 1 } }
      ],
      weather({ city: "Berlin" }),
      "No."
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "Weather?" })
    expect(toolMessages(turn.state.messages).slice(1).map(outcome)).toEqual([
      "invalid_input",
      "invalid_input_final",
      "blocked_after_invalid_input"
    ])
    expect(counters.calls.get_current_weather).toBeUndefined()
  })

  it("resets the count on a valid call within the same batch too", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      load,
      [
        { tool: "get_current_weather", args: {} },
        { tool: "get_current_weather", args: { city: "Berlin" } },
        { tool: "get_current_weather", args: { city: null } }
      ],
      "Done."
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "Weather?" })
    expect(toolMessages(turn.state.messages).slice(1).map(outcome)).toEqual([
      "invalid_input",
      "ok",
      "invalid_input"
    ])
    expect(counters.calls.get_current_weather).toBe(1)
  })

  it("refuses a malformed call without a tool name instead of failing the turn", async () => {
    const counters = makeCounters()
    const model = ScriptedChatModel.script([{ tool: undefined as unknown as string, args: {} }, "sorry"])
    const agent = await agentFor({
      plugins: testPlugins(counters),
      model,
      saver: fixture.saver,
      sessionId: "s1"
    })
    const turn = await runTurn(agent, { message: "?" })
    expect(turn.answer).toBe("sorry")
    expect(outcome(toolMessages(turn.state.messages)[0]!)).toBe("refused")
  })

  it("turns a throwing handler into a ToolMessage and the turn goes on", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([[{ tool: "explode", args: {} }], "The service is down."])
    const { lines, logger } = recordingLogger()
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1", logger })
    const turn = await runTurn(agent, { message: "Explode" })
    expect(turn.answer).toBe("The service is down.")
    const [failed] = toolMessages(turn.state.messages)
    expect(failed!.content).toBe("Tool 'explode' failed: upstream is down")
    expect(failed!.status).toBe("error")
    expect(outcome(failed!)).toBe("handler_error")
    expect(counters.calls.explode).toBe(1)
    // The model saw the failure on its next call.
    expect(model.calls[1]!.messages.at(-1)!.content).toBe("Tool 'explode' failed: upstream is down")
    expect(lines.some((l) => l.level === "warn" && l.message.includes("handler failed"))).toBe(true)
  })

  it("skips a sub-agent whose init fails, logs it, and the turn goes on with the others", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      [{ tool: "summarizer", args: { task: "a long text" } }],
      [{ tool: "translator", args: { task: "hallo" } }],
      "Summarised."
    ])
    const { lines, logger } = recordingLogger()
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1", logger })
    const turn = await runTurn(agent, { message: "Summarise" })
    expect(turn.answer).toBe("Summarised.")
    expect(model.calls[0]!.offeredTools).toContain("summarizer")
    expect(model.calls[0]!.offeredTools).not.toContain("translator")
    expect(counters.calls["summarizer.init"]).toBe(1)
    expect(counters.calls["translator.init"]).toBe(1)
    const [summary, refused] = toolMessages(turn.state.messages)
    expect(summary!.content).toBe("summary of: a long text")
    expect(outcome(refused!)).toBe("refused")
    expect(counters.calls.translator).toBeUndefined()
    const logged = lines.find((l) => l.message.includes("sub-agent init failed"))
    expect(logged?.fields).toMatchObject({ subAgent: "translator", error: "translation service unavailable" })
    // Init ran once for the request, not once per model call.
    expect(model.calls).toHaveLength(3)
    expect(counters.calls["summarizer.init"]).toBe(1)
  })

  it("logs a failing checkpointer load and proceeds on an empty state; its save never hides the history", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const seedModel = ScriptedChatModel.script([load, "loaded"])
    await runTurn(await agentFor({ plugins, model: seedModel, saver: fixture.saver, sessionId: "s1" }), {
      message: "load weather"
    })
    const history = await fixture.saver.getTuple({ configurable: { thread_id: "s1" } })
    const broken = brokenLoads(fixture.saver)
    const { lines, logger } = recordingLogger()
    const model = ScriptedChatModel.script(["Fresh start."])
    const agent = await agentFor({ plugins, model, saver: broken, sessionId: "s1", logger })
    // The turn runs on an empty state ...
    await expect(runTurn(agent, { message: "Hello again" })).rejects.toThrow(
      /not saved: the thread's state could not be read when the turn began, and it still cannot be read \(disk on fire\)/
    )
    expect(model.calls[0]!.messages.map((m) => m.getType())).toEqual(["system", "human"])
    expect(model.calls[0]!.offeredTools).not.toContain("get_current_weather")
    const logged = lines.find((l) => l.level === "error" && l.message.includes("checkpointer load failed"))
    expect(logged?.fields).toMatchObject({ threadId: "s1", error: "disk on fire" })
    // ... but it is not saved over a history it never saw.
    const after = await fixture.saver.getTuple({ configurable: { thread_id: "s1" } })
    expect(after?.checkpoint.id).toBe(history?.checkpoint.id)
    expect(after?.checkpoint.channel_values.loadedPlugins).toEqual(["weather"])
    // The resilient wrapper never hides a healthy load.
    const healthy = new TurnSaver(fixture.saver, logger)
    const tuple = await healthy.getTuple({ configurable: { thread_id: "s1" } })
    expect(tuple).toBeDefined()
  })

  it("a load that failed once: a thread with a history is not saved over; a new thread is saved", async () => {
    const plugins = testPlugins(makeCounters())
    await runTurn(
      await agentFor({
        plugins,
        model: ScriptedChatModel.script([load, "loaded"]),
        saver: fixture.saver,
        sessionId: "old"
      }),
      { message: "load weather" }
    )
    const history = await fixture.saver.getTuple({ configurable: { thread_id: "old" } })
    const { logger } = recordingLogger()
    const old = await agentFor({
      plugins,
      model: ScriptedChatModel.script(["Fresh start."]),
      saver: failsOnce(fixture.saver),
      sessionId: "old",
      logger
    })
    await expect(runTurn(old, { message: "Hello again" })).rejects.toThrow(/and it holds a history/)
    expect((await fixture.saver.getTuple({ configurable: { thread_id: "old" } }))?.checkpoint.id).toBe(
      history?.checkpoint.id
    )

    const fresh = await agentFor({
      plugins,
      model: ScriptedChatModel.script(["Hello, new thread."]),
      saver: failsOnce(fixture.saver),
      sessionId: "new",
      logger
    })
    const turn = await runTurn(fresh, { message: "Hi" })
    expect(turn.answer).toBe("Hello, new thread.")
    const saved = await threadMessages(fixture.saver, "new")
    expect(saved.map((m) => m.getType())).toEqual(["human", "ai"])
  })

  it("a run addressed at a checkpoint_id (a resume, a fork) whose load failed is not saved over the history either", async () => {
    const graph = (saver: BaseCheckpointSaver) =>
      new StateGraph(MessagesAnnotation)
        .addNode("reply", (state) => ({
          messages: [new AIMessage(`reply to ${String(state.messages.at(-1)?.content)}`)]
        }))
        .addEdge(START, "reply")
        .addEdge("reply", END)
        .compile({ checkpointer: saver })
    const thread = { configurable: { thread_id: "addressed" } }
    await graph(fixture.saver).invoke({ messages: [new HumanMessage("m1")] }, thread)
    await graph(fixture.saver).invoke({ messages: [new HumanMessage("m2")] }, thread)
    const head = (await fixture.saver.getTuple(thread))!
    const { logger } = recordingLogger()
    const resilient = new TurnSaver(failsOnce(fixture.saver), logger)
    const addressed = { configurable: { thread_id: "addressed", checkpoint_id: head.checkpoint.id } }
    await expect(graph(resilient).invoke({ messages: [new HumanMessage("m3")] }, addressed)).rejects.toThrow(
      /and it holds a history/
    )
    expect((await fixture.saver.getTuple(thread))?.checkpoint.id).toBe(head.checkpoint.id)
  })
})

/** A SQLite saver holding thread `sessionId` after one answered turn. */
const threadWithOneTurn = async (sessionId: string) => {
  const fixture = savers[0]![1]()
  const plugins = testPlugins(makeCounters())
  await runTurn(
    await agentFor({ plugins, model: ScriptedChatModel.script(["first"]), saver: fixture.saver, sessionId }),
    { message: "one" }
  )
  return { fixture, plugins }
}

describe("the thread is read once (TurnSaver.prefetch)", () => {
  it("a read the host made before the turn is the turn's load: the saver is not read again", async () => {
    const { fixture, plugins } = await threadWithOneTurn("p")
    try {
      let reads = 0
      const counting = new Proxy(fixture.saver, {
        get(target, prop, receiver) {
          if (prop === "getTuple") {
            return (config: Parameters<BaseCheckpointSaver["getTuple"]>[0]) => {
              reads++
              return target.getTuple(config)
            }
          }
          const value = Reflect.get(target, prop, receiver)
          return typeof value === "function" ? value.bind(target) : value
        }
      })
      const { logger } = recordingLogger()
      const saver = new TurnSaver(counting, logger)
      saver.prefetch("p", {
        _tag: "Read",
        tuple: await fixture.saver.getTuple({ configurable: { thread_id: "p" } })
      })
      const model = ScriptedChatModel.script(["second"])
      await runTurn(await agentFor({ plugins, model, saver, sessionId: "p" }), { message: "two" })
      expect(reads).toBe(0)
      expect(model.calls[0]!.messages.map((m) => m.getType())).toEqual(["system", "human", "ai", "human"])
    } finally {
      fixture.close?.()
    }
  })

  it("a prefetched read that failed is the turn's failed load: logged, empty state, history kept", async () => {
    const { fixture, plugins } = await threadWithOneTurn("q")
    try {
      const before = await fixture.saver.getTuple({ configurable: { thread_id: "q" } })
      const { logger, lines } = recordingLogger()
      const saver = new TurnSaver(fixture.saver, logger)
      saver.prefetch("q", { _tag: "Failed", error: new Error("owner check failed") })
      const model = ScriptedChatModel.script(["second"])
      await expect(
        runTurn(await agentFor({ plugins, model, saver, sessionId: "q" }), { message: "two" })
      ).rejects.toThrow(/and it holds a history/)
      expect(model.calls[0]!.messages.map((m) => m.getType())).toEqual(["system", "human"])
      expect(lines.some((l) => l.message.includes("checkpointer load failed"))).toBe(true)
      expect((await fixture.saver.getTuple({ configurable: { thread_id: "q" } }))?.checkpoint.id).toBe(
        before?.checkpoint.id
      )
    } finally {
      fixture.close?.()
    }
  })
})

/** A saver whose first read fails; everything after works. */
const failsOnce = (inner: BaseCheckpointSaver): BaseCheckpointSaver => {
  let failed = false
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "getTuple" && !failed) {
        return async () => {
          failed = true
          throw new Error("SQLITE_BUSY: database is locked")
        }
      }
      const value = Reflect.get(target, prop, receiver)
      return typeof value === "function" ? value.bind(target) : value
    }
  })
}

/** A saver whose reads fail and whose writes work. */
const brokenLoads = (inner: BaseCheckpointSaver): BaseCheckpointSaver =>
  new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "getTuple") return async () => Promise.reject(new Error("disk on fire"))
      const value = Reflect.get(target, prop, receiver)
      return typeof value === "function" ? value.bind(target) : value
    }
  })
