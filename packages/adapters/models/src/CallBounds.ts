/**
 * Time bounds on one model call, as a decorator of any LangChain chat model: how long until the
 * provider answers at all (the first chunk), until the first token of the answer, and between two
 * chunks of it. A provider that accepts a request and then stalls otherwise holds a turn open
 * forever, its client seeing only heartbeats. A bound that trips aborts the call
 * underneath (its HTTP request is cancelled through the call's signal) and fails the call with a
 * `ModelCallTimeout` naming the bound, its value and the variable that sets it.
 */
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager"
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput
} from "@langchain/core/language_models/chat_models"
import type { AIMessageChunk, BaseMessage } from "@langchain/core/messages"
import { type ChatGeneration, ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs"
import { type Runnable, RunnableBinding } from "@langchain/core/runnables"
import { concat } from "@langchain/core/utils/stream"
import { Data } from "effect"

/** The three bounds of a model call, in milliseconds. */
export interface CallBounds {
  /** From the call until the provider's first chunk (or its whole answer, unstreamed). */
  readonly connectTimeoutMs: number
  /** From the call until the first chunk carrying text, a tool call or reasoning. */
  readonly firstTokenTimeoutMs: number
  /** The longest silence between two chunks once the answer has begun. */
  readonly idleTimeoutMs: number
}

/**
 * Defaults: a provider answers within seconds when it is up, so 30 s to the first chunk; a
 * reasoning model may think for a minute or two before its first token; and a stream that has
 * begun does not pause for 60 s unless it is stuck.
 */
export const DEFAULT_CALL_BOUNDS: CallBounds = {
  connectTimeoutMs: 30_000,
  firstTokenTimeoutMs: 120_000,
  idleTimeoutMs: 60_000
}

/** Which bound tripped. */
export type CallBoundReason = "connect" | "first-token" | "idle"

/** The environment variable that sets each bound (the host's configuration). */
export const CALL_BOUND_VARIABLES: Readonly<Record<CallBoundReason, string>> = {
  connect: "LLM_CONNECT_TIMEOUT_MS",
  "first-token": "LLM_FIRST_TOKEN_TIMEOUT_MS",
  idle: "LLM_IDLE_TIMEOUT_MS"
}

const WHAT: Readonly<Record<CallBoundReason, string>> = {
  connect: "the provider's first chunk",
  "first-token": "the first token",
  idle: "the next chunk"
}

/** A model call ran past one of its bounds and was aborted. */
export class ModelCallTimeout extends Data.TaggedError("ModelCallTimeout")<{
  readonly reason: CallBoundReason
  /** The bound's value. */
  readonly timeoutMs: number
  /** The environment variable that sets it. */
  readonly variable: string
  readonly message: string
}> {
  /** The error for a bound that tripped. */
  static of(reason: CallBoundReason, timeoutMs: number): ModelCallTimeout {
    const variable = CALL_BOUND_VARIABLES[reason]
    return new ModelCallTimeout({
      reason,
      timeoutMs,
      variable,
      message: `The model call was aborted: ${WHAT[reason]} did not come within ${timeoutMs} ms (${variable}).`
    })
  }
}

/** Whether a chunk carries some of the answer: text, a piece of a tool call, or reasoning. */
const carriesToken = (chunk: ChatGenerationChunk): boolean => {
  if (chunk.text.length > 0) return true
  const message = chunk.message as Partial<AIMessageChunk>
  if ((message.tool_call_chunks?.length ?? 0) > 0 || (message.tool_calls?.length ?? 0) > 0) return true
  const content = message.content
  if (Array.isArray(content) && content.some(blockCarriesToken)) return true
  const kwargs = message.additional_kwargs as Record<string, unknown> | undefined
  return (
    kwargs !== undefined && (typeof kwargs.reasoning_content === "string" || kwargs.reasoning !== undefined)
  )
}

/** A content block with some text or thinking in it (a block's empty opening carries none). */
const blockCarriesToken = (block: unknown): boolean => {
  if (typeof block !== "object" || block === null) return false
  const b = block as Record<string, unknown>
  return [b.text, b.thinking, b.reasoning, b.partial_json, b.input].some(
    (v) => typeof v === "string" && v.length > 0
  )
}

const isStreaming = (model: BaseChatModel): boolean =>
  model._streamResponseChunks !== BaseChatModel.prototype._streamResponseChunks

/** A timer's tick, or the next item of the stream. */
type Raced<T> = { readonly tripped: CallBoundReason } | { readonly next: IteratorResult<T> }

/**
 * A chat model that calls `inner` under `bounds`. Every call streams from the provider (an
 * unstreamed call is the stream gathered), so each bound applies whether the caller streams or
 * not; a provider without streaming is bounded as a whole by the first-token bound.
 */
export class BoundedChatModel extends BaseChatModel<BaseChatModelCallOptions, AIMessageChunk> {
  readonly inner: BaseChatModel
  readonly bounds: CallBounds

  constructor(inner: BaseChatModel, bounds: CallBounds) {
    super({})
    this.inner = inner
    this.bounds = bounds
  }

  // The base constructor asks for these before `inner` is set.
  override _llmType(): string {
    return (this.inner as BaseChatModel | undefined)?._llmType() ?? "bounded"
  }

  override _identifyingParams(): Record<string, unknown> {
    return (this.inner as BaseChatModel | undefined)?._identifyingParams() ?? {}
  }

  /**
   * Binds tools the way `inner` does, onto this model: a provider's `bindTools` converts the tools
   * to its format and binds them as call options, which this model hands on to `inner`.
   */
  override bindTools(tools: BindToolsInput[], kwargs?: Partial<BaseChatModelCallOptions>): Runnable {
    if (typeof this.inner.bindTools !== "function")
      throw new TypeError(`The chat model '${this.inner._llmType()}' cannot bind tools (no bindTools).`)
    const bound: unknown = this.inner.bindTools(tools, kwargs)
    if (bound instanceof BaseChatModel) return new BoundedChatModel(bound, this.bounds)
    if (bound instanceof RunnableBinding && bound.bound === this.inner)
      return new RunnableBinding({
        bound: this,
        kwargs: bound.kwargs,
        config: bound.config,
        configFactories: bound.configFactories
      })
    throw new TypeError(`The tools bound to '${this.inner._llmType()}' cannot be put under call bounds.`)
  }

  override async _generate(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun
  ): Promise<ChatResult> {
    let gathered: ChatGenerationChunk | undefined
    for await (const chunk of this._streamResponseChunks(messages, options, runManager))
      gathered = gathered === undefined ? chunk : concat(gathered, chunk)
    if (gathered === undefined) throw new Error("Received empty response from chat model call.")
    return { generations: [gathered as ChatGeneration] }
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun
  ): AsyncGenerator<ChatGenerationChunk> {
    const abort = new AbortController()
    const signal =
      options.signal === undefined ? abort.signal : AbortSignal.any([options.signal, abort.signal])
    const callOptions = { ...options, signal }
    const source: AsyncIterator<ChatGenerationChunk> = isStreaming(this.inner)
      ? this.inner._streamResponseChunks(messages, callOptions, runManager)[Symbol.asyncIterator]()
      : unstreamed(this.inner, messages, callOptions, runManager)
    const { connectTimeoutMs, firstTokenTimeoutMs, idleTimeoutMs } = this.bounds
    const started = Date.now()
    let chunks = 0
    let tokens = false
    let last = started
    let finished = false
    try {
      while (true) {
        // The bound that ends first from here, given how far the answer has come.
        const now = Date.now()
        const deadlines: Array<readonly [CallBoundReason, number]> = []
        if (chunks === 0 && isStreaming(this.inner)) deadlines.push(["connect", started + connectTimeoutMs])
        if (!tokens) deadlines.push(["first-token", started + firstTokenTimeoutMs])
        if (chunks > 0) deadlines.push(["idle", last + idleTimeoutMs])
        const [reason, at] = deadlines.reduce((a, b) => (b[1] < a[1] ? b : a))
        const raced = await race(source.next(), reason, Math.max(0, at - now))
        if ("tripped" in raced) {
          const bound = { connect: connectTimeoutMs, "first-token": firstTokenTimeoutMs, idle: idleTimeoutMs }
          throw ModelCallTimeout.of(raced.tripped, bound[raced.tripped])
        }
        if (raced.next.done === true) {
          finished = true
          return
        }
        chunks++
        last = Date.now()
        if (!tokens && carriesToken(raced.next.value)) tokens = true
        yield raced.next.value
      }
    } finally {
      if (!finished) {
        // Cancels the provider's request; the source's own ending is not awaited (a stalled
        // stream may never settle) and its late failure is of no interest.
        abort.abort()
        source.return?.().catch(() => undefined)
      }
    }
  }
}

/** The whole answer of a model that cannot stream, as a one-chunk stream. */
async function* unstreamed(
  model: BaseChatModel,
  messages: BaseMessage[],
  options: BaseChatModelCallOptions,
  runManager?: CallbackManagerForLLMRun
): AsyncGenerator<ChatGenerationChunk> {
  const result = await model._generate(messages, options as never, runManager)
  for (const generation of result.generations)
    yield new ChatGenerationChunk({
      text: generation.text,
      message: generation.message as AIMessageChunk,
      ...(generation.generationInfo === undefined ? {} : { generationInfo: generation.generationInfo })
    })
}

const race = <T>(
  next: Promise<IteratorResult<T>>,
  reason: CallBoundReason,
  ms: number
): Promise<Raced<T>> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const tick = new Promise<Raced<T>>((resolve) => {
    timer = setTimeout(() => resolve({ tripped: reason }), ms)
  })
  return Promise.race([next.then((n): Raced<T> => ({ next: n })), tick]).finally(() => clearTimeout(timer))
}

/**
 * `model` under call bounds (each defaults to `DEFAULT_CALL_BOUNDS`). Use it around the model a
 * host builds (`makeChatModel`); the result binds tools, streams and is invoked as `model` is.
 */
export const withCallBounds = (model: BaseChatModel, bounds: Partial<CallBounds> = {}): BoundedChatModel => {
  const all = { ...DEFAULT_CALL_BOUNDS, ...definedOnly(bounds) }
  for (const [name, value] of Object.entries(all))
    if (!Number.isFinite(value) || value <= 0)
      throw new RangeError(`${name} must be a positive number, got ${value}.`)
  return new BoundedChatModel(model, all)
}

const definedOnly = (bounds: Partial<CallBounds>): Partial<CallBounds> =>
  Object.fromEntries(Object.entries(bounds).filter(([, v]) => v !== undefined)) as Partial<CallBounds>
