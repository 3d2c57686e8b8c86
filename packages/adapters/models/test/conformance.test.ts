/**
 * Core's shared `ChatModel` conformance suite, run against the adapter's `fromLangChain` port:
 * over the scripted LangChain model, and over each real provider class built from its
 * environment (`layerChatModelConfig`, as a host boots it) and pointed at a local fake of its
 * API, started per test case in the suite's scope. The answerable request offers a tool and the
 * fake answers with a call to it, so the suite's answer checks cover tool calls and usage
 * translated from every provider's wire format. A direct round trip then pins what the port
 * put on the wire and what it returned.
 */
import { ChatModel, type ToolSpec } from "@plugboard/core"
import { ChatModelConformance } from "@plugboard/testing"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { fromLangChain, layerChatModelConfig } from "../src/Port.js"
import { ScriptedChatModel } from "../src/ScriptedChatModel.js"
import {
  type FakeProvider,
  type Step,
  startFake,
  toolNames,
  toolResults,
  type Wire
} from "./fakeProviders.js"

const lookup: ToolSpec.ToolSpec = {
  name: "lookup",
  description: "Look a word up.",
  parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] }
}

/** A request every model under test can answer: the fakes reply with a call to `lookup`. */
const answerable: ChatModel.ChatRequest = {
  messages: [
    { role: "system", content: "You look words up." },
    { role: "user", content: "What does 'plugboard' mean?" }
  ],
  tools: [lookup]
}

const reply: ReadonlyArray<Step> = [{ call: { name: "lookup", args: { word: "plugboard" } } }]

/** The environment that points each provider at a fake's origin. */
const providers: ReadonlyArray<{
  readonly name: string
  readonly wire: Wire
  readonly env: (origin: string) => Record<string, string>
}> = [
  {
    name: "openai",
    wire: "openai",
    env: (o) => ({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: `${o}/v1` })
  },
  {
    name: "openai-compatible",
    wire: "openai",
    env: (o) => ({ LLM_PROVIDER: "openai-compatible", OPENAI_BASE_URL: `${o}/v1`, LLM_MODEL: "local-model" })
  },
  {
    name: "anthropic",
    wire: "anthropic",
    env: (o) => ({ LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: o })
  },
  { name: "ollama", wire: "ollama", env: (o) => ({ LLM_PROVIDER: "ollama", OLLAMA_BASE_URL: o }) }
]

/** The port as a host boots it from `env` (the config layer wraps the model with `fromLangChain`). */
const portFrom = (env: Record<string, string>) =>
  Effect.provide(
    ChatModel.ChatModel,
    layerChatModelConfig().pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
    )
  )

/** A fake server for the length of the scope. */
const fakeIn = (wire: Wire, script: ReadonlyArray<Step>) =>
  Effect.acquireRelease(
    Effect.promise(() => startFake(wire, script)),
    (fake) => Effect.promise(() => fake.close())
  )

ChatModelConformance.run("fromLangChain(ScriptedChatModel)", () => ({
  model: fromLangChain(ScriptedChatModel.script([[{ tool: "lookup", args: { word: "plugboard" } }]]), {
    provider: "scripted",
    model: "scripted"
  }),
  answerable
}))

for (const p of providers) {
  ChatModelConformance.run(`fromLangChain(${p.name}) over a fake of its API`, () =>
    Effect.gen(function* () {
      const fake = yield* fakeIn(p.wire, reply)
      const model = yield* portFrom(p.env(fake.origin))
      return { model, answerable }
    })
  )
}

describe("the port's round trip over each provider's wire", () => {
  let fake: FakeProvider | undefined
  afterEach(async () => {
    await fake?.close()
    fake = undefined
  })

  it.each(providers)("$name: binds the request's tools, returns the call and the usage", async (p) => {
    fake = await startFake(p.wire, [...reply, { text: "A device that connects circuits." }])
    const port = await Effect.runPromise(portFrom(p.env(fake.origin)))
    const first = await Effect.runPromise(port.invoke(answerable))
    expect(toolNames(p.wire, fake.received[0]!.body)).toEqual(["lookup"])
    const calls = first.message.toolCalls ?? []
    expect(calls.map((c) => [c.name, c.args])).toEqual([["lookup", { word: "plugboard" }]])
    expect(first.usage).toEqual({ inputTokens: 42, outputTokens: 7 })

    // The tool's result goes back and the model answers in text; no tools, none bound.
    const second = await Effect.runPromise(
      port.invoke({
        messages: [
          ...answerable.messages,
          first.message,
          { role: "tool", content: "a telephone switchboard", toolCallId: calls[0]!.id, name: "lookup" }
        ]
      })
    )
    expect(second.message).toMatchObject({ role: "assistant", content: "A device that connects circuits." })
    expect(second.message.toolCalls).toBeUndefined()
    expect(fake.received[1]!.body.tools ?? []).toEqual([])
    expect(JSON.stringify(fake.received[1]!.body.messages)).toContain("a telephone switchboard")
  })

  it.each(providers)(
    "$name: two calls in one reply come back with distinct ids; each result goes back paired",
    async (p) => {
      fake = await startFake(p.wire, [
        {
          calls: [
            { name: "lookup", args: { word: "plug" } },
            { name: "lookup", args: { word: "board" } }
          ]
        },
        { text: "Both looked up." }
      ])
      const port = await Effect.runPromise(portFrom(p.env(fake.origin)))
      const first = await Effect.runPromise(port.invoke(answerable))
      const calls = first.message.toolCalls ?? []
      expect(calls.map((c) => c.args)).toEqual([{ word: "plug" }, { word: "board" }])
      expect(new Set(calls.map((c) => c.id)).size).toBe(2)
      const second = await Effect.runPromise(
        port.invoke({
          messages: [
            ...answerable.messages,
            first.message,
            ...calls.map((c) => ({
              role: "tool" as const,
              content: `meaning of ${String(c.args.word)}`,
              toolCallId: c.id,
              name: "lookup"
            }))
          ],
          tools: [lookup]
        })
      )
      expect(second.message.content).toBe("Both looked up.")
      const results = toolResults(p.wire, fake.received[1]!.body)
      expect(results.map((r) => r.content)).toEqual(["meaning of plug", "meaning of board"])
      // Ollama's wire carries no call ids (results pair by order); the others pair by the ids the
      // provider issued.
      if (p.wire === "openai") expect(results.map((r) => r.id)).toEqual(["call_1", "call_1_1"])
      if (p.wire === "anthropic") expect(results.map((r) => r.id)).toEqual(["toolu_1", "toolu_1_1"])
    }
  )
})

describe("provider failures over each wire, as core's reasons", () => {
  const reasonAfter = async (p: (typeof providers)[number], status: number) => {
    const fake = await startFake(p.wire, [{ fail: status }])
    try {
      const port = await Effect.runPromise(portFrom(p.env(fake.origin)))
      const exit = await Effect.runPromiseExit(port.invoke(answerable))
      expect(fake.received).toHaveLength(1)
      return Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : exit
    } finally {
      await fake.close()
    }
  }

  // Statuses no SDK retries, so the host-built model (default retries) fails on the first answer.
  it.each(providers)("$name: 401 is unauthorized, 404 is invalid-request", async (p) => {
    expect(await reasonAfter(p, 401)).toBe("unauthorized")
    expect(await reasonAfter(p, 404)).toBe("invalid-request")
  })

  // ChatOllama never retries, so every status is seen as is (ollama-js reports it as
  // `status_code`, not `status`).
  it("ollama: 429 is rate-limited, 503 unavailable, a refused connection unavailable", async () => {
    const ollama = providers.find((p) => p.name === "ollama")!
    expect(await reasonAfter(ollama, 429)).toBe("rate-limited")
    expect(await reasonAfter(ollama, 503)).toBe("unavailable")
    const closed = await startFake("ollama", [])
    await closed.close()
    const port = await Effect.runPromise(portFrom(ollama.env(closed.origin)))
    const exit = await Effect.runPromiseExit(port.invoke(answerable))
    expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : exit).toBe(
      "unavailable"
    )
  })
})
