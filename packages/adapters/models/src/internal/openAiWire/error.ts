/**
 * The OpenAI wire's one error: why a request was refused (answered as OpenAI's error JSON with
 * the status of its reason) or why the server could not start. Its own module so that the
 * request parser and the server both use it without importing each other.
 */
import { Data } from "effect"

/**
 * Why an `OpenAiWireError` happened. `listen`: the server could not listen (`code` is the
 * system's error code, such as `EADDRINUSE`);
 * `malformed-json` the body is not JSON (400); `invalid-request` the body is JSON but not a chat
 * completion request this server takes (400); `too-large` the body is over the size limit (413);
 * `not-found` no such route (404); `method-not-allowed` a route called with the wrong method
 * (405); `script-exhausted` a scripted model has no step left (500); `model-failed` the model's
 * call failed (500, or 400 / 401 / 429 / 503 when the model's own error says so).
 */
export type OpenAiWireErrorReason =
  | "listen"
  | "malformed-json"
  | "invalid-request"
  | "too-large"
  | "not-found"
  | "method-not-allowed"
  | "script-exhausted"
  | "model-failed"

/** A request the OpenAI wire refused, or a server that could not start. */
export class OpenAiWireError extends Data.TaggedError("OpenAiWireError")<{
  readonly reason: OpenAiWireErrorReason
  readonly message: string
  /** The HTTP status the request is answered with (0 for `listen`). */
  readonly status: number
  /** The request field at fault, as OpenAI names it (`messages[2].tool_call_id`). */
  readonly param?: string | undefined
  /** OpenAI's `error.code` for it, or the system's error code for `listen`. */
  readonly code?: string | undefined
}> {}

/** A 400 `invalid-request` about `param`. */
export const invalid = (message: string, param?: string, code?: string): OpenAiWireError =>
  new OpenAiWireError({ reason: "invalid-request", status: 400, message, param, code })
