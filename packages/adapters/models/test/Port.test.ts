import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages"
import { ChatOpenAI } from "@langchain/openai"
import { Catalog, ChatModel } from "@plugboard/core"
import { Cause, ConfigProvider, Effect, Either, Exit, Layer, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  chatModelFromEnv,
  classifyError,
  fromAIMessage,
  fromLangChain,
  LangChainChatModel,
  layerChatModelConfig,
  settingsFromEnv,
  toLangChainMessages
} from "../src/Port.js"
import { ScriptedChatModel } from "../src/ScriptedChatModel.js"
import { routerPlugins } from "./fixtures.js"

const fromEnv = (vars: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(vars))))

const failureOf = <E>(exit: Exit.Exit<unknown, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return Option.getOrThrow(Cause.failureOption(exit.cause))
}

describe("message translation", () => {
  it("maps every role to LangChain and back", () => {
    const lc = toLangChainMessages([
      { role: "system", content: "sys" },
      { role: "user", content: "hi", id: "u1" },
      { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "lookup", args: { q: 1 } }] },
      { role: "tool", content: "42", toolCallId: "c1", name: "lookup" }
    ])
    expect(lc[0]).toBeInstanceOf(SystemMessage)
    expect(lc[1]).toBeInstanceOf(HumanMessage)
    expect(lc[1]!.id).toBe("u1")
    expect((lc[2] as AIMessage).tool_calls).toEqual([
      { id: "c1", name: "lookup", args: { q: 1 }, type: "tool_call" }
    ])
    expect(lc[3]).toBeInstanceOf(ToolMessage)
    expect((lc[3] as ToolMessage).tool_call_id).toBe("c1")

    const back = fromAIMessage(
      new AIMessage({
        id: "a1",
        content: "done",
        tool_calls: [{ id: "c2", name: "x", args: {} }],
        usage_metadata: { input_tokens: 10, output_tokens: 3, total_tokens: 13 }
      })
    )
    expect(back).toEqual({
      message: {
        role: "assistant",
        content: "done",
        id: "a1",
        toolCalls: [{ id: "c2", name: "x", args: {} }]
      },
      usage: { inputTokens: 10, outputTokens: 3 }
    })
  })
})

describe("fromLangChain", () => {
  it("binds exactly the request's tools and returns calls and usage", async () => {
    const model = ScriptedChatModel.script([{ tool: "lookup", args: { q: "x" } }])
    const port = fromLangChain(model, { provider: "scripted", model: "scripted" })
    const response = await Effect.runPromise(
      port.invoke({
        messages: [{ role: "user", content: "find x" }],
        tools: [{ name: "lookup", description: "Look up", parameters: { type: "object", properties: {} } }]
      })
    )
    expect(model.calls[0]!.offeredTools).toEqual(["lookup"])
    expect(response.message.toolCalls?.map((c) => [c.name, c.args])).toEqual([["lookup", { q: "x" }]])
    expect(response.usage?.inputTokens).toBeGreaterThan(0)
  })

  it("refuses a malformed request before calling, and maps a spent script", async () => {
    const model = ScriptedChatModel.script([])
    const port = fromLangChain(model, { provider: "scripted", model: "scripted" })
    const invalid = failureOf(await Effect.runPromiseExit(port.invoke({ messages: [] })))
    expect(invalid.reason).toBe("invalid-request")
    expect(model.callCount).toBe(0)
    const spent = failureOf(
      await Effect.runPromiseExit(port.invoke({ messages: [{ role: "user", content: "x" }] }))
    )
    expect(spent).toBeInstanceOf(ChatModel.ChatModelError)
    expect(spent.reason).toBe("script-exhausted")
  })

  it("refuses an unknown message role as invalid-request, without calling the model", async () => {
    const model = ScriptedChatModel.script(["never"])
    const port = fromLangChain(model, { provider: "scripted", model: "s" })
    const exit = await Effect.runPromiseExit(
      port.invoke({ messages: [{ role: "robot", content: "x" } as never] })
    )
    expect(failureOf(exit)).toMatchObject({
      reason: "invalid-request",
      message: 'Unknown message role "robot".'
    })
    expect(model.callCount).toBe(0)
  })

  it("fails `aborted` when the request's signal is aborted", async () => {
    const port = fromLangChain(ScriptedChatModel.script(["never"]), { provider: "scripted", model: "s" })
    const controller = new AbortController()
    controller.abort()
    const exit = await Effect.runPromiseExit(
      port.invoke({ messages: [{ role: "user", content: "x" }], signal: controller.signal })
    )
    expect(failureOf(exit).reason).toBe("aborted")
  })
})

describe("provider errors from a real SDK (local HTTP server, no network)", () => {
  let server: Server
  let base: string
  const statuses: Record<string, number> = {
    "/401/chat/completions": 401,
    "/429/chat/completions": 429,
    "/503/chat/completions": 503,
    "/400/chat/completions": 400
  }
  beforeAll(async () => {
    server = createServer((req, res) => {
      const status = statuses[req.url ?? ""] ?? 404
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: `status ${status}`, type: "test" } }))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const reasonFor = async (path: string) => {
    const model = new ChatOpenAI({
      model: "m",
      apiKey: "k",
      maxRetries: 0,
      configuration: { baseURL: `${base}${path}` }
    })
    const port = fromLangChain(model, { provider: "openai-compatible", model: "m" })
    return failureOf(await Effect.runPromiseExit(port.invoke({ messages: [{ role: "user", content: "x" }] })))
      .reason
  }

  it("maps HTTP statuses to core's reasons", async () => {
    expect(await reasonFor("/401")).toBe("unauthorized")
    expect(await reasonFor("/429")).toBe("rate-limited")
    expect(await reasonFor("/503")).toBe("unavailable")
    expect(await reasonFor("/400")).toBe("invalid-request")
  })

  it("maps a refused connection to unavailable", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const model = new ChatOpenAI({
      model: "m",
      apiKey: "k",
      maxRetries: 0,
      configuration: { baseURL: `http://127.0.0.1:${port}/v1` }
    })
    const exit = await Effect.runPromiseExit(
      fromLangChain(model, { provider: "openai-compatible", model: "m" }).invoke({
        messages: [{ role: "user", content: "x" }]
      })
    )
    expect(failureOf(exit).reason).toBe("unavailable")
  })

  it("classifies unknown errors as provider errors", () => {
    expect(classifyError(new Error("weird")).reason).toBe("provider")
  })
})

describe("configuration at boot", () => {
  it("layerChatModelConfig fails with ChatModelConfigError naming the variable", async () => {
    const program = Effect.provide(
      ChatModel.ChatModel,
      layerChatModelConfig().pipe(Layer.provide(fromEnv({ LLM_PROVIDER: "anthropic" })))
    )
    const error = failureOf(await Effect.runPromiseExit(program))
    expect(error).toBeInstanceOf(ChatModel.ChatModelConfigError)
    expect(error).toMatchObject({ reason: "missing-key", variable: "ANTHROPIC_API_KEY" })

    const unknown = failureOf(
      await Effect.runPromiseExit(
        Effect.provide(
          ChatModel.ChatModel,
          layerChatModelConfig().pipe(Layer.provide(fromEnv({ LLM_PROVIDER: "bard" })))
        )
      )
    )
    expect(unknown.reason).toBe("unknown-provider")
    expect(unknown.message).toContain("openai, anthropic, ollama, openai-compatible, scripted")
  })

  it("layerChatModelConfig provides both the port and the LangChain model; scripted by default", async () => {
    const catalog = Catalog.unsafeMake(routerPlugins)
    const program = Effect.gen(function* () {
      const port = yield* ChatModel.ChatModel
      const lc = yield* LangChainChatModel
      const answer = yield* port.invoke({
        messages: [{ role: "user", content: "What's the weather in Berlin?" }]
      })
      return { info: port.info, lcInfo: lc.info, model: lc.model, answer }
    })
    const result = await Effect.runPromise(
      Effect.provide(program, layerChatModelConfig({ catalog }).pipe(Layer.provide(fromEnv({}))))
    )
    expect(result.info).toEqual({ provider: "scripted", model: "scripted-router" })
    expect(result.lcInfo).toEqual(result.info)
    expect(result.model).toBeInstanceOf(ScriptedChatModel)
    // No tools offered through the port, so the router cannot load anything: a plain answer.
    expect(result.answer.message.content).toMatch(/not available to me/)
  })

  it("layerChatModelConfig wires a real provider without calling it", async () => {
    const program = Effect.map(LangChainChatModel, (s) => s)
    const { model, info } = await Effect.runPromise(
      Effect.provide(
        program,
        layerChatModelConfig().pipe(
          Layer.provide(
            fromEnv({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "sk-x", LLM_MODEL: "gpt-4.1-mini" })
          )
        )
      )
    )
    expect(model).toBeInstanceOf(ChatOpenAI)
    expect(info).toEqual({ provider: "openai", model: "gpt-4.1-mini" })
  })

  it("chatModelFromEnv throws the config error for hosts without Effect", () => {
    expect(() => chatModelFromEnv({ LLM_PROVIDER: "openai" })).toThrow(/OPENAI_API_KEY is required/)
    expect(chatModelFromEnv({})).toBeInstanceOf(ScriptedChatModel)
    expect(Either.isLeft(settingsFromEnv({ OLLAMA_BASE_URL: "nope", LLM_PROVIDER: "ollama" }))).toBe(true)
  })
})
