/**
 * A LangChain chat model behind core's `ChatModel` port, and the layers a host composes at boot.
 * The agent loop drives the LangChain model itself (`LangChainChatModel`); the port serves hosts
 * and tools that need one plain model call, and `GET /models` (its `info`). Both come from the
 * same checked settings, so a configuration problem stops boot once, naming the variable.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage
} from "@langchain/core/messages"
import { ChatModel, describe } from "@plugboard/core"
import { Context, Effect, Either, Layer } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import {
  type ChatModelDeps,
  type ChatModelEnv,
  type ChatModelSettings,
  type ConfigProblem,
  envConfig,
  makeChatModel,
  resolveSettings
} from "./Providers.js"
import { ScriptExhaustedError } from "./ScriptedChatModel.js"

/** One of core's messages as LangChain's; an unknown role is an `invalid-request` error. */
export const toLangChainMessage = (m: ChatModel.ChatMessage): BaseMessage => {
  switch (m.role) {
    case "system":
      return new SystemMessage(m.content)
    case "user":
      return new HumanMessage({ content: m.content, ...(m.id === undefined ? {} : { id: m.id }) })
    case "assistant":
      return new AIMessage({
        content: m.content,
        ...(m.id === undefined ? {} : { id: m.id }),
        tool_calls: (m.toolCalls ?? []).map((c) => ({
          id: c.id,
          name: c.name,
          args: { ...c.args },
          type: "tool_call"
        }))
      })
    case "tool":
      return new ToolMessage({
        content: m.content,
        tool_call_id: m.toolCallId,
        ...(m.name === undefined ? {} : { name: m.name }),
        ...(m.id === undefined ? {} : { id: m.id })
      })
    default:
      throw new ChatModel.ChatModelError({
        reason: "invalid-request",
        message: `Unknown message role ${JSON.stringify((m as { role?: unknown }).role)}.`
      })
  }
}

/** Core's message shapes translated to LangChain's. */
export const toLangChainMessages = (messages: ReadonlyArray<ChatModel.ChatMessage>): Array<BaseMessage> =>
  messages.map(toLangChainMessage)

/** A LangChain AI message as core's `ChatResponse` (text, tool calls, reported usage). */
export const fromAIMessage = (message: AIMessage): ChatModel.ChatResponse => {
  const calls = (message.tool_calls ?? []).map((c, i) => ({
    id: c.id ?? `call_${i}`,
    name: c.name,
    args: c.args
  }))
  const usage = message.usage_metadata
  return {
    message: {
      role: "assistant",
      content: message.text,
      ...(calls.length > 0 ? { toolCalls: calls } : {}),
      ...(message.id === undefined ? {} : { id: message.id })
    },
    ...(usage === undefined
      ? {}
      : { usage: { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens } })
  }
}

// The OpenAI and Anthropic SDKs put the HTTP status on `status`; ollama-js's `ResponseError` on
// `status_code`.
const statusOf = (error: unknown): number | undefined => {
  const e = error as { status?: unknown; status_code?: unknown; response?: { status?: unknown } } | null
  const status = e?.status ?? e?.status_code ?? e?.response?.status
  return typeof status === "number" ? status : undefined
}

/**
 * Classifies a provider failure into core's reasons, from what the official SDKs expose: the HTTP
 * status, LangChain's `lc_error_code`, abort and connection errors.
 */
export const classifyError = (error: unknown, signal?: AbortSignal): ChatModel.ChatModelError => {
  const message = describe(error)
  const make = (reason: ChatModel.ChatModelErrorReason) => new ChatModel.ChatModelError({ reason, message })
  if (error instanceof ChatModel.ChatModelError) return error
  if (error instanceof ScriptExhaustedError) return make("script-exhausted")
  const name = (error as { name?: unknown } | null)?.name
  if (signal?.aborted === true || name === "AbortError" || /abort/i.test(String(name))) return make("aborted")
  const code = (error as { lc_error_code?: unknown } | null)?.lc_error_code
  const status = statusOf(error)
  if (code === "MODEL_AUTHENTICATION" || status === 401 || status === 403) return make("unauthorized")
  if (code === "MODEL_RATE_LIMIT" || status === 429) return make("rate-limited")
  if (status !== undefined && status >= 500) return make("unavailable")
  if (code === "MODEL_NOT_FOUND" || (status !== undefined && status >= 400)) return make("invalid-request")
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause
  if (
    /ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|fetch failed|Connection error/i.test(
      `${message} ${String(cause?.code ?? "")}`
    )
  ) {
    return make("unavailable")
  }
  return make("provider")
}

/**
 * Core's `ChatModel` service over a LangChain chat model: each call binds exactly the request's
 * tools (OpenAI function format, which every `@langchain/*` provider accepts) and translates
 * messages both ways. Requests are checked with core's `checkRequest` before any call.
 */
export const fromLangChain = (
  model: BaseChatModel,
  info: ChatModel.ChatModelInfo
): ChatModel.ChatModelService => ({
  info,
  invoke: (request) =>
    Effect.flatMap(ChatModel.checkRequest(request), (checked) =>
      Effect.tryPromise({
        try: async (signal) => {
          const tools = checked.tools ?? []
          const runnable =
            tools.length === 0 || model.bindTools === undefined
              ? model
              : model.bindTools(
                  tools.map((t) => ({
                    type: "function",
                    function: { name: t.name, description: t.description, parameters: t.parameters }
                  }))
                )
          const merged = checked.signal === undefined ? signal : AbortSignal.any([signal, checked.signal])
          const reply = await runnable.invoke(toLangChainMessages(checked.messages), { signal: merged })
          return fromAIMessage(reply as AIMessage)
        },
        catch: (error) => classifyError(error, checked.signal)
      })
    )
})

/** The LangChain model the agent loop drives, with what it is (`GET /models`). */
export interface LangChainChatModelService {
  readonly model: BaseChatModel
  readonly info: ChatModel.ChatModelInfo
  readonly settings: ChatModelSettings
}

/** The LangChain model built from the configuration, for the agent loop. */
export class LangChainChatModel extends Context.Tag("@plugboard/models/LangChainChatModel")<
  LangChainChatModel,
  LangChainChatModelService
>() {}

/** Both services, from checked settings. */
export const layerChatModel = (
  settings: ChatModelSettings,
  deps: ChatModelDeps = {}
): Layer.Layer<ChatModel.ChatModel | LangChainChatModel> => {
  const model = makeChatModel(settings, deps)
  const info = { provider: settings.provider, model: settings.model }
  return Layer.merge(
    Layer.succeed(LangChainChatModel, { model, info, settings }),
    Layer.succeed(ChatModel.ChatModel, fromLangChain(model, info))
  )
}

/**
 * The problems as one error: the first one's reason and variable, and every message (one per
 * line), so a host that prints the message still shows every variable to fix.
 */
const toConfigError = (problems: NonEmptyReadonlyArray<ConfigProblem>) =>
  new ChatModel.ChatModelConfigError({
    reason: problems[0].reason,
    variable: problems[0].variable,
    message: problems.map((p) => p.message).join("\n")
  })

/**
 * Checks `env` (e.g. `process.env`) into settings, or one `ChatModelConfigError` naming the
 * first variable to fix and listing every problem in its message.
 */
export const settingsFromEnv = (
  env: ChatModelEnv
): Either.Either<ChatModelSettings, ChatModel.ChatModelConfigError> =>
  Either.mapLeft(resolveSettings(env), toConfigError)

/**
 * For hosts without Effect: the LangChain model for `env`, or a thrown `ChatModelConfigError`
 * whose message names the variable to fix.
 */
export const chatModelFromEnv = (env: ChatModelEnv, deps: ChatModelDeps = {}): BaseChatModel =>
  makeChatModel(
    Either.getOrThrowWith(settingsFromEnv(env), (e) => e),
    deps
  )

/**
 * Both services from the environment, read through Effect `Config` (`LLM_PROVIDER`, `LLM_MODEL`,
 * `LLM_TEMPERATURE`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`,
 * `ANTHROPIC_BASE_URL`, `OLLAMA_BASE_URL`). Fails with `ChatModelConfigError` at boot.
 */
export const layerChatModelConfig = (
  deps: ChatModelDeps = {}
): Layer.Layer<ChatModel.ChatModel | LangChainChatModel, ChatModel.ChatModelConfigError> =>
  Layer.unwrapEffect(
    envConfig.pipe(
      Effect.orDie,
      Effect.flatMap((env) => settingsFromEnv(env)),
      Effect.map((settings) => layerChatModel(settings, deps))
    )
  )
