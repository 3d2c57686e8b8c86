/**
 * The HTTP vocabulary of the wire contract: every error is JSON `{statusCode, message, error?}`
 * (DESIGN.md "Wire contract"), request bodies are bounded and parsed without ever turning a
 * client's bad input into a 500.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Data, Effect, Either, Option, type ParseResult, Schema } from "effect"

/** Reason phrases of the statuses this server answers with. */
export const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  404: "Not Found",
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
}> {}

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
 * `undefined`; anything that is not JSON is a 400.
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
    const text = yield* request.text.pipe(
      HttpServerRequest.withMaxBodySize(Option.some(maxBytes)),
      Effect.mapError((error) =>
        String((error as { cause?: unknown }).cause).includes("maxBytes exceeded")
          ? tooLarge(maxBytes)
          : badRequest("The request body could not be read.")
      )
    )
    if (text.trim() === "") return undefined
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => badRequest("The request body is not valid JSON.")
    })
  })

const tooLarge = (maxBytes: number) =>
  new HttpFailure({ status: 413, message: `The request body is larger than ${maxBytes} bytes.` })

/**
 * Decodes a parsed body with a schema; a mismatch is a 400 whose message names the field.
 * Extra fields are ignored (clients send more than this server reads).
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I, never>,
  body: unknown
): Effect.Effect<A, HttpFailure> => {
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
