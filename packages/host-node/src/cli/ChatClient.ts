/**
 * A small client of the wire contract (docs/spec/wire.md): finds the oracle's DID from `/health`,
 * signs a fresh UCAN invocation per request with the local user's key, creates sessions and streams
 * turns over SSE. What `plugboard chat` and `pnpm demo` run; a starting point for a client of one's
 * own.
 */

import type { EventSink } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { mintInvocation, type Signer } from "@plugboard/ucan"
import { Data } from "effect"
import { eventPrinter, readSse } from "./Sse.js"

/** The oracle answered with an error status (or not at all); `message` says what and why. */
export class ChatClientError extends Data.TaggedError("ChatClientError")<{
  readonly message: string
  /** The HTTP status, or `undefined` when no oracle answered. */
  readonly status?: number | undefined
}> {
  // A client's calls reject with it, to plain callers: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(message: string, status?: number) {
    super(status === undefined ? { message } : { message, status })
  }
}

/** A connection to one oracle as one user. */
export interface ChatClient {
  readonly url: string
  readonly oracleDid: string
  /** Creates a session (`POST /sessions`); its id. */
  readonly createSession: (title?: string) => Promise<string>
  /** Posts `message` with `stream: true` and yields each SSE event as it arrives. */
  readonly stream: (sessionId: string, message: string) => AsyncGenerator<EventSink.AgentEvent>
}

/** Options of `connectChat`. */
export interface ChatClientOptions {
  /** The oracle's base URL. */
  readonly url: string
  /** The user's key; their DID is the user. */
  readonly signer: Signer
  /** The capability's resource (`UCAN_RESOURCE`); default `ixo:oracle`. */
  readonly resource?: string | undefined
}

const failed = async (what: string, response: Response): Promise<ChatClientError> =>
  new ChatClientError(`${what}: HTTP ${response.status} ${await response.text()}`, response.status)

/** Connects to the oracle at `url` (reads `/health`); rejects with `ChatClientError` when none answers. */
export const connectChat = async (options: ChatClientOptions): Promise<ChatClient> => {
  const url = options.url.replace(/\/+$/, "")
  const health = await fetch(`${url}/health`).catch((error: unknown) => {
    throw new ChatClientError(
      `No oracle answers at ${url} (${describe(error)}). Start one with: pnpm plugboard serve`
    )
  })
  if (!health.ok) throw await failed(`${url}/health`, health)
  const { oracleDid } = (await health.json().catch(() => ({}))) as { oracleDid?: unknown }
  if (typeof oracleDid !== "string") throw new ChatClientError(`${url}/health did not report an oracleDid.`)
  // A fresh short-lived token per request: a long session never runs into the 15-minute cap.
  const headers = async () => ({
    authorization: `Bearer ${await mintInvocation({
      issuer: options.signer,
      audience: oracleDid,
      ...(options.resource === undefined ? {} : { resource: options.resource })
    })}`,
    "x-auth-type": "ucan",
    "content-type": "application/json"
  })
  return {
    url,
    oracleDid,
    createSession: async (title) => {
      const response = await fetch(`${url}/sessions`, {
        method: "POST",
        headers: await headers(),
        body: JSON.stringify(title === undefined ? {} : { title })
      })
      if (!response.ok) throw await failed("creating a session", response)
      return ((await response.json()) as { sessionId: string }).sessionId
    },
    stream: async function* (sessionId, message) {
      const response = await fetch(`${url}/messages/${encodeURIComponent(sessionId)}`, {
        method: "POST",
        headers: await headers(),
        body: JSON.stringify({ message, stream: true })
      })
      if (!response.ok || response.body === null) throw await failed("sending the message", response)
      yield* readSse(response.body)
    }
  }
}

/**
 * Streams one turn and writes its events readably to `out` as they arrive. Resolves `true` when
 * the turn ended without an `error` event.
 */
export const chatTurn = async (
  client: ChatClient,
  sessionId: string,
  message: string,
  out: (text: string) => void
): Promise<boolean> => {
  const print = eventPrinter()
  let ok = true
  for await (const event of client.stream(sessionId, message)) {
    if (event._tag === "error") ok = false
    out(print(event))
  }
  return ok
}
