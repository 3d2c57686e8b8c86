/**
 * The HTTP vocabulary of the wire contract: every error is JSON `{statusCode, message, error?}`
 * (docs/spec/wire.md#errors), request bodies are bounded and parsed without ever turning a
 * client's bad input into a 500.
 */

import { IncomingMessage } from "node:http"
import type { Socket } from "node:net"
import type { Writable } from "node:stream"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { describe } from "@plugboard/core"
import { Data, Effect, Either, Option, type ParseResult, Schema } from "effect"

/** Reason phrases of the statuses this server answers with. */
export const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  404: "Not Found",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable"
}

/** A request ends with this status and JSON error body. */
export class HttpFailure extends Data.TaggedError("HttpFailure")<{
  readonly status: number
  readonly message: string
  /** Machine-readable cause (an error reason); defaults to the status's reason phrase. */
  readonly error?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** More fields of the body (a 402's `claims`), after the contract's own. */
  readonly extra?: Readonly<Record<string, unknown>> | undefined
  /** What went wrong, for the server's log only: never sent to the client (see `unavailable`). */
  readonly detail?: string | undefined
}> {}

/**
 * A 503 for a port that cannot answer (storage, the run store, the limiter, the ledger, auth).
 * The client learns what could not be done and which service is missing, never why: a driver's
 * message names hosts, ports, users and databases (docs/spec/wire.md#errors). The cause goes to
 * the server's log as `detail`, with the request it failed.
 */
export const unavailable = (what: string, service: string, error: string, cause: unknown): HttpFailure =>
  new HttpFailure({
    status: 503,
    message: `${what}: ${service} is unavailable right now. Try again shortly.`,
    error,
    detail: describe(cause)
  })

/** The JSON error body of the wire contract. */
export interface ErrorBody {
  readonly statusCode: number
  readonly message: string
  readonly error?: string
}

/** The error body for a status and message. */
export const errorBody = (status: number, message: string, error?: string): ErrorBody => ({
  statusCode: status,
  message,
  error: error ?? STATUS_TEXT[status] ?? "Error"
})

/** The JSON response of a failure. */
export const failureResponse = (failure: HttpFailure): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(
    { ...failure.extra, ...errorBody(failure.status, failure.message, failure.error) },
    { status: failure.status, headers: failure.headers ?? {} }
  )

/** A JSON response (200 unless given). */
export const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

const badRequest = (message: string) => new HttpFailure({ status: 400, message })

/**
 * Reads the request body as JSON, at most `maxBytes` bytes (413 above, checked against
 * `Content-Length` first so a huge upload is refused before it is read). An empty body is
 * `undefined`; anything that is not JSON, or nests deeper than `MAX_JSON_DEPTH`, is a 400.
 */
export const readJson = (
  maxBytes: number
): Effect.Effect<unknown, HttpFailure, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = request.headers["content-length"]
    if (declared !== undefined && Number(declared) > maxBytes) {
      return yield* Effect.fail(tooLarge(maxBytes))
    }
    const source = NodeHttpServerRequest.toIncomingMessage(request)
    const text = yield* source instanceof IncomingMessage
      ? readBounded(source, maxBytes)
      : request.text.pipe(
          HttpServerRequest.withMaxBodySize(Option.some(maxBytes)),
          Effect.mapError((error) =>
            String((error as { cause?: unknown }).cause).includes("maxBytes exceeded")
              ? tooLarge(maxBytes)
              : badRequest("The request body could not be read.")
          )
        )
    if (text.trim() === "") return undefined
    const mediaType = request.headers["content-type"]
    if (!isJsonMediaType(mediaType)) return yield* Effect.fail(notJson(mediaType))
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return yield* Effect.fail(tooDeep)
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => badRequest("The request body is not valid JSON.")
    })
  })

/**
 * Whether a `Content-Type` names JSON (`application/json`, or a `+json` type such as
 * `application/merge-patch+json`), parameters (`; charset=utf-8`) aside. A body is read as JSON
 * only when its sender says it is: a `text/plain` or form body that happens to parse is a mistake
 * of the client's, answered 415, not guessed at (QiForge's client sends `application/json` on
 * every request, docs/spec/wire.md#errors).
 */
export const isJsonMediaType = (value: string | undefined): boolean => {
  if (value === undefined) return false
  const type = value.split(";", 1)[0]!.trim().toLowerCase()
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"))
}

const notJson = (mediaType: string | undefined) =>
  new HttpFailure({
    status: 415,
    message:
      mediaType === undefined
        ? "The request body has no Content-Type; send it as application/json."
        : `The request body is ${JSON.stringify(mediaType.slice(0, 100))}; send it as application/json.`
  })

/**
 * The longest path parameter the router takes. Node's header size limit (16 KiB by default)
 * bounds a request's path first; past that, the parameter's own rule answers (a session id's is
 * a 400 naming its limit), never the router's 404.
 */
export const MAX_PATH_PARAM_LENGTH = 64 * 1024

/** The request's Node socket, when it came through Node's HTTP server (else undefined). */
export const nodeSocket = (request: HttpServerRequest.HttpServerRequest): Socket | undefined => {
  const source = NodeHttpServerRequest.toIncomingMessage(request)
  return source instanceof IncomingMessage ? source.socket : undefined
}

/**
 * Writes a streamed body's last bytes and ends it, so that they leave with the response's end in
 * one socket write: `socket` (the response's) is corked until the end has been written, where
 * Node would otherwise write a chunked response's end apart from the bytes before it. Without a
 * socket it only writes and ends; a stream already ended or destroyed is left as it is.
 */
export const endStream = (socket: Socket | undefined, out: Writable, last: string): void => {
  if (out.destroyed || out.writableEnded) return
  socket?.cork()
  out.write(last)
  out.end()
  // The body is piped to the response: its end reaches the socket a few ticks later, still
  // before the next turn of the event loop.
  if (socket !== undefined) setImmediate(() => socket.uncork())
}

/**
 * How much of a body past the limit is read and thrown away before the 413 is answered, as a
 * multiple of the limit. A body without `Content-Length` (chunked) is only known to be too large
 * once it is read; answering and closing while the client still sends makes the kernel reset the
 * connection, and the client loses the answer. Draining first lets the 413 arrive and the
 * connection close with a FIN; past this much the client is cut off instead.
 */
const DRAIN_FACTOR = 8

/**
 * Reads a Node request's body into a string, at most `maxBytes` bytes: above, the rest is
 * drained (up to `DRAIN_FACTOR` times the limit) and the failure is a 413 that closes the
 * connection.
 */
const readBounded = (source: IncomingMessage, maxBytes: number): Effect.Effect<string, HttpFailure> =>
  Effect.async<string, HttpFailure>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    let over = false
    const refuse = () => {
      cleanup()
      resume(Effect.fail(tooLarge(maxBytes, { connection: "close" })))
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (over) {
        if (bytes > maxBytes * DRAIN_FACTOR) refuse()
      } else if (bytes > maxBytes) {
        over = true
        chunks.length = 0
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      if (over) return refuse()
      cleanup()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(badRequest("The request body could not be read.")))
    }
    const cleanup = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
      source.off("aborted", onError)
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    source.once("aborted", onError)
    return Effect.sync(cleanup)
  })

/**
 * How deep a request body may nest. The wire contract's deepest legitimate body is a client
 * tool's JSON Schema inside `tools`, which core bounds at 32 levels; anything deeper is refused
 * before it is parsed, because decoding and error formatting walk values recursively and a body
 * nested thousands of levels overflowed the stack into a 500.
 */
export const MAX_JSON_DEPTH = 64

const tooDeep = badRequest(`The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`)

/**
 * Whether JSON text opens more than `max` arrays or objects inside one another, by one pass over
 * the characters (no recursion, no parse): brackets inside strings do not count.
 */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      // A backslash escapes the next character (an escaped quote does not end the string).
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** Whether a value nests more than `max` arrays or objects, walked with a stack (no recursion). */
const valueNestsDeeperThan = (value: unknown, max: number): boolean => {
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  const seen = new Set<object>()
  while (stack.length > 0) {
    const [next, depth] = stack.pop()!
    if (typeof next !== "object" || next === null || seen.has(next)) continue
    if (depth + 1 > max) return true
    seen.add(next)
    for (const child of Object.values(next)) stack.push([child, depth + 1])
  }
  return false
}

const tooLarge = (maxBytes: number, headers?: Readonly<Record<string, string>>) =>
  new HttpFailure({ status: 413, message: `The request body is larger than ${maxBytes} bytes.`, headers })

/**
 * Decodes a parsed body with a schema; a mismatch is a 400 whose message names the field.
 * Extra fields are ignored (clients send more than this server reads).
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I, never>,
  body: unknown
): Effect.Effect<A, HttpFailure> => {
  // readJson refuses deep text already; this guards a value that came another way.
  if (valueNestsDeeperThan(body, MAX_JSON_DEPTH)) return Effect.fail(tooDeep)
  const result = Schema.decodeUnknownEither(schema, { onExcessProperty: "ignore", errors: "first" })(body)
  return Either.isRight(result)
    ? Effect.succeed(result.right)
    : Effect.fail(badRequest(`Invalid request body: ${describeParseError(result.left)}`))
}

const describeParseError = (error: ParseResult.ParseError): string =>
  error.message.replace(/\s+/g, " ").slice(0, 300)

/** The request's URL search parameters. */
export const searchParams = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  try {
    return new URL(request.url, "http://localhost").searchParams
  } catch {
    return new URLSearchParams()
  }
})
