/**
 * The adapter on AI SDK 6 (`ai6` is `ai@6` under another name): the same turn as on 7 — tools
 * offered per step, a load offered at the next step, core's refusal — through 6's generateText
 * and streamText. Loads read back from 6's `response.messages` (7 names it `responseMessages`).
 */
import { createPlugboard } from "@plugboard/ai-sdk"
import { definePlugin, defineTool, Offer } from "@plugboard/core"
import {
  generateText,
  type ModelMessage,
  simulateReadableStream,
  stepCountIs,
  streamText,
  type ToolSet
} from "ai6"
import { MockLanguageModelV3 } from "ai6/test"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { scriptedModel, toolResultsSent } from "./fixtures.js"

const doubles = { MockLanguageModelV3, simulateReadableStream } as never
let runs = 0
const counter = definePlugin({
  name: "counter",
  manifest: { title: "Counter", summary: "Counts.", whenToUse: ["When counting."] },
  tools: [
    defineTool({
      name: "count_up",
      description: "Adds one.",
      input: Schema.Struct({ by: Schema.Number }),
      handler: ({ by }) => (runs += by)
    })
  ]
})
const board = await createPlugboard({ plugins: [counter] })

describe("AI SDK 6", () => {
  it("generateText: refused before the load, offered and run after it; the next turn reads the load back", async () => {
    runs = 0
    const { model, sent } = scriptedModel(
      [
        { calls: [["count_up", { by: 1 }]] },
        { calls: [["load_capability", { names: ["counter"] }]] },
        { calls: [["count_up", { by: 2 }]] },
        { text: "2" }
      ],
      doubles
    )
    const messages: Array<ModelMessage> = [{ role: "user", content: "count" }]
    const turn = board.turn({ messages })
    const result = await generateText({
      // The fixture is typed with 7's doubles; 6's (passed in) build it.
      model: model as never,
      system: turn.system,
      messages,
      tools: turn.tools as ToolSet,
      prepareStep: turn.prepareStep as never,
      experimental_repairToolCall: turn.repairToolCall as never,
      stopWhen: stepCountIs(6)
    })
    expect(result.text).toBe("2")
    expect(toolResultsSent(sent[1]!)).toEqual([
      { toolName: "count_up", text: Offer.notLoadedMessage("count_up", "counter"), error: true }
    ])
    expect(sent[2]!.tools.map((t) => t.name)).toEqual(["list_capabilities", "load_capability", "count_up"])
    expect(runs).toBe(2)
    const next = board.turn({ messages: [...messages, ...result.response.messages] })
    expect(next.loadedPlugins).toEqual(["counter"])
  })

  it("streamText: a load offered at the next step", async () => {
    runs = 0
    const { model, sent } = scriptedModel(
      [
        { calls: [["load_capability", { names: ["counter"] }]] },
        { calls: [["count_up", { by: 5 }]] },
        { text: "5" }
      ],
      doubles
    )
    const turn = board.turn({})
    const result = streamText({
      model: model as never,
      prompt: "count",
      tools: turn.tools as ToolSet,
      prepareStep: turn.prepareStep as never,
      stopWhen: stepCountIs(5)
    })
    expect(await result.text).toBe("5")
    expect(sent[1]!.tools.map((t) => t.name)).toEqual(["list_capabilities", "load_capability", "count_up"])
    expect(runs).toBe(5)
  })
})
