/**
 * The scripted model on the OpenAI wire, driven by the Vercel AI SDK (`ai` 7) through its
 * OpenAI-compatible provider (`@ai-sdk/openai-compatible`): `generateText` with an app's own tools
 * whose `execute` returns canned results (the router picks the tool from its definition and fills
 * its arguments from the schema), and `streamText` on a plugboard catalog whose offer grows step
 * by step (`prepareStep` → `activeTools`): `list_capabilities` → `load_capability` → the tool →
 * the streamed answer, with the router's reasoning arriving as the SDK's reasoning.
 *
 * `ai` 7 needs Node 22 or later: on an older Node this file says so and skips.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { MetaTools } from "@plugboard/core"
import { generateText, jsonSchema, stepCountIs, streamText, type ToolSet, tool } from "ai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type OpenAiWireServer, ScriptedChatModel, serveOpenAiWire } from "../src/index.js"
import { routerPlugins } from "./fixtures.js"
import { catalogHost } from "./wireHarness.js"

const nodeMajor = Number(process.versions.node.split(".")[0])
if (nodeMajor < 22)
  console.warn(`OpenAiWire.aiSdk: skipped, ai 7 needs Node >= 22 (this is ${process.version}).`)

describe.skipIf(nodeMajor < 22)("the scripted router driven by the AI SDK", () => {
  let server: OpenAiWireServer
  let scripted: ScriptedChatModel
  beforeAll(async () => {
    scripted = ScriptedChatModel.router()
    server = await serveOpenAiWire(scripted)
  })
  afterAll(() => server.close())

  const modelOf = () =>
    createOpenAICompatible({ name: "scripted", baseURL: server.url, includeUsage: true }).chatModel(
      "scripted-router"
    )

  it("generateText: calls the app's tool that fits, with arguments from its schema, then answers", async () => {
    const executed: Array<unknown> = []
    const result = await generateText({
      model: modelOf(),
      prompt: "What's the weather in Paris?",
      tools: {
        get_weather: tool({
          description: "Get the current weather for a city.",
          inputSchema: jsonSchema<{ city: string }>({
            type: "object",
            properties: { city: { type: "string" } },
            required: ["city"]
          }),
          execute: async (input) => {
            executed.push(input)
            return { city: input.city, temperatureC: 21, condition: "sunny" }
          }
        }),
        send_email: tool({
          description: "Send an email.",
          inputSchema: jsonSchema<{ to: string; body: string }>({
            type: "object",
            properties: { to: { type: "string" }, body: { type: "string" } },
            required: ["to", "body"]
          }),
          execute: async () => "sent"
        })
      },
      stopWhen: stepCountIs(5)
    })
    expect(executed).toEqual([{ city: "Paris" }])
    expect(result.steps.map((s) => s.toolCalls.map((c) => [c.toolName, c.input]))).toEqual([
      [["get_weather", { city: "Paris" }]],
      []
    ])
    expect(result.steps.map((s) => s.finishReason)).toEqual(["tool-calls", "stop"])
    expect(result.text).toBe(
      "Here is what get_weather returned: city: Paris, temperatureC: 21, condition: sunny."
    )
    expect(result.reasoningText).toMatch(/get_weather answered/)
    expect(result.totalUsage.inputTokens).toBeGreaterThan(0)
    expect(result.totalUsage.outputTokens).toBeGreaterThan(0)
  })

  it("streamText: a catalog offered step by step is discovered, loaded and called, and the answer streams", async () => {
    const host = catalogHost(routerPlugins)
    // Every tool the catalog could offer, each run by the host; `prepareStep` activates core's offer.
    const tools: ToolSet = {}
    for (const spec of [...MetaTools.definitions, ...host.catalog.toolsByName.values()])
      tools[spec.name] = tool({
        description: spec.description,
        inputSchema: jsonSchema<Record<string, unknown>>(spec.parameters as never),
        execute: async (input) => JSON.parse(await host.run(spec.name, input)) as unknown
      })
    const offered: Array<ReadonlyArray<string>> = []
    const result = streamText({
      model: modelOf(),
      prompt: "What's the weather in Berlin?",
      tools,
      prepareStep: () => {
        const active = host.tools().map((t) => t.function.name)
        offered.push(active)
        return { activeTools: active }
      },
      stopWhen: stepCountIs(6)
    })
    const parts: Array<string> = []
    for await (const part of result.fullStream) parts.push(part.type)
    const steps = await result.steps
    expect(steps.map((s) => s.toolCalls.map((c) => [c.toolName, c.input]))).toEqual([
      [["list_capabilities", { query: "What's the weather in Berlin?" }]],
      [["load_capability", { names: ["weather"] }]],
      [["get_current_weather", { city: "Berlin" }]],
      []
    ])
    expect(await result.text).toBe(
      "Here is what Weather (get_current_weather) returned: city: Berlin, temperatureC: 18.5, condition: clear."
    )
    // The answer came as several text deltas; each step's reasoning as reasoning parts.
    expect(parts.filter((p) => p === "text-delta").length).toBeGreaterThan(1)
    expect(parts).toContain("reasoning-delta")
    // What the server's model was offered is what prepareStep activated.
    expect(scripted.calls.slice(-4).map((c) => [...c.offeredTools].sort())).toEqual(
      offered.map((o) => [...o].sort())
    )
    expect(host.loaded()).toEqual(["weather"])
  })
})
