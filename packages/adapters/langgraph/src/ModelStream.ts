/**
 * A streamed turn's answer text, token by token, from inside the model step.
 *
 * Why not LangGraph's `messages` stream mode: it taps every LangChain callback of the run to
 * find model tokens, which costs a streamed turn about 1.5 ms of CPU (a third of the whole
 * agent loop, measured with the scripted router: docs/benchmarks.md). The model step already
 * makes the call: when the turn is streamed it asks the model for a stream instead and writes
 * each text chunk to the turn's custom stream as a `message` event, in the same ordered stream
 * as the `reasoning` and `tool_call` events.
 *
 * A call whose chunks carry reasoning holds its text back from the first such chunk: the call's
 * `reasoning` event is sent when the call returns (its whole reasoning), and the held text
 * follows it, so a client sees the reasoning before the answer it led to.
 */
import { AIMessage, type AIMessageChunk, type BaseMessage } from "@langchain/core/messages"
import { ensureConfig, type RunnableConfig } from "@langchain/core/runnables"
import type { EventSink } from "@plugboard/core"
import { reasoningOf } from "./Reasoning.js"

/** The `configurable` key by which `streamTurn` asks the model step to stream the answer's text. */
export const STREAM_TEXT = "plugboard_stream_text"

/** The text of a message's content (string, or the text parts of content blocks). */
export const textOf = (message: BaseMessage): string => {
  const c = message.content
  if (typeof c === "string") return c
  return c
    .map((part) => (typeof part === "string" ? part : part.type === "text" ? String(part.text) : ""))
    .join("")
}

/** A `message` event carrying one chunk of the answer. */
export const messageEvent = (content: string): EventSink.AgentEvent => ({
  _tag: "message",
  content,
  timestamp: new Date().toISOString()
})

/** A streamed call's answer, as the thread stores it (a whole AIMessage, not a chunk). */
const toMessage = (chunk: AIMessageChunk): AIMessage =>
  new AIMessage({
    content: chunk.content,
    additional_kwargs: chunk.additional_kwargs,
    response_metadata: chunk.response_metadata,
    tool_calls: chunk.tool_calls ?? [],
    invalid_tool_calls: chunk.invalid_tool_calls ?? [],
    ...(chunk.usage_metadata === undefined ? {} : { usage_metadata: chunk.usage_metadata }),
    ...(chunk.id === undefined ? {} : { id: chunk.id }),
    ...(chunk.name === undefined ? {} : { name: chunk.name })
  })

/**
 * A runnable that streams message chunks (a chat model with its tools bound), read through its
 * generator (`_streamIterator`) rather than `stream()`. `stream()` wraps the same generator in a
 * web `ReadableStream` and enters the run's async context again for every chunk; the config it
 * would pass is the same (`ensureConfig`: the caller's callbacks, tags and signal), and the
 * provider's own streaming (`_streamResponseChunks`, which the call bounds wrap) runs unchanged.
 * Measured in process on the scripted three-step turn (2026-11-26, three A/B pairs): 0.11–0.22 ms
 * less CPU per turn. An abort still ends the step at once: the agent loop races every step with
 * the request's signal (`AgentLoop.ts`), and the provider gets the signal for its request.
 */
interface Streamable {
  _streamIterator(input: Array<BaseMessage>, options?: RunnableConfig): AsyncGenerator<AIMessageChunk>
}

/**
 * Calls the model as a stream, writing each text chunk as it comes (until a chunk carries
 * reasoning); returns the whole answer and the text held back, to write after the call's
 * `reasoning` event.
 */
export const streamCall = async (
  bound: Streamable,
  input: Array<BaseMessage>,
  options: { signal?: AbortSignal },
  write: (event: EventSink.AgentEvent) => void
): Promise<{ readonly message: AIMessage; readonly held: ReadonlyArray<string> }> => {
  let whole: AIMessageChunk | undefined
  const held: Array<string> = []
  let holding = false
  for await (const chunk of bound._streamIterator(input, ensureConfig(options))) {
    whole = whole === undefined ? chunk : whole.concat(chunk)
    if (!holding && reasoningOf(chunk) !== undefined) holding = true
    const text = textOf(chunk)
    if (text.length === 0) continue
    if (holding) held.push(text)
    else write(messageEvent(text))
  }
  return { message: whole === undefined ? new AIMessage({ content: "" }) : toMessage(whole), held }
}
