import { createPlugboard, type ToolEndEvent } from "@plugboard/ai-sdk"
import { definePlugin, defineTool, MetaTools, Offer } from "@plugboard/core"
import { generateText, type ModelMessage, stepCountIs, streamText } from "ai"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { makeExamplePlugins } from "../../../../examples/catalog/index.js"
import { play, scriptedModel, toolResultsSent } from "./fixtures.js"

const plugboard = await createPlugboard({ plugins: makeExamplePlugins({ now: () => new Date(0) }) })
const names = (tools: ReadonlyArray<{ name: string }>) => tools.map((t) => t.name)
const atConnect = names(Offer.offer(plugboard.catalog, []))

describe("a turn of generateText over the examples' catalog", () => {
  it("lists, loads, calls the loaded tool in the next step, and answers", async () => {
    const { model, sent } = scriptedModel([
      { calls: [["list_capabilities", { query: "weather in a city" }]] },
      { calls: [["load_capability", { names: ["weather"] }]] },
      { calls: [["get_current_weather", { city: "Berlin" }]] },
      { text: "It is mild in Berlin." }
    ])
    const ended: Array<ToolEndEvent> = []
    const loads: Array<ReadonlyArray<string>> = []
    const messages: Array<ModelMessage> = [{ role: "user", content: "What's the weather in Berlin?" }]
    const turn = plugboard.turn({
      messages,
      system: "You are a helpful assistant.",
      onToolEnd: (e) => ended.push(e),
      onPluginsLoaded: (e) => loads.push(e.loadedPlugins)
    })
    const result = await generateText({
      model,
      system: turn.system,
      messages,
      tools: turn.tools,
      prepareStep: turn.prepareStep,
      stopWhen: stepCountIs(6)
    })
    expect(result.text).toBe("It is mild in Berlin.")
    // Step 1 and 2 are offered the meta-tools and the always tier; the load appends weather's tools.
    expect(names(sent[0]!.tools)).toEqual(atConnect)
    expect(names(sent[1]!.tools)).toEqual(atConnect)
    expect(names(sent[2]!.tools)).toEqual([...atConnect, "get_current_weather", "get_weather_forecast"])
    expect(ended.map((e) => [e.toolName, e.outcome])).toEqual([
      ["list_capabilities", "meta"],
      ["load_capability", "meta"],
      ["get_current_weather", "ok"]
    ])
    expect(loads).toEqual([["weather"]])
    expect(turn.loadedPlugins).toEqual(["weather"])
    // The model read the weather tool's answer.
    expect(toolResultsSent(sent[3]!).at(-1)).toMatchObject({ toolName: "get_current_weather", error: false })
    expect(toolResultsSent(sent[3]!).at(-1)!.text).toContain('"city":"Berlin"')
    // The system prompt carries the Tier-1 block after the app's prompt.
    expect(turn.system.startsWith("You are a helpful assistant.")).toBe(true)
    expect(turn.system).toContain(plugboard.tier1)

    // The next turn reads the load back from the messages the app keeps: weather is offered at once.
    const history = [...messages, ...result.responseMessages]
    const next = plugboard.turn({ messages: history })
    expect(next.loadedPlugins).toEqual(["weather"])
    expect(next.offered).toEqual([...atConnect, "get_current_weather", "get_weather_forecast"])
  })

  it("the same turn through streamText", async () => {
    const { model, sent } = scriptedModel([
      { calls: [["load_capability", { names: ["weather"] }]] },
      { calls: [["get_weather_forecast", { city: "Tokyo", days: 2 }]] },
      { text: "Rain later." }
    ])
    const turn = plugboard.turn({})
    const result = streamText({
      model,
      system: turn.system,
      prompt: "Forecast for Tokyo?",
      tools: turn.tools,
      prepareStep: turn.prepareStep,
      stopWhen: stepCountIs(5)
    })
    expect(await result.text).toBe("Rain later.")
    expect(names(sent[1]!.tools).slice(atConnect.length)).toEqual([
      "get_current_weather",
      "get_weather_forecast"
    ])
    expect(toolResultsSent(sent[2]!)[0]!.text).toContain('"city":"Tokyo"')
  })
})

describe("the gate", () => {
  // A plugin whose handler counts its runs: "never runs" is read off the counter.
  let runs = 0
  const counted = definePlugin({
    name: "counter",
    manifest: { title: "Counter", summary: "Counts.", whenToUse: ["When counting."] },
    tools: [
      defineTool({
        name: "count_up",
        description: "Adds one.",
        input: Schema.Struct({ by: Schema.Number }),
        handler: () => ++runs
      })
    ]
  })

  it("a tool not offered at that step never runs; the model gets core's refusal naming the plugin", async () => {
    const board = await createPlugboard({ plugins: [counted] })
    runs = 0
    const { model, sent } = scriptedModel([
      // Called before any load, then in the same step as its load: both refused.
      { calls: [["count_up", { by: 1 }]] },
      {
        calls: [
          ["load_capability", { names: ["counter"] }],
          ["count_up", { by: 1 }]
        ]
      },
      { calls: [["count_up", { by: 1 }]] },
      { text: "ok" }
    ])
    const turn = board.turn({})
    await play(turn, model, "count")
    const refusal = Offer.notLoadedMessage("count_up", "counter")
    expect(toolResultsSent(sent[1]!)).toEqual([{ toolName: "count_up", text: refusal, error: true }])
    expect(toolResultsSent(sent[2]!).slice(-1)).toEqual([
      { toolName: "count_up", text: refusal, error: true }
    ])
    // Only the call of the step after the load ran.
    expect(runs).toBe(1)
  })

  it("an unknown name gets core's closest names; bad arguments get core's one retry", async () => {
    const board = await createPlugboard({ plugins: [counted] })
    runs = 0
    const { model, sent } = scriptedModel([
      { calls: [["count_upp", {}]] },
      { calls: [["load_capability", { name: "counter" }]] },
      { calls: [["count_up", { by: "one" }]] },
      { calls: [["count_up", { by: "two" }]] },
      { calls: [["count_up", { by: 3 }]] },
      { text: "ok" }
    ])
    const turn = board.turn({})
    await play(turn, model, "count")
    expect(toolResultsSent(sent[1]!)[0]!.text).toContain(
      "There is no tool named 'count_upp'. Closest tool names: 'count_up'"
    )
    expect(toolResultsSent(sent[3]!).at(-1)!.text).toMatch(/^Invalid arguments for tool 'count_up':/)
    expect(toolResultsSent(sent[4]!).at(-1)!.text).toMatch(/^Invalid arguments for tool 'count_up' again:/)
    expect(toolResultsSent(sent[5]!).at(-1)!.text).toMatch(/is not run again in this turn/)
    expect(runs).toBe(0)
  })

  it("without repairToolCall the SDK answers with its own error, and nothing runs either", async () => {
    const board = await createPlugboard({ plugins: [counted] })
    runs = 0
    const { model, sent } = scriptedModel([{ calls: [["count_up", { by: 1 }]] }, { text: "ok" }])
    const turn = board.turn({})
    await play(turn, model, "count", { repair: false })
    expect(toolResultsSent(sent[1]!)[0]).toMatchObject({ toolName: "count_up", error: true })
    expect(toolResultsSent(sent[1]!)[0]!.text).toMatch(/unavailable tool 'count_up'/)
    expect(runs).toBe(0)
  })

  it("without prepareStep a load is still offered at the next step, and still refused in its own", async () => {
    const board = await createPlugboard({ plugins: [counted] })
    runs = 0
    const { model, sent } = scriptedModel([
      {
        calls: [
          ["load_capability", { names: ["counter"] }],
          ["count_up", { by: 1 }]
        ]
      },
      { calls: [["count_up", { by: 1 }]] },
      { text: "ok" }
    ])
    const turn = board.turn({})
    await play(turn, model, "count", { prepareStep: false })
    expect(names(sent[1]!.tools)).toEqual(["list_capabilities", "load_capability", "count_up"])
    expect(toolResultsSent(sent[1]!).at(-1)).toEqual({
      toolName: "count_up",
      text: Offer.notLoadedMessage("count_up", "counter"),
      error: true
    })
    expect(runs).toBe(1)
  })

  it("bad input to load_capability is core's input error, and loses nothing already loaded", async () => {
    const turn = plugboard.turn({ loadedPlugins: ["weather"] })
    const { model, sent } = scriptedModel([{ calls: [["load_capability", { names: 42 }]] }, { text: "ok" }])
    await play(turn, model, "x")
    const answer = toolResultsSent(sent[1]!)[0]!
    expect(answer.error).toBe(true)
    expect(JSON.parse(answer.text).error).toMatch(/load_capability/)
    expect(turn.loadedPlugins).toEqual(["weather"])
    expect(MetaTools.LOAD_CAPABILITY).toBe("load_capability")
  })
})
