/**
 * The one error of MCP connections and calls. Its `reason` says what the caller can do about it:
 * `unreachable` (the server could not be started or reached: fix the config or the server),
 * `timeout` and `aborted` (the request was cancelled: the server was sent
 * `notifications/cancelled`), `crashed` (the connection died mid-request: the next use reconnects),
 * `closed` (the pool was closed), `protocol` (the server answered, but with a JSON-RPC error or a
 * malformed answer). A tool that reports its own failure (`isError`) is not an error: it is an
 * answer.
 */
import { Data } from "effect"

/** Why an MCP request failed. */
export type McpErrorReason = "unreachable" | "timeout" | "aborted" | "crashed" | "closed" | "protocol"

/**
 * A failed connection or request to an MCP server. `message` names the server, the tool when
 * there is one, and what happened (with a stdio server's exit code and last stderr lines when it
 * died); `cause` keeps the underlying error.
 */
export class McpError extends Data.TaggedError("McpError")<{
  readonly reason: McpErrorReason
  /** The server's name (its config key). */
  readonly server: string
  /** The tool being called, for a call. */
  readonly tool?: string | undefined
  readonly message: string
  readonly cause?: unknown
}> {}

/** True for an `McpError` (also one built by another copy of this module). */
export const isMcpError = (value: unknown): value is McpError =>
  value instanceof McpError ||
  (typeof value === "object" && value !== null && (value as { _tag?: unknown })._tag === "McpError")

/**
 * An error's message with the causes it chains (`fetch failed` alone says nothing; its cause's
 * `ECONNREFUSED` does). Bounded, so a huge message cannot flood a log or the model.
 */
export const describeError = (error: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const text = errorText(current)
    if (text !== "" && !parts.some((p) => p.includes(text))) parts.push(text)
    current = typeof current === "object" ? (current as { cause?: unknown }).cause : undefined
  }
  const joined = parts.length === 0 ? "unknown error" : parts.join(": ")
  return joined.length > 2000 ? `${joined.slice(0, 2000)}…` : joined
}

const errorText = (value: unknown): string => {
  if (typeof value !== "object") return String(value)
  const { message, code } = value as { message?: unknown; code?: unknown }
  const text = typeof message === "string" ? message : ""
  const codeText = typeof code === "string" && !text.includes(code) ? code : ""
  return [text, codeText].filter((p) => p !== "").join(" ")
}
