/**
 * The model the SDK tests' server runs when a test needs a turn that takes its time: the offline
 * router (as `plugboard serve` runs it) with its final answer paced. Loaded in the server's
 * process (see server.ts).
 */
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager"
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput
} from "@langchain/core/language_models/chat_models"
import type { AIMessageChunk, BaseMessage } from "@langchain/core/messages"
import type { ChatGenerationChunk, ChatResult } from "@langchain/core/outputs"
import type { Catalog } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"

/** How the answer is paced. */
export interface Pace {
  /** The answer is split into this many chunks (at word boundaries). */
  readonly chunks: number
  /** Pause between two chunks, in ms. */
  readonly delayMs: number
  /**
   * After this many chunks the answer waits for a `release()` (one per turn) before the rest:
   * the test decides when the turn goes on, so a drop or a reload lands mid-turn every time.
   */
  readonly holdAfter?: number
}

/** Releases of held answers: one `release()` lets one held answer go on. */
export class Gate {
  #waiting: Array<() => void> = []
  #credits = 0

  release(): void {
    const next = this.#waiting.shift()
    if (next === undefined) this.#credits += 1
    else next()
  }

  wait(signal: AbortSignal | undefined): Promise<void> {
    if (this.#credits > 0) {
      this.#credits -= 1
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => {
      const go = () => resolve()
      this.#waiting.push(go)
      signal?.addEventListener(
        "abort",
        () => {
          this.#waiting = this.#waiting.filter((w) => w !== go)
          reject(signal.reason)
        },
        { once: true }
      )
    })
  }
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer)
        reject(signal.reason)
      },
      { once: true }
    )
  })

const hasReasoning = (chunk: ChatGenerationChunk) =>
  typeof (chunk.message as AIMessageChunk).additional_kwargs?.reasoning_content === "string"

/**
 * A chat model that streams `inner`'s answers chunk by chunk with pauses (and holds, see `Pace`).
 * The reasoning of an answer is dropped: the server holds back the text of a call whose chunks
 * carry reasoning until the call returns (langgraph/Turn.ts `streamTurn`), which would send the
 * paced answer at once. Tool calls keep theirs.
 */
class PacedModel extends BaseChatModel<BaseChatModelCallOptions, AIMessageChunk> {
  constructor(
    readonly inner: ScriptedChatModel,
    readonly pace: Pace,
    readonly gate: Gate
  ) {
    super({})
  }

  override _llmType(): string {
    return "paced-scripted"
  }

  override bindTools(tools: Array<BindToolsInput>, kwargs?: Partial<BaseChatModelCallOptions>): PacedModel {
    return new PacedModel(this.inner.bindTools(tools, kwargs), this.pace, this.gate)
  }

  override _generate(messages: Array<BaseMessage>, options: this["ParsedCallOptions"]): Promise<ChatResult> {
    return this.inner._generate(messages, options)
  }

  override async *_streamResponseChunks(
    messages: Array<BaseMessage>,
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun
  ): AsyncGenerator<ChatGenerationChunk> {
    // The inner model reports no token itself (it would report the dropped reasoning): each
    // chunk passed on is reported here, as the inner model does, once it was taken.
    const pass = async function* (chunk: ChatGenerationChunk) {
      yield chunk
      await runManager?.handleLLMNewToken(chunk.text, undefined, undefined, undefined, undefined, {
        chunk
      })
    }
    let reasoning: ChatGenerationChunk | undefined
    let sent = 0
    for await (const chunk of this.inner._streamResponseChunks(messages, options)) {
      if (chunk.text === "") {
        // The reasoning chunk comes first: kept back until we know whether this is an answer.
        if (hasReasoning(chunk)) reasoning = chunk
        else {
          if (reasoning !== undefined) yield* pass(reasoning)
          reasoning = undefined
          yield* pass(chunk)
        }
        continue
      }
      reasoning = undefined
      if (sent > 0) {
        if (sent === this.pace.holdAfter) await this.gate.wait(options.signal)
        else await sleep(this.pace.delayMs, options.signal)
      }
      sent += 1
      yield* pass(chunk)
    }
    if (reasoning !== undefined) yield* pass(reasoning)
  }
}

/** The router over `catalog`, its answers paced by `pace` and held by `gate`. */
export const pacedRouter = (catalog: Catalog.Catalog, pace: Pace, gate: Gate): BaseChatModel =>
  new PacedModel(
    ScriptedChatModel.router({ catalog }, { answerChunks: pace.chunks, maxRecordedCalls: 100 }),
    pace,
    gate
  )
