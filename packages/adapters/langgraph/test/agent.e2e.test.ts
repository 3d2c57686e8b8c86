/**
 * End-to-end: a scripted model drives the real graph against real checkpointers (in-memory and
 * SQLite) on the test catalog. Assertions are on what each model call was bound (the model's
 * record), what ran (handler counters), what the model was told (ToolMessages) and what was
 * checkpointed.
 */
import { type BaseMessage, ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, MetaTools, Offer, SystemPrompt } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Either } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { runTurn } from "../src/index.js"
import { makeCounters, memoryPlugin, testPlugins, weatherPlugin } from "./fixtures.js"
import { agentFor, savers } from "./harness.js"

const toolMessages = (messages: ReadonlyArray<BaseMessage>) =>
  messages.filter((m) => ToolMessage.isInstance(m))
const lastToolMessage = (messages: ReadonlyArray<BaseMessage>) => toolMessages(messages).at(-1)!
const json = (m: BaseMessage) => JSON.parse(String(m.content)) as Record<string, unknown>

describe.each(savers)("the agent loop with %s", (_name, makeSaver) => {
  let fixture: ReturnType<typeof makeSaver>
  beforeEach(() => {
    fixture = makeSaver()
  })
  afterEach(() => fixture.close())

  it("loads weather, binds its tools on the very next call, runs the tool and keeps the load per thread", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const catalog = Catalog.unsafeMake(plugins)
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["weather"] } }],
      [{ tool: "get_current_weather", args: { city: "Berlin" } }],
      "It is cloudy in Berlin."
    ])
    const agent = await agentFor({ plugins, catalog, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "What's the weather in Berlin?" })

    expect(turn.answer).toBe("It is cloudy in Berlin.")
    expect(model.calls).toHaveLength(3)
    const [first, second] = model.calls
    expect(first!.offeredTools).not.toContain("get_current_weather")
    expect(first!.offeredTools.slice(0, 2)).toEqual([MetaTools.LIST_CAPABILITIES, MetaTools.LOAD_CAPABILITY])
    // Exactly core's offer, before and after the load; the load only appends (prefix kept).
    expect(first!.offeredTools).toEqual(
      Offer.offer(catalog, [])
        .map((t) => t.name)
        .concat(["summarizer"])
    )
    expect(second!.offeredTools).toEqual(
      Offer.offer(catalog, ["weather"])
        .map((t) => t.name)
        .concat(["summarizer"])
    )
    expect(second!.offeredTools.slice(0, first!.offeredTools.length - 1)).toEqual(
      first!.offeredTools.slice(0, -1)
    )
    expect(second!.offeredTools).toContain("get_current_weather")
    expect(second!.offeredTools).toContain("get_weather_forecast")
    expect(counters.calls.get_current_weather).toBe(1)
    expect(counters.seen[0]).toMatchObject({ input: { city: "Berlin" }, session: "s1", did: "did:key:alice" })

    // The load's ToolMessage is core's text for that load.
    const [loadMsg, weatherMsg] = toolMessages(turn.state.messages)
    const expected = MetaTools.loadCapability(catalog, [], { names: ["weather"] })
    expect(loadMsg!.content).toBe(MetaTools.formatToolMessage(Either.getOrThrow(expected)))
    expect(json(loadMsg!)).toMatchObject({ newlyLoaded: ["weather"] })
    expect(JSON.parse(String(weatherMsg!.content))).toMatchObject({ city: "Berlin" })
    // The second call saw the load's result in its conversation.
    expect(second!.messages.some((m) => ToolMessage.isInstance(m) && m.name === "load_capability")).toBe(true)

    // Checkpointed, and the next turn of the thread starts from it.
    expect(turn.state.loadedPlugins).toEqual(["weather"])
    expect((await agent.getState()).loadedPlugins).toEqual(["weather"])
    if (fixture.reopen !== undefined) {
      // On disk, not only in this process: a second connection reads the same thread.
      const tuple = await fixture.reopen().getTuple({ configurable: { thread_id: "s1" } })
      expect(tuple?.checkpoint.channel_values.loadedPlugins).toEqual(["weather"])
    }
    const nextModel = ScriptedChatModel.script([
      [{ tool: "get_current_weather", args: { city: "Tokyo" } }],
      "Tokyo is warm."
    ])
    const next = await agentFor({ plugins, catalog, model: nextModel, saver: fixture.saver, sessionId: "s1" })
    const turn2 = await runTurn(next, { message: "And Tokyo?" })
    expect(nextModel.calls[0]!.offeredTools).toContain("get_current_weather")
    expect(counters.calls.get_current_weather).toBe(2)
    expect(turn2.state.loadedPlugins).toEqual(["weather"])
    expect(turn2.state.messages.filter((m) => m.getType() === "human")).toHaveLength(2)

    // A new thread starts with nothing loaded.
    const freshModel = ScriptedChatModel.script(["Hello."])
    const fresh = await agentFor({
      plugins,
      catalog,
      model: freshModel,
      saver: fixture.saver,
      sessionId: "s2"
    })
    const turn3 = await runTurn(fresh, { message: "Hi" })
    expect(freshModel.calls[0]!.offeredTools).not.toContain("get_current_weather")
    expect(turn3.state.loadedPlugins).toEqual([])
    expect((await agent.getState()).loadedPlugins).toEqual(["weather"])
  })

  it("refuses an on-demand tool called before loading, with the hint, and never runs it", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      [{ tool: "get_current_weather", args: { city: "Berlin" } }],
      "I need to load weather first."
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "Weather in Berlin?" })
    expect(counters.calls.get_current_weather).toBeUndefined()
    const refusal = lastToolMessage(turn.state.messages)
    expect(refusal.content).toBe(Offer.notLoadedMessage("get_current_weather", "weather"))
    expect(refusal.status).toBe("error")
    expect(turn.state.loadedPlugins).toEqual([])
  })

  it("never offers silent tools, refuses them when called, and load_capability of a silent plugin errors", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      [{ tool: "charge_credits", args: { amount: 5 } }],
      [{ tool: "load_capability", args: { names: ["credits"] } }],
      "done"
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "charge me" })
    for (const call of model.calls) expect(call.offeredTools).not.toContain("charge_credits")
    expect(counters.calls.charge_credits).toBeUndefined()
    const [refused, load] = toolMessages(turn.state.messages)
    expect(String(refused!.content)).toContain("internal")
    expect(json(load!)).toMatchObject({ results: [{ name: "credits", status: "error", error: "silent" }] })
    expect(load!.status).toBe("error")
    expect(turn.state.loadedPlugins).toEqual([])
  })

  it("answers alreadyAvailable for an always plugin and suggests the closest names for an unknown one", async () => {
    const counters = makeCounters()
    const plugins = testPlugins(counters)
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["memory"] } }],
      [{ tool: "load_capability", args: { names: ["wether"] } }],
      "ok"
    ])
    const agent = await agentFor({ plugins, model, saver: fixture.saver, sessionId: "s1" })
    const turn = await runTurn(agent, { message: "remember things" })
    expect(model.calls[0]!.offeredTools).toContain("recall")
    const [always, unknown] = toolMessages(turn.state.messages)
    expect(json(always!)).toMatchObject({
      alreadyAvailable: true,
      results: [{ name: "memory", alreadyAvailable: true }]
    })
    const outcome = (json(unknown!).results as Array<{ suggestions: Array<string>; error: string }>)[0]!
    expect(outcome.error).toBe("unknown")
    expect(outcome.suggestions[0]).toBe("weather")
    expect(turn.state.loadedPlugins).toEqual([])
  })
})

describe("the system prompt of each model call", () => {
  it("is the base prompt, the Tier-1 block and the prompt sections of the plugins offered, a loaded one from the next call", async () => {
    const counters = makeCounters()
    const plugins = [
      { ...weatherPlugin(counters), prompt: "Give temperatures in Celsius." },
      { ...memoryPlugin(counters), prompt: "Recall before asking the user again." }
    ]
    const catalog = Catalog.unsafeMake(plugins)
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["weather"] } }],
      [{ tool: "get_current_weather", args: { city: "Berlin" } }],
      "Cloudy."
    ])
    const agent = await agentFor({ plugins, catalog, model, saver: new MemorySaver(), sessionId: "s" })
    await runTurn(agent, { message: "Weather in Berlin?" })
    const systems = model.calls.map((c) => String(c.messages[0]!.content))
    const compose = (loadedPlugins: ReadonlyArray<string>) =>
      SystemPrompt.compose({ basePrompt: "You are a test assistant.", catalog, loadedPlugins })
    expect(systems).toEqual([compose([]), compose(["weather"]), compose(["weather"])])
    expect(systems[0]).toContain("Recall before asking the user again.")
    expect(systems[0]).not.toContain("Celsius")
    expect(systems[1]!.startsWith(systems[0]!)).toBe(true)
    expect(systems[1]).toContain("Give temperatures in Celsius.")
  })
})
