import { ChatAnthropic } from "@langchain/anthropic"
import { HumanMessage } from "@langchain/core/messages"
import { ChatOllama } from "@langchain/ollama"
import { ChatOpenAI } from "@langchain/openai"
import { ChatModel } from "@plugboard/core"
import { ConfigProvider, Effect, Either, Option } from "effect"
import { describe, expect, it } from "vitest"
import { settingsFromEnv } from "../src/Port.js"
import {
  type ChatModelEnv,
  type ConfigProblem,
  envConfig,
  makeChatModel,
  NO_KEY,
  providers,
  resolveSettings
} from "../src/Providers.js"
import { ScriptedChatModel } from "../src/ScriptedChatModel.js"

const settings = (env: ChatModelEnv) =>
  Either.getOrThrowWith(resolveSettings(env), (ps) => new Error(ps.map((p) => p.message).join("\n")))
const problems = (env: ChatModelEnv): ReadonlyArray<ConfigProblem> =>
  Either.match(resolveSettings(env), {
    onLeft: (ps) => ps,
    onRight: (s) => {
      throw new Error(`expected a problem, got ${JSON.stringify(s)}`)
    }
  })
/** The one problem of `env` (fails when there are more). */
const problem = (env: ChatModelEnv) => {
  const all = problems(env)
  expect(all).toHaveLength(1)
  return all[0]!
}

describe("resolveSettings", () => {
  it("defaults to the scripted provider (the embedded server needs no key)", () => {
    expect(settings({})).toEqual({ provider: "scripted", model: "scripted-router" })
    expect(settings({ LLM_PROVIDER: "  " }).provider).toBe("scripted")
  })

  it("names the missing key variable per provider", () => {
    expect(problem({ LLM_PROVIDER: "openai" })).toMatchObject({
      reason: "missing-key",
      variable: "OPENAI_API_KEY"
    })
    expect(problem({ LLM_PROVIDER: "anthropic", OPENAI_API_KEY: "sk" })).toMatchObject({
      reason: "missing-key",
      variable: "ANTHROPIC_API_KEY"
    })
    expect(problem({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "" }).message).toBe(
      "OPENAI_API_KEY is required when LLM_PROVIDER=openai (the OpenAI API key)."
    )
    expect(problem({ LLM_PROVIDER: "openai-compatible", LLM_MODEL: "qwen" })).toMatchObject({
      reason: "missing-key",
      variable: "OPENAI_BASE_URL"
    })
    expect(
      problem({ LLM_PROVIDER: "openai-compatible", OPENAI_BASE_URL: "http://localhost:8000/v1" })
    ).toMatchObject({
      reason: "missing-key",
      variable: "LLM_MODEL"
    })
  })

  it("lists the valid providers for an unknown one", () => {
    const p = problem({ LLM_PROVIDER: "gemini" })
    expect(p.reason).toBe("unknown-provider")
    expect(p.variable).toBe("LLM_PROVIDER")
    for (const name of providers) expect(p.message).toContain(name)
  })

  it("names the variable of a malformed URL or temperature", () => {
    expect(problem({ LLM_PROVIDER: "ollama", OLLAMA_BASE_URL: "localhost:11434" })).toMatchObject({
      reason: "malformed",
      variable: "OLLAMA_BASE_URL"
    })
    expect(
      problem({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "sk", OPENAI_BASE_URL: "ftp://x" })
    ).toMatchObject({
      reason: "malformed",
      variable: "OPENAI_BASE_URL"
    })
    expect(
      problem({ LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: "not a url" })
    ).toMatchObject({
      reason: "malformed",
      variable: "ANTHROPIC_BASE_URL"
    })
    expect(problem({ LLM_TEMPERATURE: "hot" })).toMatchObject({
      reason: "malformed",
      variable: "LLM_TEMPERATURE"
    })
    expect(problem({ LLM_TEMPERATURE: "3" })).toMatchObject({
      reason: "malformed",
      variable: "LLM_TEMPERATURE"
    })
  })

  it("reports every problem at once, one per variable, for every provider", () => {
    const variables = (env: ChatModelEnv) => problems(env).map((p) => [p.variable, p.reason])
    // The audit's case: the temperature, the missing key and the bad URL in one pass.
    expect(variables({ LLM_PROVIDER: "openai", LLM_TEMPERATURE: "9", OPENAI_BASE_URL: "notaurl" })).toEqual([
      ["LLM_TEMPERATURE", "malformed"],
      ["OPENAI_API_KEY", "missing-key"],
      ["OPENAI_BASE_URL", "malformed"]
    ])
    expect(
      variables({ LLM_PROVIDER: "anthropic", LLM_TEMPERATURE: "-1", ANTHROPIC_BASE_URL: "ftp://x" })
    ).toEqual([
      ["LLM_TEMPERATURE", "malformed"],
      ["ANTHROPIC_API_KEY", "missing-key"],
      ["ANTHROPIC_BASE_URL", "malformed"]
    ])
    expect(
      variables({ LLM_PROVIDER: "ollama", LLM_TEMPERATURE: "warm", OLLAMA_BASE_URL: "gpu-box" })
    ).toEqual([
      ["LLM_TEMPERATURE", "malformed"],
      ["OLLAMA_BASE_URL", "malformed"]
    ])
    expect(variables({ LLM_PROVIDER: "openai-compatible", LLM_TEMPERATURE: "2.5" })).toEqual([
      ["LLM_TEMPERATURE", "malformed"],
      ["OPENAI_BASE_URL", "missing-key"],
      ["LLM_MODEL", "missing-key"]
    ])
    expect(variables({ LLM_PROVIDER: "openai-compatible", OPENAI_BASE_URL: "localhost:8000" })).toEqual([
      ["OPENAI_BASE_URL", "malformed"],
      ["LLM_MODEL", "missing-key"]
    ])
    expect(variables({ LLM_PROVIDER: "scripted", LLM_TEMPERATURE: "NaN" })).toEqual([
      ["LLM_TEMPERATURE", "malformed"]
    ])
    expect(variables({ LLM_PROVIDER: "gemini", LLM_TEMPERATURE: "Infinity" })).toEqual([
      ["LLM_PROVIDER", "unknown-provider"],
      ["LLM_TEMPERATURE", "malformed"]
    ])
    // Each message names its variable first, as the boot lines print it.
    for (const p of problems({ LLM_PROVIDER: "openai", LLM_TEMPERATURE: "9", OPENAI_BASE_URL: "notaurl" })) {
      expect(p.message.startsWith(p.variable)).toBe(true)
    }
  })

  it("accepts the provider name in any case and trims values", () => {
    expect(settings({ LLM_PROVIDER: " OpenAI ", OPENAI_API_KEY: " sk-1 " })).toMatchObject({
      provider: "openai",
      apiKey: "sk-1",
      model: "gpt-4o-mini"
    })
  })
})

describe("makeChatModel wiring (constructed, never called)", () => {
  it("openai: ChatOpenAI with the key, the model and the official base URL", () => {
    const m = makeChatModel(
      settings({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "sk-test", LLM_MODEL: "gpt-4.1" })
    )
    expect(m).toBeInstanceOf(ChatOpenAI)
    const o = m as ChatOpenAI
    expect(o.model).toBe("gpt-4.1")
    expect(o.apiKey).toBe("sk-test")
    expect(o.clientConfig.baseURL).toBe("https://api.openai.com/v1")
  })

  it("openai-compatible: ChatOpenAI at the given base URL, placeholder key when none", () => {
    const o = makeChatModel(
      settings({
        LLM_PROVIDER: "openai-compatible",
        OPENAI_BASE_URL: "http://localhost:8000/v1",
        LLM_MODEL: "qwen2.5"
      })
    ) as ChatOpenAI
    expect(o).toBeInstanceOf(ChatOpenAI)
    expect(o.model).toBe("qwen2.5")
    expect(o.clientConfig.baseURL).toBe("http://localhost:8000/v1")
    expect(o.apiKey).toBe(NO_KEY)
    const keyed = makeChatModel(
      settings({
        LLM_PROVIDER: "openai-compatible",
        OPENAI_BASE_URL: "https://llm.example.com/v1",
        LLM_MODEL: "m",
        OPENAI_API_KEY: "k"
      })
    ) as ChatOpenAI
    expect(keyed.apiKey).toBe("k")
  })

  it("anthropic: ChatAnthropic with the key, the model, an optional base URL and temperature", () => {
    const a = makeChatModel(
      settings({ LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "ak", LLM_TEMPERATURE: "0.2" })
    ) as ChatAnthropic
    expect(a).toBeInstanceOf(ChatAnthropic)
    expect(a.model).toBe("claude-sonnet-4-5")
    expect(a.apiKey).toBe("ak")
    expect(a.apiUrl).toBe("https://api.anthropic.com")
    expect(a.temperature).toBe(0.2)
    const proxied = makeChatModel(
      settings({
        LLM_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "ak",
        ANTHROPIC_BASE_URL: "https://proxy.example.com"
      })
    ) as ChatAnthropic
    expect(proxied.apiUrl).toBe("https://proxy.example.com")
  })

  it("ollama: ChatOllama at OLLAMA_BASE_URL or the local default", () => {
    const local = makeChatModel(settings({ LLM_PROVIDER: "ollama" })) as ChatOllama
    expect(local).toBeInstanceOf(ChatOllama)
    expect(local.model).toBe("llama3.1")
    expect(local.baseUrl).toBe("http://127.0.0.1:11434")
    const remote = makeChatModel(
      settings({ LLM_PROVIDER: "ollama", OLLAMA_BASE_URL: "http://gpu-box:11434", LLM_MODEL: "qwen2.5:7b" })
    ) as ChatOllama
    expect(remote.baseUrl).toBe("http://gpu-box:11434")
    expect(remote.model).toBe("qwen2.5:7b")
  })

  it("scripted: the offline router model, answering without network", async () => {
    const m = makeChatModel(settings({ LLM_PROVIDER: "scripted" }))
    expect(m).toBeInstanceOf(ScriptedChatModel)
    const reply = await m.invoke([new HumanMessage("hello")])
    expect(reply.text).toMatch(/^Hello!/)
  })
})

describe("envConfig", () => {
  it("reads the variables through Effect Config", () => {
    const env = Effect.runSync(
      Effect.withConfigProvider(
        envConfig,
        ConfigProvider.fromMap(
          new Map([
            ["LLM_PROVIDER", "ollama"],
            ["OLLAMA_BASE_URL", "http://h:1"]
          ])
        )
      )
    )
    expect(env.LLM_PROVIDER).toBe("ollama")
    expect(env.OLLAMA_BASE_URL).toBe("http://h:1")
    expect(env.OPENAI_API_KEY).toBeUndefined()
  })
})

describe("settingsFromEnv", () => {
  it("one ChatModelConfigError naming the first variable, every problem in its message", () => {
    const error = Either.getLeft(
      settingsFromEnv({ LLM_PROVIDER: "openai", LLM_TEMPERATURE: "9", OPENAI_BASE_URL: "notaurl" })
    ).pipe(Option.getOrThrow)
    expect(error).toBeInstanceOf(ChatModel.ChatModelConfigError)
    expect(error).toMatchObject({ reason: "malformed", variable: "LLM_TEMPERATURE" })
    expect(error.message.split("\n")).toEqual([
      expect.stringMatching(/^LLM_TEMPERATURE must be/),
      expect.stringMatching(/^OPENAI_API_KEY is required/),
      expect.stringMatching(/^OPENAI_BASE_URL must be/)
    ])
  })
})
