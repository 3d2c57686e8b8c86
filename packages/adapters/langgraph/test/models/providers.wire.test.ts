/**
 * Each real provider, built the way a host builds it (the environment read through
 * `layerChatModelConfig`: `LLM_PROVIDER`, base URL, key, model, temperature), runs a full agent
 * turn against a local fake of its API. The assertions are on what the fake RECEIVED — the tools
 * bound on each call (core's offer before and after `load_capability`), the key and model sent,
 * the tool results returned in the provider's own tool-result format — and on the turn's answer
 * and checkpointed state. Each turn runs twice: whole (`runTurn`) and streamed (`streamTurn`, as
 * the host's SSE endpoint does), which switches the SDKs to their streaming wire formats.
 */
import type { IncomingHttpHeaders } from "node:http"
import { type BaseMessage, ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, ChatModel, type EventSink, Offer, SystemPrompt } from "@plugboard/core"
import { runTurn, streamTurn } from "@plugboard/langgraph"
import {
  defaultModels,
  LangChainChatModel,
  layerChatModelConfig,
  NO_KEY,
  type Provider
} from "@plugboard/models"
import { ConfigProvider, Effect, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import {
  assistantCalls,
  type FakeProvider,
  type Json,
  type Step,
  startFake,
  systemText,
  toolNames,
  toolResults,
  type Wire
} from "../../../models/test/fakeProviders.js"
import { makeCounters, memoryPlugin, weatherPlugin } from "../fixtures.js"
import { agentFor } from "../harness.js"

/** How one provider is configured and what it must put on the wire. */
interface ProviderCase {
  readonly provider: Exclude<Provider, "scripted">
  readonly wire: Wire
  /** Where the fake mounts an OpenAI-style API (the custom base URL's path). */
  readonly prefix?: string
  readonly env: (origin: string) => Record<string, string>
  /** The model name the request must carry. */
  readonly model: string
  /** The temperature the request must carry, when the environment set one. */
  readonly temperature?: number
  readonly path: string
  readonly auth: (headers: IncomingHttpHeaders) => void
}

const cases: ReadonlyArray<ProviderCase> = [
  {
    provider: "openai",
    wire: "openai",
    // No LLM_MODEL: the provider's default is sent.
    env: (origin) => ({
      LLM_PROVIDER: "openai",
      OPENAI_API_KEY: "sk-test-openai",
      OPENAI_BASE_URL: `${origin}/v1`
    }),
    model: defaultModels.openai,
    path: "/v1/chat/completions",
    auth: (h) => expect(h.authorization).toBe("Bearer sk-test-openai")
  },
  {
    provider: "openai-compatible",
    wire: "openai",
    prefix: "/serving/openai/v1",
    // No key: the placeholder is sent (servers such as vLLM need none).
    env: (origin) => ({
      LLM_PROVIDER: "openai-compatible",
      OPENAI_BASE_URL: `${origin}/serving/openai/v1`,
      LLM_MODEL: "Qwen/Qwen2.5-7B-Instruct",
      LLM_TEMPERATURE: "0.2"
    }),
    model: "Qwen/Qwen2.5-7B-Instruct",
    temperature: 0.2,
    path: "/serving/openai/v1/chat/completions",
    auth: (h) => expect(h.authorization).toBe(`Bearer ${NO_KEY}`)
  },
  {
    provider: "anthropic",
    wire: "anthropic",
    env: (origin) => ({
      LLM_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "sk-ant-test",
      ANTHROPIC_BASE_URL: origin,
      LLM_MODEL: "claude-haiku-4-5",
      LLM_TEMPERATURE: "0.5"
    }),
    model: "claude-haiku-4-5",
    temperature: 0.5,
    path: "/v1/messages",
    auth: (h) => {
      expect(h["x-api-key"]).toBe("sk-ant-test")
      expect(h["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    }
  },
  {
    provider: "ollama",
    wire: "ollama",
    env: (origin) => ({ LLM_PROVIDER: "ollama", OLLAMA_BASE_URL: origin, LLM_TEMPERATURE: "0" }),
    model: defaultModels.ollama,
    temperature: 0,
    path: "/api/chat",
    // Ollama takes no key: none may leak from another provider's variables.
    auth: (h) => {
      expect(h.authorization).toBeUndefined()
      expect(h["x-api-key"]).toBeUndefined()
    }
  }
]

const temperatureOf = (wire: Wire, body: Json): unknown =>
  wire === "ollama" ? body.options?.temperature : body.temperature

/** Both services exactly as a host boots them, from the given environment. */
const boot = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.provide(
      Effect.all([LangChainChatModel, ChatModel.ChatModel]),
      layerChatModelConfig().pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
      )
    )
  )

const ANSWER = "It is 18 °C and clear in Berlin right now."
const script: ReadonlyArray<Step> = [
  { call: { name: "load_capability", args: { names: ["weather"] } } },
  { call: { name: "get_current_weather", args: { city: "Berlin" } } },
  { text: ANSWER }
]

const toolMessages = (messages: ReadonlyArray<BaseMessage>) =>
  messages.filter((m) => ToolMessage.isInstance(m))

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

describe.each(cases)("LLM_PROVIDER=$provider against a fake of its API", (c) => {
  it.each(["runTurn", "streamTurn"] as const)(
    "%s: load_capability, then the weather tool, then the answer",
    async (mode) => {
      fake = await startFake(c.wire, script, c.prefix === undefined ? {} : { prefix: c.prefix })
      const [lc, port] = await boot(c.env(fake.origin))
      expect(port.info).toEqual({ provider: c.provider, model: c.model })
      expect(lc.info).toEqual(port.info)

      const counters = makeCounters()
      const plugins = [weatherPlugin(counters), memoryPlugin(counters)]
      const catalog = Catalog.unsafeMake(plugins)
      const agent = await agentFor({
        plugins,
        catalog,
        model: lc.model,
        saver: new MemorySaver(),
        sessionId: "s1"
      })
      const input = { message: "What's the weather in Berlin?" }
      let turn: Awaited<ReturnType<typeof runTurn>>
      const streamed: Array<EventSink.AgentEvent> = []
      if (mode === "runTurn") {
        turn = await runTurn(agent, input)
      } else {
        const it = streamTurn(agent, input)
        for (;;) {
          const next = await it.next()
          if (next.done === true) {
            turn = next.value
            break
          }
          streamed.push(next.value)
        }
      }

      // The turn: the fake's answer, the weather handler ran once with the model's arguments,
      // and the load is checkpointed with the thread.
      expect(turn.answer).toBe(ANSWER)
      expect(turn.state.loadedPlugins).toEqual(["weather"])
      expect(counters.calls.get_current_weather).toBe(1)
      expect(counters.seen[0]).toMatchObject({ input: { city: "Berlin" }, session: "s1" })

      // What the provider received: three chat calls on its endpoint, key and model each time.
      const requests = fake.received
      expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(Array(3).fill(`POST ${c.path}`))
      for (const r of requests) {
        c.auth(r.headers)
        expect(r.body.model).toBe(c.model)
        if (c.temperature !== undefined) expect(temperatureOf(c.wire, r.body)).toBe(c.temperature)
        // The streamed turn streams on the wire too (Ollama's client always streams).
        if (mode === "streamTurn" || c.wire === "ollama") expect(r.body.stream).toBe(true)
        else expect(r.body.stream ?? false).toBe(false)
      }
      const [first, second, third] = requests.map((r) => r.body)

      // Bound tools: exactly core's offer for the thread's loaded plugins at each call.
      const before = Offer.offer(catalog, []).map((t) => t.name)
      const after = Offer.offer(catalog, ["weather"]).map((t) => t.name)
      expect(toolNames(c.wire, first)).toEqual(before)
      expect(toolNames(c.wire, first)).not.toContain("get_current_weather")
      expect(toolNames(c.wire, second)).toEqual(after)
      expect(toolNames(c.wire, second)).toContain("get_current_weather")
      expect(toolNames(c.wire, third)).toEqual(after)

      // The system prompt is core's, composed for what was loaded at each call.
      const basePrompt = "You are a test assistant."
      expect(systemText(c.wire, first)).toBe(SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: [] }))
      expect(systemText(c.wire, third)).toBe(
        SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: ["weather"] })
      )
      expect(JSON.stringify(first.messages)).toContain("What's the weather in Berlin?")

      // The tool calls went back as the assistant's, and their results in the provider's
      // tool-result format, paired by id where the wire has ids, with the content the agent
      // checkpointed.
      const results = toolMessages(turn.state.messages).map((m) => String(m.content))
      expect(results).toHaveLength(2)
      expect(JSON.parse(results[1]!)).toMatchObject({ city: "Berlin" })
      expect(toolResults(c.wire, first)).toEqual([])
      const calls = assistantCalls(c.wire, third)
      expect(calls.map(({ name, args }) => ({ name, args }))).toEqual(
        script.flatMap((s) => ("call" in s ? [s.call] : []))
      )
      expect(toolResults(c.wire, second).map((r) => r.content)).toEqual(results.slice(0, 1))
      expect(toolResults(c.wire, third).map((r) => r.content)).toEqual(results)
      if (c.wire !== "ollama") {
        const ids = c.wire === "openai" ? ["call_1", "call_2"] : ["toolu_1", "toolu_2"]
        expect(calls.map((call) => call.id)).toEqual(ids)
        expect(toolResults(c.wire, third).map((r) => r.id)).toEqual(ids)
      }

      if (mode === "streamTurn") {
        const done = streamed.filter((e) => e._tag === "tool_call" && e.status === "done")
        expect(done.map((e) => (e._tag === "tool_call" ? [e.toolName, e.args] : []))).toEqual([
          ["load_capability", { names: ["weather"] }],
          ["get_current_weather", { city: "Berlin" }]
        ])
        // The answer arrived in the chunks the fake streamed, in order.
        const text = streamed.flatMap((e) => (e._tag === "message" ? [e.content] : []))
        expect(text.length).toBeGreaterThan(1)
        expect(text.join("")).toBe(ANSWER)
      }
    }
  )
})
