/**
 * Model providers behind the `ChatModel` port, chosen by `LLM_PROVIDER` through the official
 * `@langchain/*` packages. Everything a provider needs is read and checked here, at boot, and
 * passed to the LangChain class explicitly: the classes also read their own environment
 * variables, but a server must fail at boot naming the variable, not on the first user message.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AsyncCaller, type FailedAttemptHandler } from "@langchain/core/utils/async_caller"
import { Catalog } from "@plugboard/core"
import { Config, Either, Option } from "effect"
import { isNonEmptyReadonlyArray, type NonEmptyReadonlyArray } from "effect/Array"
import { anthropic, ollama, openai } from "./internal/sdks.js"
import { installCommand, providerPackage, required } from "./ProviderSdks.js"
import { type Counter, ScriptedChatModel } from "./ScriptedChatModel.js"

/** Every valid `LLM_PROVIDER`. */
export const providers = ["openai", "anthropic", "ollama", "openai-compatible", "scripted"] as const
/** A valid `LLM_PROVIDER`. */
export type Provider = (typeof providers)[number]

/** The model each provider uses when `LLM_MODEL` is not set (`openai-compatible` has none). */
export const defaultModels: Readonly<Record<Exclude<Provider, "openai-compatible">, string>> = {
  openai: "gpt-4o-mini",
  anthropic: "claude-sonnet-4-5",
  ollama: "llama3.1",
  scripted: "scripted-router"
}

/** Ollama's own default address. */
export const DEFAULT_OLLAMA_BASE_URL = "http://127.0.0.1:11434"

/**
 * The OpenAI SDK refuses to build a client without a key, but many OpenAI-compatible servers
 * (vLLM, llama.cpp, LM Studio) need none; this placeholder is sent instead.
 */
export const NO_KEY = "not-needed"

/** Checked provider settings: what `makeChatModel` builds from. */
export interface ChatModelSettings {
  readonly provider: Provider
  readonly model: string
  readonly apiKey?: string | undefined
  readonly baseUrl?: string | undefined
  readonly temperature?: number | undefined
}

/** The raw variables, as read from the environment (empty strings count as unset). */
export interface ChatModelEnv {
  readonly LLM_PROVIDER?: string | undefined
  readonly LLM_MODEL?: string | undefined
  readonly LLM_TEMPERATURE?: string | undefined
  readonly OPENAI_API_KEY?: string | undefined
  readonly OPENAI_BASE_URL?: string | undefined
  readonly ANTHROPIC_API_KEY?: string | undefined
  readonly ANTHROPIC_BASE_URL?: string | undefined
  readonly OLLAMA_BASE_URL?: string | undefined
}

/** Why a configuration was refused; `variable` names the environment variable to fix. */
export interface ConfigProblem {
  readonly reason: "missing-key" | "unknown-provider" | "malformed" | "missing-package"
  readonly variable: string
  readonly message: string
}

const present = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

const missing = (variable: string, provider: string, what: string): ConfigProblem => ({
  reason: "missing-key",
  variable,
  message: `${variable} is required when LLM_PROVIDER=${provider} (${what}).`
})

const url = (variable: string, value: string | undefined): ConfigProblem | undefined => {
  if (value === undefined) return undefined
  try {
    const parsed = new URL(value)
    if (parsed.protocol === "http:" || parsed.protocol === "https:") return undefined
  } catch {
    // reported below
  }
  return {
    reason: "malformed",
    variable,
    message: `${variable} must be an http(s) URL, got ${JSON.stringify(value)}.`
  }
}

const unknownProvider = (raw: string): ConfigProblem => ({
  reason: "unknown-provider",
  variable: "LLM_PROVIDER",
  message: `LLM_PROVIDER=${JSON.stringify(raw)} is not a provider; valid: ${providers.join(", ")}.`
})

const temperatureOf = (raw: string | undefined): number | ConfigProblem | undefined => {
  if (raw === undefined) return undefined
  const n = Number(raw)
  return Number.isFinite(n) && n >= 0 && n <= 2
    ? n
    : {
        reason: "malformed",
        variable: "LLM_TEMPERATURE",
        message: `LLM_TEMPERATURE must be a number between 0 and 2, got ${JSON.stringify(raw)}.`
      }
}

/**
 * Checks a set of variables and resolves defaults. Pure for a given install: the same variables
 * always give the same settings or the same problems (a provider whose SDK, an optional peer, is
 * not installed is one of them). Every problem is reported at once, one per variable, each naming
 * the variable to fix, so a server is configured in one pass.
 */
export const resolveSettings = (
  env: ChatModelEnv
): Either.Either<ChatModelSettings, NonEmptyReadonlyArray<ConfigProblem>> => {
  const problems: Array<ConfigProblem> = []
  const check = (problem: ConfigProblem | undefined) => {
    if (problem !== undefined) problems.push(problem)
  }
  const raw = present(env.LLM_PROVIDER) ?? "scripted"
  const provider = raw.toLowerCase() as Provider
  if (!providers.includes(provider)) check(unknownProvider(raw))
  // Checked for every provider, even an unknown one or the scripted one that ignores it: a typo
  // is reported in the same pass as the rest.
  const checkedTemperature = temperatureOf(present(env.LLM_TEMPERATURE))
  const temperature = typeof checkedTemperature === "number" ? checkedTemperature : undefined
  if (typeof checkedTemperature === "object") check(checkedTemperature)
  const model = present(env.LLM_MODEL)
  let settings: ChatModelSettings | undefined
  switch (provider) {
    case "openai": {
      const apiKey = present(env.OPENAI_API_KEY)
      const baseUrl = present(env.OPENAI_BASE_URL)
      if (apiKey === undefined) check(missing("OPENAI_API_KEY", provider, "the OpenAI API key"))
      check(url("OPENAI_BASE_URL", baseUrl))
      settings = { provider, model: model ?? defaultModels.openai, apiKey, baseUrl, temperature }
      break
    }
    case "anthropic": {
      const apiKey = present(env.ANTHROPIC_API_KEY)
      const baseUrl = present(env.ANTHROPIC_BASE_URL)
      if (apiKey === undefined) check(missing("ANTHROPIC_API_KEY", provider, "the Anthropic API key"))
      check(url("ANTHROPIC_BASE_URL", baseUrl))
      settings = { provider, model: model ?? defaultModels.anthropic, apiKey, baseUrl, temperature }
      break
    }
    case "ollama": {
      const baseUrl = present(env.OLLAMA_BASE_URL) ?? DEFAULT_OLLAMA_BASE_URL
      check(url("OLLAMA_BASE_URL", baseUrl))
      settings = { provider, model: model ?? defaultModels.ollama, baseUrl, temperature }
      break
    }
    case "openai-compatible": {
      const baseUrl = present(env.OPENAI_BASE_URL)
      check(
        baseUrl === undefined
          ? missing("OPENAI_BASE_URL", provider, "the server's base URL, e.g. http://localhost:8000/v1")
          : url("OPENAI_BASE_URL", baseUrl)
      )
      if (model === undefined) check(missing("LLM_MODEL", provider, "the model name the server serves"))
      settings = {
        provider,
        model: model ?? "",
        apiKey: present(env.OPENAI_API_KEY),
        baseUrl,
        temperature
      }
      break
    }
    case "scripted":
      settings = { provider, model: model ?? defaultModels.scripted }
      break
  }
  const sdk = providerPackage(provider)
  if (sdk !== undefined && !sdk.installed) {
    check({
      reason: "missing-package",
      variable: "LLM_PROVIDER",
      message: `LLM_PROVIDER=${provider} needs the package ${sdk.name}, an optional peer of @plugboard/models that is not installed: ${installCommand(sdk.name)}.`
    })
  }
  if (isNonEmptyReadonlyArray(problems)) return Either.left(problems)
  // Only an unknown provider leaves `settings` unset, and that is a problem above.
  return settings === undefined ? Either.left([unknownProvider(raw)]) : Either.right(settings)
}

const variable = (name: keyof ChatModelEnv) => Config.option(Config.string(name))

/** The variables of `ChatModelEnv`, read through Effect `Config` (so any `ConfigProvider` works). */
export const envConfig: Config.Config<ChatModelEnv> = Config.all({
  LLM_PROVIDER: variable("LLM_PROVIDER"),
  LLM_MODEL: variable("LLM_MODEL"),
  LLM_TEMPERATURE: variable("LLM_TEMPERATURE"),
  OPENAI_API_KEY: variable("OPENAI_API_KEY"),
  OPENAI_BASE_URL: variable("OPENAI_BASE_URL"),
  ANTHROPIC_API_KEY: variable("ANTHROPIC_API_KEY"),
  ANTHROPIC_BASE_URL: variable("ANTHROPIC_BASE_URL"),
  OLLAMA_BASE_URL: variable("OLLAMA_BASE_URL")
}).pipe(
  Config.map(
    (vars) =>
      Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, Option.getOrUndefined(v)])) as ChatModelEnv
  )
)

/** What the scripted provider needs from the host: the catalog it routes over. */
export interface ChatModelDeps {
  /** The catalog the scripted router ranks; an empty catalog when absent. */
  readonly catalog?: Catalog.Catalog | undefined
  /** Counts the scripted model's usage tokens. */
  readonly tokenCounter?: Counter | undefined
}

/** LangChain's own retry policy (not exported by `@langchain/core`; read off a caller). */
const langchainRetryPolicy = (new AsyncCaller({}) as unknown as { onFailedAttempt: FailedAttemptHandler })
  .onFailedAttempt

/** Error codes of an endpoint that is not there: retrying it only delays the failure. */
const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND"])

/** Whether an error, or one it wraps (`cause`, an AggregateError's `errors`), says unreachable. */
const unreachable = (error: unknown, depth = 0): boolean => {
  if (typeof error !== "object" || error === null || depth > 6) return false
  const e = error as { code?: unknown; cause?: unknown; errors?: unknown }
  if (typeof e.code === "string" && UNREACHABLE.has(e.code)) return true
  if (Array.isArray(e.errors) && e.errors.some((inner) => unreachable(inner, depth + 1))) return true
  return unreachable(e.cause, depth + 1)
}

/**
 * LangChain's retry policy, except that a refused connection or an unknown host fails at once:
 * with its six retries and their back-off, an endpoint that refuses connections took 85 s to
 * fail a turn. Rate limits and server errors are still retried.
 */
const failFastWhenUnreachable: FailedAttemptHandler = (error) => {
  if (unreachable(error)) throw error
  return langchainRetryPolicy(error)
}

/**
 * Builds the LangChain chat model for checked settings. Never calls the network: providers
 * connect on the first model call.
 */
export const makeChatModel = (settings: ChatModelSettings, deps: ChatModelDeps = {}): BaseChatModel => {
  const temperature = settings.temperature === undefined ? {} : { temperature: settings.temperature }
  switch (settings.provider) {
    case "openai":
    case "openai-compatible":
      return new (required("@langchain/openai", openai).ChatOpenAI)({
        model: settings.model,
        onFailedAttempt: failFastWhenUnreachable,
        apiKey: settings.apiKey ?? NO_KEY,
        ...temperature,
        // Always explicit, so an OPENAI_BASE_URL left in the environment cannot redirect `openai`.
        configuration: { baseURL: settings.baseUrl ?? "https://api.openai.com/v1" }
      })
    case "anthropic":
      return new (required("@langchain/anthropic", anthropic).ChatAnthropic)({
        model: settings.model,
        onFailedAttempt: failFastWhenUnreachable,
        apiKey: settings.apiKey,
        ...temperature,
        anthropicApiUrl: settings.baseUrl ?? "https://api.anthropic.com"
      })
    case "ollama":
      return new (required("@langchain/ollama", ollama).ChatOllama)({
        model: settings.model,
        onFailedAttempt: failFastWhenUnreachable,
        baseUrl: settings.baseUrl ?? DEFAULT_OLLAMA_BASE_URL,
        ...temperature
      })
    case "scripted":
      return ScriptedChatModel.router(
        { catalog: deps.catalog ?? Catalog.unsafeMake([]) },
        {
          model: settings.model,
          tokenCounter: deps.tokenCounter,
          // A server keeps one model for its lifetime: bound the log of recorded calls.
          maxRecordedCalls: 100
        }
      )
  }
}
