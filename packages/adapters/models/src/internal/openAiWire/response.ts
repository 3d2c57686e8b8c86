/**
 * A LangChain reply in OpenAI's chat completions format: a whole `chat.completion`, or the
 * `chat.completion.chunk` deltas of a streamed one. Reasoning a model exposes in
 * `additional_kwargs.reasoning_content` (the scripted router always does) goes out as
 * `reasoning_content`, the field DeepSeek, vLLM and `@ai-sdk/openai-compatible` use; clients that
 * do not know it ignore it.
 */
import type { AIMessage, AIMessageChunk, UsageMetadata } from "@langchain/core/messages"

/** What every response of one request shares. */
export interface Envelope {
  readonly id: string
  readonly created: number
  readonly model: string
}

/** OpenAI's usage object. */
export interface WireUsage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly completion_tokens_details?: { readonly reasoning_tokens: number }
}

/** Usage as OpenAI reports it; zeros when the model reported none. */
export const usageOf = (usage: UsageMetadata | undefined): WireUsage => {
  const input = usage?.input_tokens ?? 0
  const output = usage?.output_tokens ?? 0
  const reasoning = usage?.output_token_details?.reasoning
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: usage?.total_tokens ?? input + output,
    ...(reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: reasoning } })
  }
}

const reasoningOf = (message: AIMessage | AIMessageChunk): string | undefined => {
  const r = message.additional_kwargs?.reasoning_content
  return typeof r === "string" && r.length > 0 ? r : undefined
}

/** The non-streamed answer. */
export const completion = (envelope: Envelope, message: AIMessage) => {
  const calls = (message.tool_calls ?? []).map((c, i) => ({
    id: c.id ?? `call_${i}`,
    type: "function" as const,
    function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) }
  }))
  const text = message.text
  const reasoning = reasoningOf(message)
  return {
    id: envelope.id,
    object: "chat.completion",
    created: envelope.created,
    model: envelope.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          // As OpenAI: no text beside tool calls is `null`, not "".
          content: calls.length > 0 && text === "" ? null : text,
          refusal: null,
          ...(reasoning === undefined ? {} : { reasoning_content: reasoning }),
          ...(calls.length > 0 ? { tool_calls: calls } : {})
        },
        logprobs: null,
        finish_reason: calls.length > 0 ? "tool_calls" : "stop"
      }
    ],
    usage: usageOf(message.usage_metadata)
  }
}

/** One delta of a streamed answer. */
export type Delta = Record<string, unknown>

/**
 * Turns a model's stream of chunks into OpenAI deltas: reasoning, text, and tool calls, each
 * announced with its index, id and name (arguments "") before its arguments follow, which is how
 * OpenAI streams them and what clients that assemble calls by index expect.
 */
export class DeltaTranslator {
  /** Tool call indexes already announced. */
  readonly #started = new Set<number>()
  #calls = 0

  /** Whether any tool call went out (the finish reason). */
  get calledTools(): boolean {
    return this.#calls > 0
  }

  /** The deltas one model chunk makes, in order. */
  deltas(chunk: AIMessageChunk): Array<Delta> {
    const out: Array<Delta> = []
    const reasoning = reasoningOf(chunk)
    if (reasoning !== undefined) out.push({ reasoning_content: reasoning })
    const text = chunk.text
    if (text.length > 0) out.push({ content: text })
    const pieces =
      (chunk.tool_call_chunks?.length ?? 0) > 0
        ? chunk.tool_call_chunks!
        : // A model that streams whole calls (no chunks) still has them announced.
          (chunk.tool_calls ?? []).map((c, i) => ({ ...c, args: JSON.stringify(c.args ?? {}), index: i }))
    for (const [position, piece] of pieces.entries()) {
      const index = piece.index ?? position
      if (!this.#started.has(index)) {
        this.#started.add(index)
        this.#calls++
        out.push({
          tool_calls: [
            {
              index,
              id: piece.id ?? `call_${index}`,
              type: "function",
              function: { name: piece.name ?? "", arguments: "" }
            }
          ]
        })
      }
      if (piece.args !== undefined && piece.args !== "")
        out.push({ tool_calls: [{ index, function: { arguments: piece.args } }] })
    }
    return out
  }
}

/** One `chat.completion.chunk`; with `includeUsage` every chunk but the last carries `usage: null`, as OpenAI's do. */
export const chunk = (
  envelope: Envelope,
  delta: Delta,
  finishReason: string | null,
  includeUsage: boolean
) => ({
  id: envelope.id,
  object: "chat.completion.chunk",
  created: envelope.created,
  model: envelope.model,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  ...(includeUsage ? { usage: null } : {})
})

/** The last chunk of a stream asked for `stream_options.include_usage`: no choice, the usage. */
export const usageChunk = (envelope: Envelope, usage: UsageMetadata | undefined) => ({
  id: envelope.id,
  object: "chat.completion.chunk",
  created: envelope.created,
  model: envelope.model,
  choices: [],
  usage: usageOf(usage)
})
