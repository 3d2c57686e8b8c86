/**
 * The OpenAI wire's HTTP plumbing: JSON answers and OpenAI's error body, the size-limited body
 * reader, a model failure as the wire's error, and the streamed answer as server-sent events.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import type { AIMessageChunk, BaseMessage } from "@langchain/core/messages"
import type { Runnable } from "@langchain/core/runnables"
import type { ChatModel } from "@plugboard/core"
import { Either } from "effect"
import { classifyError } from "../../Port.js"
import { ScriptExhaustedError } from "../../ScriptedChatModel.js"
import { OpenAiWireError } from "./error.js"
import { chunk, DeltaTranslator, type Envelope, usageChunk } from "./response.js"

/** Answers `body` as JSON with `status`. */
export const sendJson = (
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {}
) => {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
    ...headers
  })
  res.end(text)
}

/** OpenAI's error body. */
export const errorBody = (e: OpenAiWireError) => ({
  error: {
    message: e.message,
    type: e.status >= 500 ? "server_error" : "invalid_request_error",
    param: e.param ?? null,
    code: e.code ?? null
  }
})

/** Answers the error as OpenAI does: its status, OpenAI's error body. */
export const sendError = (res: ServerResponse, e: OpenAiWireError, headers: Record<string, string> = {}) =>
  sendJson(res, e.status, errorBody(e), headers)

/** A failure of the model's call as the wire's error: its status from what the failure was. */
export const modelFailure = (error: unknown): OpenAiWireError => {
  if (error instanceof ScriptExhaustedError)
    return new OpenAiWireError({
      reason: "script-exhausted",
      status: 500,
      code: "script_exhausted",
      message: error.message
    })
  const classified = classifyError(error)
  const status: Record<ChatModel.ChatModelErrorReason, number> = {
    "invalid-request": 400,
    unauthorized: 401,
    "rate-limited": 429,
    unavailable: 503,
    aborted: 499,
    "script-exhausted": 500,
    provider: 500
  }
  return new OpenAiWireError({
    reason: "model-failed",
    status: status[classified.reason] ?? 500,
    code: classified.reason,
    message: `The model's call failed: ${classified.message}`
  })
}

/** Reads the body up to `max` bytes: the text, or `too-large` (the rest is discarded unbuffered). */
export const readBody = (
  req: IncomingMessage,
  max: number
): Promise<Either.Either<string, OpenAiWireError>> =>
  new Promise((resolve, reject) => {
    const tooLarge = () =>
      new OpenAiWireError({
        reason: "too-large",
        status: 413,
        code: "request_too_large",
        message: `The request body is larger than this server's limit of ${max} bytes.`
      })
    if (Number(req.headers["content-length"] ?? 0) > max) {
      req.resume()
      resolve(Either.left(tooLarge()))
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let over = false
    req.on("data", (data: Buffer) => {
      if (over) return
      size += data.length
      if (size > max) {
        over = true
        chunks.length = 0
        resolve(Either.left(tooLarge()))
        return
      }
      chunks.push(data)
    })
    req.on("end", () => {
      if (!over) resolve(Either.right(Buffer.concat(chunks).toString("utf8")))
    })
    req.on("error", reject)
  })

/** What an answer was, for the log line. */
export const describeAnswer = (toolNames: ReadonlyArray<string>): string =>
  toolNames.length === 0 ? "answer" : `tool_calls ${toolNames.join(",")}`

// A client that went away mid-stream is written nothing more (its model call is being aborted).
const sse = (res: ServerResponse, data: unknown) => {
  if (!res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`)
}

/**
 * Streams the model's answer as server-sent events. The first chunk is awaited before the
 * headers go out, so a call that fails at once (an exhausted script) is an HTTP error with its
 * status, not a stream that breaks; a later failure is sent as a `data: {"error": ...}` event,
 * as OpenAI does, and the stream ends without `[DONE]`.
 */
export const stream = async (
  res: ServerResponse,
  runnable: Runnable<Array<BaseMessage>, AIMessageChunk> | BaseChatModel,
  messages: Array<BaseMessage>,
  envelope: Envelope,
  includeUsage: boolean,
  signal: AbortSignal
): Promise<string> => {
  let iterator: AsyncIterator<AIMessageChunk>
  let first: IteratorResult<AIMessageChunk>
  try {
    iterator = (await runnable.stream(messages, { signal }))[Symbol.asyncIterator]()
    first = await iterator.next()
  } catch (error) {
    const e = modelFailure(error)
    sendError(res, e)
    return e.reason
  }
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no"
  })
  const translator = new DeltaTranslator()
  let gathered: AIMessageChunk | undefined
  const names: Array<string> = []
  sse(res, chunk(envelope, { role: "assistant", content: "" }, null, includeUsage))
  try {
    for (let next = first; next.done !== true; next = await iterator.next()) {
      if (res.destroyed) {
        void iterator.return?.()
        break
      }
      const piece = next.value
      gathered = gathered === undefined ? piece : gathered.concat(piece)
      for (const delta of translator.deltas(piece)) {
        const call = (delta.tool_calls as Array<{ function: { name?: string } }> | undefined)?.[0]
        if (call?.function.name !== undefined) names.push(call.function.name)
        sse(res, chunk(envelope, delta, null, includeUsage))
      }
    }
  } catch (error) {
    const e = modelFailure(error)
    if (!res.destroyed) {
      sse(res, errorBody(e))
      res.end()
    }
    return `${e.reason} (mid-stream)`
  }
  if (res.destroyed) return "client gone (mid-stream)"
  sse(res, chunk(envelope, {}, translator.calledTools ? "tool_calls" : "stop", includeUsage))
  if (includeUsage) sse(res, usageChunk(envelope, gathered?.usage_metadata))
  res.end("data: [DONE]\n\n")
  return `${describeAnswer(names)} (streamed)`
}
