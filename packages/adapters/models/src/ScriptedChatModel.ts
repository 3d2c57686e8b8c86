/**
 * A deterministic, offline LangChain chat model. `fakeModel()` from `@langchain/core/testing`
 * does not record which tools were bound, and the whole point of plugboard is *what the model is
 * offered*, so this one does: every invocation records the tool names it was offered and the
 * messages it saw, in a log shared by every bound copy. Zero latency; usage is reported in tokens
 * counted with a `TokenCounter`, so credits can be deducted downstream exactly as for a provider:
 * input = the sum over messages of `count("<type>: <text><tool calls as JSON>")` plus, per bound
 * tool, `count(JSON of its OpenAI function definition)`; output = `count(answer)`, or of the tool
 * calls as JSON, plus `count(reasoning)` when the reply carries reasoning (providers bill it as
 * output too; also reported as `output_token_details.reasoning`).
 *
 * A reply may carry reasoning (`{ reasoning, reply }`; the router's replies always do). The model
 * exposes it as DeepSeek, vLLM and Ollama do, in `additional_kwargs.reasoning_content` — on the
 * first streamed chunk, before any text or tool call — so it reaches the client through the same
 * extraction as a real provider's (`langgraph/Reasoning.ts`), never as answer text.
 */
import { createHash } from "node:crypto"
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager"
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BaseChatModelParams,
  type BindToolsInput
} from "@langchain/core/language_models/chat_models"
import { AIMessage, AIMessageChunk, type BaseMessage, type UsageMetadata } from "@langchain/core/messages"
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs"
import { convertToOpenAITool } from "@langchain/core/utils/function_calling"
import { TokenCounter, type ToolSpec } from "@plugboard/core"
import { Data } from "effect"
import { type RouterOptions, routerResponder } from "./Router.js"
import type {
  Responder,
  ScriptedReasonedReply,
  ScriptedReply,
  ScriptedToolCall,
  ScriptStep
} from "./Script.js"

export type {
  Responder,
  ScriptedAction,
  ScriptedReasonedReply,
  ScriptedReply,
  ScriptedToolCall,
  ScriptedTurn,
  ScriptStep
} from "./Script.js"

/** Core's `TokenCounter` service: what the model counts usage with. */
export type Counter = TokenCounter.TokenCounterService

/** One recorded invocation. `message` is absent when the reply was an error. */
export interface ScriptedCall {
  readonly offeredTools: ReadonlyArray<string>
  readonly messages: ReadonlyArray<BaseMessage>
  message?: AIMessage
  usage?: UsageMetadata
}

/** Raised when a scripted model is invoked more times than its script has steps. */
export class ScriptExhaustedError extends Data.TaggedError("ScriptExhaustedError")<{
  readonly steps: number
  readonly callIndex: number
  readonly lastMessage: string
  readonly message: string
}> {
  // Thrown inside LangChain's model call: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(steps: number, callIndex: number, lastMessage: string) {
    super({
      steps,
      callIndex,
      lastMessage,
      message:
        `Scripted model: the script has ${steps} step(s) and all were used; invocation #${callIndex + 1} ` +
        `has no step (last message: ${JSON.stringify(lastMessage.slice(0, 120))}).`
    })
  }
}

/** Replays `steps` in order, one per invocation; one step past the end throws `ScriptExhaustedError`. */
export const scriptResponder = (steps: ReadonlyArray<ScriptStep>): Responder => {
  let cursor = 0
  return (turn) => {
    const step = steps[cursor]
    if (cursor >= steps.length || step === undefined) {
      throw new ScriptExhaustedError(steps.length, turn.callIndex, turn.messages.at(-1)?.text ?? "")
    }
    cursor += 1
    return typeof step === "function" ? step(turn) : step
  }
}

/** Options of `ScriptedChatModel`. */
export interface ScriptedChatModelOptions extends BaseChatModelParams {
  readonly respond: Responder
  /**
   * Counts usage tokens; default core's heuristic counter (cheap, ~4% over tiktoken). Pass an
   * exact counter from `@plugboard/tokenizers` when credits must match a provider.
   */
  readonly tokenCounter?: Counter
  /** Reported as the model name (`ls_model_name`); default `scripted`. */
  readonly model?: string
  /** A streamed final answer is split into this many chunks (fewer for short text); default 3. */
  readonly answerChunks?: number
  /** Keep only the last N invocations in `calls` (a long-running server); default: all. */
  readonly maxRecordedCalls?: number
}

/** How many of the last messages, with the thread's length, make a reply's id (see `#respond`). */
const ID_CONTEXT = 4

interface SharedLog {
  readonly calls: ScriptedCall[]
  invocations: number
  readonly tools: WeakMap<object, number>
  /** The copies `bindTools` made, by their tools' names (see `bindTools`). */
  readonly bound: Map<
    string,
    { readonly tools: ReadonlyArray<BindToolsInput>; readonly model: ScriptedChatModel }
  >
}

/** Bound copies a model keeps for `bindTools` to hand out again, before it starts over. */
const BOUND_COPIES_KEPT = 32

/** A message's text as the scripted model reads it, and its tokens by one counter. */
interface Measured {
  readonly text: string
  readonly tokens: number
}

/**
 * Measured messages, per counter and per message object, shared by every scripted model: runtimes
 * hand the same message objects to call after call, and from turn to turn (the graph keeps its
 * messages, the SQLite saver its decoded history), while a host builds a model per request. Each
 * message is serialised and counted once, so a call's cost follows what is new in the thread,
 * not its length.
 */
const measuredMessages = new WeakMap<Counter, WeakMap<BaseMessage, Measured>>()

/**
 * Token counts per counter and per text: a runtime builds some messages anew for every call with
 * the same text (its system prompt), and a script replies with the same texts turn after turn.
 * Counting was the scripted model's largest allocation (about 100 KB of a server's 2.4 MB per
 * streamed turn, measured 2026-11-25), work a real provider does on its own machines. Bounded:
 * the oldest text goes first.
 */
const countedTexts = new WeakMap<Counter, Map<string, number>>()
const COUNTED_TEXTS_MAX = 256

const countText = (counter: Counter, text: string): number => {
  let byText = countedTexts.get(counter)
  if (byText === undefined) {
    byText = new Map()
    countedTexts.set(counter, byText)
  }
  let tokens = byText.get(text)
  if (tokens === undefined) {
    tokens = counter.count(text)
    if (byText.size >= COUNTED_TEXTS_MAX) byText.delete(byText.keys().next().value!)
    byText.set(text, tokens)
  }
  return tokens
}

type Reply = (
  | { readonly kind: "answer"; readonly text: string }
  | {
      readonly kind: "tools"
      readonly calls: ReadonlyArray<{ readonly name: string; readonly args: Record<string, unknown> }>
    }
) & { readonly reasoning?: string }

/** Name of a tool in any of the shapes `bindTools` accepts (LangChain tool, OpenAI or Anthropic format). */
export const toolName = (tool: BindToolsInput): string => {
  const t = tool as { name?: unknown; function?: { name?: unknown } }
  const name = typeof t.function?.name === "string" ? t.function.name : t.name
  if (typeof name !== "string") throw new TypeError("ScriptedChatModel.bindTools: a tool has no name")
  return name
}

/** A bound tool as a definition; a tool LangChain cannot convert keeps its name alone. */
const definitionOf = (tool: BindToolsInput): ToolSpec.ToolSpec => {
  try {
    const f = convertToOpenAITool(tool as never).function
    return {
      name: f.name,
      description: f.description ?? "",
      parameters: (f.parameters ?? {}) as ToolSpec.ToolSpec["parameters"]
    }
  } catch {
    return { name: toolName(tool), description: "", parameters: {} }
  }
}

const isReasoned = (reply: Exclude<ScriptedReply, Error>): reply is ScriptedReasonedReply =>
  typeof reply === "object" && !Array.isArray(reply) && "reply" in reply

const normalise = (reply: Exclude<ScriptedReply, Error>): Reply => {
  if (isReasoned(reply)) {
    if (typeof reply.reasoning !== "string")
      throw new TypeError("Scripted model: a step's reasoning must be a string")
    if (isReasoned(reply.reply as Exclude<ScriptedReply, Error>))
      throw new TypeError("Scripted model: a reasoned step's reply cannot carry reasoning again")
    const inner = normalise(reply.reply)
    return reply.reasoning.length === 0 ? inner : { ...inner, reasoning: reply.reasoning }
  }
  if (typeof reply === "string") return { kind: "answer", text: reply }
  const calls = Array.isArray(reply) ? reply : [reply as ScriptedToolCall]
  if (calls.length === 0)
    throw new TypeError("Scripted model: a step with no tool call (use a string to answer)")
  return { kind: "tools", calls: calls.map((c) => ({ name: c.tool, args: { ...(c.args ?? {}) } })) }
}

const messageText = (m: BaseMessage): string => {
  const calls = AIMessage.isInstance(m) && m.tool_calls?.length ? JSON.stringify(m.tool_calls) : ""
  // `.text` walks content blocks; plain string content needs no walk.
  return `${m.type}: ${typeof m.content === "string" ? m.content : m.text}${calls}`
}

/** Splits `text` into at most `n` chunks at word boundaries; their concatenation is `text`. */
export const splitAnswer = (text: string, n: number): ReadonlyArray<string> => {
  const words = text.match(/\S+\s*|\s+/g) ?? []
  if (words.length === 0) return [text]
  const size = Math.ceil(words.length / Math.max(1, n))
  const out: string[] = []
  for (let i = 0; i < words.length; i += size) out.push(words.slice(i, i + size).join(""))
  return out
}

/**
 * The scripted model. Build it with `ScriptedChatModel.script(steps)` (replay) or
 * `ScriptedChatModel.router({ catalog })` (the offline router). `bindTools` returns a copy sharing the call log and the responder.
 */
export class ScriptedChatModel extends BaseChatModel<BaseChatModelCallOptions, AIMessageChunk> {
  /** Invocations of this model and every bound copy, oldest first. */
  readonly calls: ScriptedCall[]
  /** Names of the tools bound to this copy (empty for the unbound model). */
  readonly offeredTools: ReadonlyArray<string>
  readonly model: string
  readonly tokenCounter: Counter
  readonly #options: ScriptedChatModelOptions
  readonly #log: SharedLog
  readonly #boundTools: ReadonlyArray<BindToolsInput>
  #toolTokens: number | undefined
  #toolDefinitions: ReadonlyArray<ToolSpec.ToolSpec> | undefined

  constructor(options: ScriptedChatModelOptions, log?: SharedLog, tools: ReadonlyArray<BindToolsInput> = []) {
    super(options)
    this.#options = options
    this.#log = log ?? { calls: [], invocations: 0, tools: new WeakMap(), bound: new Map() }
    this.#boundTools = tools
    this.calls = this.#log.calls
    this.offeredTools = tools.map(toolName)
    this.model = options.model ?? "scripted"
    this.tokenCounter = options.tokenCounter ?? TokenCounter.heuristic
  }

  /** A model that replays `steps` in order. */
  static script(
    steps: ReadonlyArray<ScriptStep>,
    options: Omit<ScriptedChatModelOptions, "respond"> = {}
  ): ScriptedChatModel {
    return new ScriptedChatModel({ ...options, respond: scriptResponder(steps) })
  }

  /**
   * The offline router (see `Router.ts`): over `router.catalog` when given, and over the
   * definitions of the tools each call is offered (with what the meta-tools' results in the
   * conversation say) when the catalog has no move or there is none.
   */
  static router(
    router: RouterOptions = {},
    options: Omit<ScriptedChatModelOptions, "respond"> = {}
  ): ScriptedChatModel {
    return new ScriptedChatModel({ model: "scripted-router", ...options, respond: routerResponder(router) })
  }

  override _llmType(): string {
    return "scripted"
  }

  override getLsParams(options: this["ParsedCallOptions"]) {
    return { ...super.getLsParams(options), ls_provider: "scripted", ls_model_name: this.model }
  }

  /** A copy offered exactly `tools` (replacing, as providers do), sharing the log and the responder. */
  override bindTools(
    tools: BindToolsInput[],
    _kwargs?: Partial<BaseChatModelCallOptions>
  ): ScriptedChatModel {
    // A copy holds nothing but its tools and what it derives from them (names, token counts,
    // definitions), beside the shared options and log: binding the very same tool objects again
    // (an agent binds its offer at every model call) hands out the copy made for them, rather
    // than building another model (LangChain's constructor costs more than the scripted reply).
    const names = tools.map(toolName).join("\u0000")
    const known = this.#log.bound.get(names)
    if (
      known !== undefined &&
      known.tools.length === tools.length &&
      known.tools.every((t, i) => t === tools[i])
    )
      return known.model
    const model = new ScriptedChatModel(this.#options, this.#log, [...tools])
    if (this.#log.bound.size >= BOUND_COPIES_KEPT && known === undefined) this.#log.bound.clear()
    this.#log.bound.set(names, { tools: [...tools], model })
    return model
  }

  /** Number of invocations so far (recorded or not). */
  get callCount(): number {
    return this.#log.invocations
  }

  // Offered tool schemas count as input, as they do for providers; computed once per bound copy.
  #offeredToolTokens(): number {
    if (this.#toolTokens === undefined) {
      let sum = 0
      for (const tool of this.#boundTools) {
        const key = tool as object
        let tokens = this.#log.tools.get(key)
        if (tokens === undefined) {
          tokens = this.tokenCounter.count(JSON.stringify(convertToOpenAITool(tool as never)))
          this.#log.tools.set(key, tokens)
        }
        sum += tokens
      }
      this.#toolTokens = sum
    }
    return this.#toolTokens
  }

  // The bound tools as definitions, for a responder that reads them (`ScriptedTurn.tools`):
  // computed on first read only, since the catalog router and scripts never need them.
  #definitions(): ReadonlyArray<ToolSpec.ToolSpec> {
    this.#toolDefinitions ??= this.#boundTools.map(definitionOf)
    return this.#toolDefinitions
  }

  #measure(m: BaseMessage): Measured {
    let byMessage = measuredMessages.get(this.tokenCounter)
    if (byMessage === undefined) {
      byMessage = new WeakMap()
      measuredMessages.set(this.tokenCounter, byMessage)
    }
    let entry = byMessage.get(m)
    if (entry === undefined) {
      const text = messageText(m)
      entry = { text, tokens: countText(this.tokenCounter, text) }
      byMessage.set(m, entry)
    }
    return entry
  }

  #respond(messages: ReadonlyArray<BaseMessage>): AIMessage {
    const callIndex = this.#log.invocations++
    const record: ScriptedCall = { offeredTools: this.offeredTools, messages: [...messages] }
    this.#log.calls.push(record)
    const max = this.#options.maxRecordedCalls
    if (max !== undefined && this.#log.calls.length > max)
      this.#log.calls.splice(0, this.#log.calls.length - max)

    const definitions = () => this.#definitions()
    const raw = this.#options.respond({
      messages,
      offeredTools: this.offeredTools,
      callIndex,
      get tools() {
        return definitions()
      }
    })
    if (raw instanceof Error) throw raw
    const reply = normalise(raw)

    const measured = messages.map((m) => this.#measure(m))
    const output =
      reply.kind === "answer"
        ? reply.text
        : JSON.stringify(reply.calls.map((c) => ({ name: c.name, args: c.args })))
    // Ids must be unique within a thread (the messages reducer dedupes by id) and reproducible.
    // A thread only grows from one call to the next, so its length with its last messages and the
    // reply is both, at a cost that does not grow with the conversation (hashing the whole
    // history did: a long thread's every call re-read all of it).
    const hash = createHash("sha256").update(String(measured.length))
    for (const e of measured.slice(-ID_CONTEXT)) hash.update("\0").update(e.text)
    const id = `scripted-${hash.update("\0\0").update(output).digest("hex").slice(0, 20)}`
    const input = measured.reduce((sum, e) => sum + e.tokens, 0) + this.#offeredToolTokens()
    const reasoningTokens = reply.reasoning === undefined ? 0 : countText(this.tokenCounter, reply.reasoning)
    const outputTokens = countText(this.tokenCounter, output) + reasoningTokens
    const usage: UsageMetadata = {
      input_tokens: input,
      output_tokens: outputTokens,
      total_tokens: input + outputTokens,
      ...(reply.reasoning === undefined ? {} : { output_token_details: { reasoning: reasoningTokens } })
    }
    const additional_kwargs = reply.reasoning === undefined ? {} : { reasoning_content: reply.reasoning }
    const message =
      reply.kind === "answer"
        ? new AIMessage({ id, content: reply.text, additional_kwargs, usage_metadata: usage })
        : new AIMessage({
            id,
            content: "",
            additional_kwargs,
            usage_metadata: usage,
            tool_calls: reply.calls.map((c, i) => ({
              id: `call_${id.slice(9)}_${i}`,
              name: c.name,
              args: c.args,
              type: "tool_call"
            }))
          })
    record.message = message
    record.usage = usage
    return message
  }

  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"]): Promise<ChatResult> {
    options.signal?.throwIfAborted()
    const message = this.#respond(messages)
    const usage = message.usage_metadata!
    return {
      generations: [{ text: message.text, message }],
      llmOutput: {
        tokenUsage: {
          promptTokens: usage.input_tokens,
          completionTokens: usage.output_tokens,
          totalTokens: usage.total_tokens
        }
      }
    }
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun
  ): AsyncGenerator<ChatGenerationChunk> {
    options.signal?.throwIfAborted()
    const message = this.#respond(messages)
    const id = message.id
    const reasoning = message.additional_kwargs.reasoning_content
    if (typeof reasoning === "string") {
      // As reasoning providers stream: the reasoning first, in a chunk of its own.
      const chunk = new ChatGenerationChunk({
        text: "",
        message: new AIMessageChunk({ id, content: "", additional_kwargs: { reasoning_content: reasoning } })
      })
      yield chunk
      await runManager?.handleLLMNewToken("", undefined, undefined, undefined, undefined, { chunk })
    }
    if (message.tool_calls && message.tool_calls.length > 0) {
      const chunk = new ChatGenerationChunk({
        text: "",
        message: new AIMessageChunk({
          id,
          content: "",
          usage_metadata: message.usage_metadata,
          tool_call_chunks: message.tool_calls.map((c, index) => ({
            type: "tool_call_chunk",
            id: c.id,
            name: c.name,
            args: JSON.stringify(c.args),
            index
          }))
        })
      })
      yield chunk
      await runManager?.handleLLMNewToken("", undefined, undefined, undefined, undefined, { chunk })
      return
    }
    const parts = splitAnswer(message.text, this.#options.answerChunks ?? 3)
    for (const [i, part] of parts.entries()) {
      options.signal?.throwIfAborted()
      const last = i === parts.length - 1
      const chunk = new ChatGenerationChunk({
        text: part,
        message: new AIMessageChunk({
          id,
          content: part,
          ...(last ? { usage_metadata: message.usage_metadata } : {})
        })
      })
      yield chunk
      await runManager?.handleLLMNewToken(part, undefined, undefined, undefined, undefined, { chunk })
    }
  }
}
