/**
 * The AI SDK example, driven two ways: by the AI SDK's own mock model (`ai/test`), and by a real
 * provider package (`@ai-sdk/openai-compatible`) talking to plugboard's scripted model on the
 * OpenAI wire. A turn lists the catalog, loads a plugin, calls its tool and answers; a second turn
 * on the same messages is offered the loaded plugin's tools from its first step.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { ScriptedChatModel, serveOpenAiWire } from "@plugboard/models"
import type { ModelMessage } from "ai"
import { describe, expect, it } from "vitest"
import { scriptedModel } from "../../packages/adapters/ai-sdk/test/fixtures.js"
import { ask } from "./agent.js"

const run = promisify(execFile)

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

describe("examples/ai-sdk through a real provider package", () => {
  it("@ai-sdk/openai-compatible against the scripted model on the OpenAI wire: list, load, call, answer", async () => {
    // The router with no catalog of its own: it sees only what the AI SDK sends on the wire.
    const router = ScriptedChatModel.router()
    const server = await serveOpenAiWire(router)
    try {
      const provider = createOpenAICompatible({ name: "scripted", baseURL: server.url, apiKey: "none" })
      const messages: Array<ModelMessage> = []
      const result = await ask(provider.chatModel(server.modelId), messages, "What's the weather in Berlin?")
      expect(result.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName))).toEqual([
        "list_capabilities",
        "load_capability",
        "get_current_weather"
      ])
      expect(JSON.stringify(result.steps[2]!.toolResults[0]!.input)).toContain("Berlin")
      expect(result.text).toContain("Berlin")
      // What went over the wire: the meta-tools and the always tier, then weather's tools appended.
      const offered = router.calls.map((c) => c.offeredTools)
      expect(offered[0]).not.toContain("get_current_weather")
      expect(offered[2]!.slice(0, offered[0]!.length)).toEqual(offered[0])
      expect(offered[2]).toContain("get_current_weather")
    } finally {
      await server.close()
    }
  })
})

describe("examples/ai-sdk/main.ts", () => {
  it("runs offline as the examples' README says, and prints both turns' calls", async () => {
    const { stdout } = await run(
      process.execPath,
      ["--conditions=@plugboard/source", "--import", "tsx", join(import.meta.dirname, "main.ts")],
      {
        env: { ...process.env, OPENAI_BASE_URL: undefined } as NodeJS.ProcessEnv,
        timeout: 60_000
      }
    )
    expect(stdout).toContain('→ load_capability {"names":["weather"]}')
    expect(stdout).toContain("→ get_weather_forecast")
  }, 60_000)
})
