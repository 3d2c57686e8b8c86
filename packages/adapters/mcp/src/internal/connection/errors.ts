/**
 * How the SDK's errors read in plugboard's: an HTTP status and the body the server sent, a lost
 * session, refused credentials, and what a server asked that plugboard cannot give
 * (docs/mounting.md#protocol-revisions).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  SdkHttpError
} from "@modelcontextprotocol/client"
import { describeError, isMcpError } from "../../McpError.js"
import { isRecord } from "./answers.js"

/**
 * The server no longer knows the HTTP session (it restarted, or expired it). The protocol says
 * 404; many servers (the reference "everything" server among them) answer 400 naming the
 * session. Either way the request was refused unread, and a new session is the cure.
 */
export const sessionGone = (error: SdkHttpError): boolean =>
  error.status === 404 || (error.status === 400 && /session/i.test(error.message))

/**
 * An error's words, with the HTTP status when the server answered one, and the body it sent
 * when the SDK's message leaves it out (a refused `server/discover` probe).
 */
export const errorText = (error: unknown): string => {
  if (!(error instanceof SdkHttpError) || typeof error.status !== "number" || error.status <= 0) {
    return describeError(error)
  }
  const words = describeError(error)
  const body = typeof error.data.text === "string" ? error.data.text.trim() : ""
  return `HTTP ${error.status}: ${words}${body === "" || words.includes(body) ? "" : ` (${bounded(body)})`}`
}

/** The request failed because the HTTP session is gone: sending it again on a new one is safe. */
export const isSessionExpired = (error: unknown): boolean =>
  isMcpError(error) && error.cause instanceof SdkHttpError && sessionGone(error.cause)

/**
 * The server refused the request's credentials (HTTP 401), unread: with a renewed token, sending
 * it again is safe.
 */
export const isUnauthorized = (error: unknown): boolean =>
  isMcpError(error) && error.cause instanceof SdkHttpError && error.cause.status === 401

/** A server's words in a message, bounded: some servers answer with a whole validation dump. */
export const bounded = (text: string): string => (text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text)

const inputKinds: Record<string, string> = {
  sampling: "a completion from the client's model (sampling/createMessage)",
  "sampling/createMessage": "a completion from the client's model (sampling/createMessage)",
  roots: "the client's roots (roots/list)",
  "roots/list": "the client's roots (roots/list)",
  elicitation: "a kind of question to the user plugboard does not ask (URL elicitation)"
}

/**
 * What a server asked of the client that plugboard cannot give (sampling, roots), named for the
 * model; undefined for any other error. On 2026-07-28 an SDK v2 server refuses it itself, with
 * `-32021` (the capability is not declared); a server that sends it anyway in `input_required`
 * finds no handler in the SDK's client (`CapabilityNotSupported`).
 */
export const unanswerableInput = (error: unknown): string | undefined => {
  if (error instanceof ProtocolError && error.code === ProtocolErrorCode.MissingRequiredClientCapability) {
    const required = isRecord(error.data) ? error.data.requiredCapabilities : undefined
    const kinds = isRecord(required)
      ? Object.keys(required).map((k) => inputKinds[k] ?? `the '${k}' capability`)
      : []
    return kinds.length === 0 ? "a client capability plugboard does not declare" : kinds.join(" and ")
  }
  if (!(error instanceof SdkError) || error.code !== SdkErrorCode.CapabilityNotSupported) return undefined
  const method = isRecord(error.data) ? error.data.method : undefined
  if (typeof method !== "string") return undefined
  return inputKinds[method] ?? `an answer to '${method}'`
}
