/**
 * The model's own reasoning, read from an AI message (or a streamed chunk of one) in each shape
 * LangChain's providers put it, so the agent loop can send it as core's `reasoning` event:
 *
 * - content blocks `{ type: "reasoning", reasoning }` (LangChain's standard block; OpenAI's
 *   Responses API reasoning summaries) — or, from older OpenAI output, `{ type: "reasoning",
 *   summary: [{ text }] }`;
 * - content blocks `{ type: "thinking", thinking }` (Anthropic extended thinking);
 * - `additional_kwargs.reasoning_content` (DeepSeek, OpenAI-compatible servers such as vLLM, and
 *   `@langchain/ollama`, which puts Ollama's `thinking` there), or `additional_kwargs.thinking`;
 * - `additional_kwargs.reasoning.summary[].text` (OpenAI Responses, when no block carries it).
 *
 * Reasoning is never answer text: `textOf` reads only `text` blocks and the string content, so
 * none of these shapes reaches the answer.
 */
import type { BaseMessage } from "@langchain/core/messages"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const nonEmpty = (text: unknown): text is string => typeof text === "string" && text.trim().length > 0

/** The texts of an OpenAI reasoning summary (`[{ text }]`). */
const summaryTexts = (summary: unknown): Array<string> =>
  Array.isArray(summary)
    ? summary.flatMap((part) => (isRecord(part) && nonEmpty(part.text) ? [part.text] : []))
    : []

/** The reasoning in the message's content blocks, in block order. */
const fromBlocks = (content: BaseMessage["content"]): Array<string> => {
  if (typeof content === "string") return []
  return content.flatMap((block): Array<string> => {
    if (!isRecord(block)) return []
    if (block.type === "thinking") return nonEmpty(block.thinking) ? [block.thinking] : []
    if (block.type === "reasoning") {
      if (nonEmpty(block.reasoning)) return [block.reasoning]
      return summaryTexts(block.summary)
    }
    return []
  })
}

/** The reasoning in `additional_kwargs`, used when no content block carries any. */
const fromKwargs = (kwargs: Record<string, unknown> | undefined): Array<string> => {
  if (kwargs === undefined) return []
  if (nonEmpty(kwargs.reasoning_content)) return [kwargs.reasoning_content]
  if (nonEmpty(kwargs.thinking)) return [kwargs.thinking]
  return isRecord(kwargs.reasoning) ? summaryTexts(kwargs.reasoning.summary) : []
}

/**
 * The reasoning a provider exposed on `message`, trimmed, parts separated by a blank line; or
 * `undefined` when it exposed none (or only whitespace). Content blocks win over
 * `additional_kwargs`: OpenAI's Responses API writes the same summary to both.
 */
export const reasoningOf = (message: BaseMessage): string | undefined => {
  const blocks = fromBlocks(message.content)
  const parts = blocks.length > 0 ? blocks : fromKwargs(message.additional_kwargs)
  const text = parts
    .map((p) => p.trim())
    .join("\n\n")
    .trim()
  return text.length === 0 ? undefined : text
}
