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
import { askForm } from "./AskForm.js"
import { eventPrinter, printEvent, readSse } from "./Sse.js"

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
  /**
   * Answers the wait of the run `runId` (`POST /runs/:runId/resume`, docs/waiting.md) and yields
   * the resumed run's events; yields nothing when the wait was answered already (another tab, the
   * host's timeout), in which case `answeredAlready` says how.
   */
  readonly resume: (runId: string, decision: Decision) => AsyncGenerator<EventSink.AgentEvent, ResumeEnd>
  /**
   * Answers a question a call of the run `runId` asks (an input wait, `waitId`) with values or a
   * decline; the run, still streaming, goes on. `refused` with the server's reason when the
   * values do not fit the form.
   */
  readonly answer: (
    runId: string,
    waitId: string,
    reply: { readonly values: Record<string, unknown> } | { readonly decline: true }
  ) => Promise<AnswerEnd>
}

/** How answering a question ended: recorded, answered first by someone else, refused (why), or no longer open. */
export type AnswerEnd =
  | { readonly _tag: "answered" }
  | { readonly _tag: "already"; readonly by: string }
  | { readonly _tag: "refused"; readonly message: string }
  | { readonly _tag: "gone"; readonly message: string }

/** A user's answer to an approval. */
export interface Decision {
  readonly approve: boolean
  /** Why, in the user's words: the model reads it with a denial. */
  readonly note?: string | undefined
}

/** How a resume ended: the resumed run streamed, or the wait had an answer already (which one). */
export type ResumeEnd =
  | { readonly _tag: "streamed" }
  | { readonly _tag: "already"; readonly by: string; readonly answer: unknown }

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
    },
    resume: async function* (runId, decision) {
      const response = await fetch(`${url}/runs/${encodeURIComponent(runId)}/resume`, {
        method: "POST",
        headers: await headers(),
        body: JSON.stringify({
          decision: decision.approve ? "approve" : "deny",
          ...(decision.note === undefined || decision.note.trim() === ""
            ? {}
            : { note: decision.note.trim() })
        })
      })
      if (!response.ok || response.body === null) throw await failed("answering the approval", response)
      if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
        const { wait } = (await response.json()) as {
          wait?: { answered?: { by?: unknown; answer?: unknown } }
        }
        return {
          _tag: "already",
          by: String(wait?.answered?.by ?? "someone"),
          answer: wait?.answered?.answer
        }
      }
      yield* readSse(response.body)
      return { _tag: "streamed" }
    },
    answer: async (runId, waitId, reply) => {
      const response = await fetch(`${url}/runs/${encodeURIComponent(runId)}/resume`, {
        method: "POST",
        headers: await headers(),
        body: JSON.stringify({ ...reply, waitId })
      })
      if (response.status === 400) {
        const { message } = (await response.json().catch(() => ({}))) as { message?: unknown }
        return { _tag: "refused", message: String(message ?? "the answer was refused") }
      }
      if (response.status === 404 || response.status === 409) {
        const { message } = (await response.json().catch(() => ({}))) as { message?: unknown }
        return { _tag: "gone", message: String(message ?? "the question is no longer open") }
      }
      if (!response.ok) throw await failed("answering the question", response)
      const body = (await response.json()) as { already?: boolean; wait?: { answered?: { by?: unknown } } }
      return body.already === true
        ? { _tag: "already", by: String(body.wait?.answered?.by ?? "someone") }
        : { _tag: "answered" }
    }
  }
}

/** Asks the user a question on the terminal; `undefined` when no answer can come (stdin closed). */
export type Ask = (question: string) => Promise<string | undefined>

/** What the user answered to "approve?": yes, no (with what they typed after it as the note), or nothing. */
export const decisionOf = (reply: string | undefined): Decision | undefined => {
  const text = reply?.trim()
  if (text === undefined || text === "") return undefined
  const [word = "", ...rest] = text.split(/\s+/)
  const note = rest.join(" ")
  if (/^(y|yes|approve)$/i.test(word)) return { approve: true }
  if (/^(n|no|deny)$/i.test(word)) return { approve: false, ...(note === "" ? {} : { note }) }
  return undefined
}

/** Asks a question of the run on the terminal until its answer is recorded, declined, or none can come. */
const answerQuestion = async (
  client: ChatClient,
  waiting: Extract<EventSink.AgentEvent, { _tag: "waiting" }>,
  ask: Ask,
  out: (text: string) => void
): Promise<void> => {
  out(`⏸ ${waiting.tool} (${waiting.plugin}) asks: ${waiting.message ?? ""}\n`)
  for (;;) {
    const reply = await askForm(waiting, ask, out)
    if (reply === undefined) {
      out(printEvent(waiting))
      return
    }
    const end = await client.answer(
      waiting.runId,
      waiting.waitId,
      reply._tag === "decline" ? { decline: true } : { values: reply.values }
    )
    if (end._tag === "refused") {
      out(`Not accepted: ${end.message}\n`)
      continue
    }
    if (end._tag === "already") out(`This question was answered already (by ${end.by}).\n`)
    if (end._tag === "gone") out(`Too late: ${end.message}\n`)
    return
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
  out: (text: string) => void,
  /** Asks the user to approve a call the run waits for; without it, the chat says how to answer. */
  ask?: Ask | undefined
): Promise<boolean> => {
  let ok = true
  let events: AsyncGenerator<EventSink.AgentEvent, unknown> = client.stream(sessionId, message)
  for (;;) {
    const print = eventPrinter()
    let waiting: Extract<EventSink.AgentEvent, { _tag: "waiting" }> | undefined
    for await (const event of events) {
      if (event._tag === "error") ok = false
      if (event._tag === "waiting" && event.kind === "input") {
        // A question a call asks: the run keeps streaming (buffered meanwhile) once it is answered.
        if (ask === undefined) out(print(event))
        else await answerQuestion(client, event, ask, out)
      } else if (event._tag === "waiting") waiting = event
      else out(print(event))
    }
    if (waiting === undefined) return ok
    // A connect is answered by the host once the user connects, not on the terminal: say where.
    if (waiting.kind === "connect") {
      out(printEvent(waiting))
      return ok
    }
    const question = `⏸ ${waiting.tool} (${waiting.plugin}) wants to run with ${JSON.stringify(waiting.args)}. Approve? [y/n, or "n <why>"] `
    let decision: Decision | undefined
    while (ask !== undefined && decision === undefined) {
      const reply = await ask(question)
      if (reply === undefined) break
      decision = decisionOf(reply)
      if (decision === undefined) out(`Answer y or n.\n`)
    }
    if (decision === undefined) {
      out(printEvent(waiting))
      return ok
    }
    const resumed = client.resume(waiting.runId, decision)
    // The end of `resumed` says whether another answer came first: printed once it is read.
    events = (async function* () {
      const end = yield* resumed
      if (end._tag === "already") out(`This approval was answered already (by ${end.by}).\n`)
    })()
  }
}
