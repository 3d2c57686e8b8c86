/**
 * The AI SDK example, driven by the AI SDK's own mock model (`ai/test`): a turn that lists the
 * catalog, loads a plugin, calls its tool and answers; then a second turn on the same messages,
 * where the loaded plugin's tools are offered from the first step.
 */
import type { ModelMessage } from "ai"
import { describe, expect, it } from "vitest"
import { scriptedModel } from "../../packages/adapters/ai-sdk/test/fixtures.js"
import { ask } from "./agent.js"

describe("examples/ai-sdk", () => {
  it("list_capabilities, load_capability, a tool call, then the answer; the next turn keeps the load", async () => {
    const { model, sent } = scriptedModel([
      { calls: [["list_capabilities", { query: "weather forecast" }]] },
      { calls: [["load_capability", { names: ["weather"] }]] },
      { calls: [["get_current_weather", { city: "Berlin" }]] },
      { text: "Berlin: see the figures above." },
      { calls: [["get_weather_forecast", { city: "Berlin", days: 2 }]] },
      { text: "Two days of forecast." }
    ])
    const messages: Array<ModelMessage> = []
    const first = await ask(model, messages, "What's the weather in Berlin?")
    expect(first.steps.flatMap((s) => s.toolResults.map((r) => r.toolName))).toEqual([
      "list_capabilities",
      "load_capability",
      "get_current_weather"
    ])
    expect(first.text).toBe("Berlin: see the figures above.")
    expect(JSON.stringify(first.steps[2]!.toolResults[0]!.output)).toContain("Berlin")
    const second = await ask(model, messages, "And the next two days?")
    expect(second.text).toBe("Two days of forecast.")
    // The second turn's first call was offered weather's tools: read back from the messages.
    expect(sent[4]!.tools.map((t) => t.name)).toContain("get_weather_forecast")
    expect(messages.filter((m) => m.role === "user")).toHaveLength(2)
  })
})
