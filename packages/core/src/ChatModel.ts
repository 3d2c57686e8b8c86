/**
 * The `ChatModel` port: one provider-neutral model call. The provider is chosen by
 * `LLM_PROVIDER` in the adapters; core only knows the shapes below, so it stays free of any
 * LLM SDK. The LangGraph adapter drives LangChain models directly and exposes them through this
 * port (identity and a plain call) for hosts and tools that need a model outside the agent loop.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { ToolSpec } from "./ToolSpec.js"

/** Which model answers: shown by `GET /models`, logged with each turn. */
export interface ChatModelInfo {
  readonly provider: string
  readonly model: string
}

/** A call the model asks for. */
export interface ToolCallRequest {
  readonly id: string
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
}

/** Token usage of one call, as the provider reported it (same shape as `ModelResult.usage`). */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/** The model's answer: text, tool calls, or both. */
export interface AssistantMessage {
  readonly role: "assistant"
  readonly content: string
  readonly toolCalls?: ReadonlyArray<ToolCallRequest> | undefined
  readonly id?: string | undefined
}

/** One message of the conversation sent to the model. */
export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string; readonly id?: string | undefined }
  | AssistantMessage
  | {
      readonly role: "tool"
      readonly content: string
      readonly toolCallId: string
      readonly name?: string | undefined
      readonly id?: string | undefined
    }

/** One model call. */
export interface ChatRequest {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools?: ReadonlyArray<ToolSpec> | undefined
  /** Aborts the call (the client cancelled the turn). */
  readonly signal?: AbortSignal | undefined
}

/** What the model answered. */
export interface ChatResponse {
  readonly message: AssistantMessage
  readonly usage?: Usage | undefined
}

/** Why a model call failed. */
export const ChatModelErrorReason = Schema.Literal(
  "invalid-request",
  "unauthorized",
  "rate-limited",
  "unavailable",
  "aborted",
  "provider",
  "script-exhausted"
)
/** Why a model call failed. */
export type ChatModelErrorReason = typeof ChatModelErrorReason.Type

/** A model call failed. Plugin `onError` middleware sees it; by default it reaches the client. */
export class ChatModelError extends Schema.TaggedError<ChatModelError>()("ChatModelError", {
  reason: ChatModelErrorReason,
  message: Schema.String
}) {}

/** The model configuration in the environment is unusable; boot stops with `message`. */
export class ChatModelConfigError extends Schema.TaggedError<ChatModelConfigError>()("ChatModelConfigError", {
  reason: Schema.Literal("missing-key", "unknown-provider", "malformed", "missing-package"),
  /** The environment variable to fix, e.g. `OPENAI_API_KEY`. */
  variable: Schema.String,
  message: Schema.String
}) {}

/** The operations of the ChatModel port. */
export interface ChatModelService {
  readonly info: ChatModelInfo
  readonly invoke: (request: ChatRequest) => Effect.Effect<ChatResponse, ChatModelError>
}

/** The ChatModel port. */
export class ChatModel extends Context.Tag("@plugboard/core/ChatModel")<ChatModel, ChatModelService>() {}

/**
 * Checks what every provider would refuse, before spending a call: no messages, a tool without
 * a name or offered twice, a tool message answering no earlier tool call. An already aborted
 * signal fails `aborted`.
 */
export const checkRequest = (request: ChatRequest): Effect.Effect<ChatRequest, ChatModelError> => {
  const invalid = (message: string) => Effect.fail(new ChatModelError({ reason: "invalid-request", message }))
  if (request.signal?.aborted === true) {
    return Effect.fail(new ChatModelError({ reason: "aborted", message: "The model call was aborted." }))
  }
  if (!Array.isArray(request.messages) || request.messages.length === 0) {
    return invalid("A model call needs at least one message.")
  }
  const names = new Set<string>()
  for (const tool of request.tools ?? []) {
    if (typeof tool?.name !== "string" || tool.name === "") return invalid("Every tool needs a name.")
    if (names.has(tool.name)) return invalid(`Tool '${tool.name}' is offered twice.`)
    names.add(tool.name)
  }
  const calls = new Set<string>()
  for (const message of request.messages) {
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) calls.add(call.id)
    if (message.role === "tool" && !calls.has(message.toolCallId)) {
      return invalid(
        `Tool message answers '${message.toolCallId}', which no earlier assistant message called.`
      )
    }
  }
  return Effect.succeed(request)
}

/** One step of a scripted model: a text answer, an answer computed from the request, or a failure. */
export type ScriptStep =
  | string
  | AssistantMessage
  | ChatModelError
  | ((request: ChatRequest) => AssistantMessage | string)

/** A scripted model and the requests it received. */
export interface ScriptedModel extends ChatModelService {
  readonly requests: Effect.Effect<ReadonlyArray<ChatRequest>>
}

/**
 * A deterministic model for tests: answers with `steps` in order, records every request, and
 * fails `script-exhausted` past the last step. Usage is not reported (no tokens were spent).
 */
export const makeScripted = (
  steps: ReadonlyArray<ScriptStep>,
  info: ChatModelInfo = { provider: "scripted", model: "scripted" }
): Effect.Effect<ScriptedModel> =>
  Effect.sync(() => {
    const requests: Array<ChatRequest> = []
    return {
      info,
      requests: Effect.sync(() => [...requests]),
      invoke: (request) =>
        Effect.flatMap(checkRequest(request), (checked) =>
          Effect.suspend(() => {
            const step = steps[requests.length]
            requests.push(checked)
            if (step === undefined) {
              return Effect.fail(
                new ChatModelError({
                  reason: "script-exhausted",
                  message: `Scripted model has ${steps.length} steps; call ${requests.length} has none.`
                })
              )
            }
            if (step instanceof ChatModelError) return Effect.fail(step)
            const answer = typeof step === "function" ? step(checked) : step
            const message: AssistantMessage =
              typeof answer === "string" ? { role: "assistant", content: answer } : answer
            return Effect.succeed({ message })
          })
        )
    }
  })

/** A scripted `ChatModel` layer. */
export const layerScripted = (
  steps: ReadonlyArray<ScriptStep>,
  info?: ChatModelInfo
): Layer.Layer<ChatModel> => Layer.effect(ChatModel, makeScripted(steps, info))
