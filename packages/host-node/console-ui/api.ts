/**
 * The console's calls to its server: every one through the normal authenticated API, with the
 * token the page was opened with (docs/console.md). The token arrives in the URL fragment
 * (`#token=…`), which a browser never sends to a server nor puts in a Referer; the page moves it
 * to this tab's sessionStorage and clears the fragment.
 */
import type { ConsoleBudget, ConsoleCatalog, ConsoleOffer, ConsoleSearch } from "../src/console/Wire.js"

const KEY = "plugboard-console-token"

/** Takes the token from the fragment (then removes it from the address bar), else this tab's storage. */
export const takeToken = (): string | undefined => {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ""))
  const fromHash = hash.get("token")
  if (fromHash !== null && fromHash !== "") {
    sessionStorage.setItem(KEY, fromHash)
    history.replaceState(null, "", location.pathname + location.search)
    return fromHash
  }
  return sessionStorage.getItem(KEY) ?? undefined
}

/** Keeps a token typed into the page. */
export const keepToken = (token: string) => sessionStorage.setItem(KEY, token)

/** A refusal of the server, with its JSON error body's message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message)
  }
}

const headersOf = (token: string, json = false): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  "x-auth-type": "ucan",
  ...(json ? { "content-type": "application/json" } : {})
})

const explain = async (response: Response): Promise<ApiError> => {
  let message = `${response.status} ${response.statusText}`
  try {
    const body = (await response.json()) as { message?: string }
    if (typeof body.message === "string") message = body.message
  } catch {}
  if (response.status === 401) message += " — the token may have expired: run `plugboard console` again."
  if (response.status === 429) message += ` (retry after ${response.headers.get("retry-after") ?? "?"} s)`
  return new ApiError(response.status, message)
}

/** The API of one server with one token. */
export const client = (token: string) => {
  const get = async <A>(path: string): Promise<A> => {
    const response = await fetch(path, { headers: headersOf(token) })
    if (!response.ok) throw await explain(response)
    return (await response.json()) as A
  }
  const send = async <A>(method: string, path: string, body?: unknown): Promise<A> => {
    const response = await fetch(path, {
      method,
      headers: headersOf(token, true),
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    if (!response.ok) throw await explain(response)
    return (await response.json()) as A
  }
  return {
    catalog: () => get<ConsoleCatalog>("/console/api/catalog"),
    budget: () => get<ConsoleBudget>("/console/api/budget"),
    search: (query: string) => get<ConsoleSearch>(`/console/api/search?query=${encodeURIComponent(query)}`),
    offer: (loaded: ReadonlyArray<string>) =>
      get<ConsoleOffer>(`/console/api/offer?loaded=${loaded.map(encodeURIComponent).join(",")}`),
    thread: (sessionId: string) =>
      get<ConsoleOffer>(`/console/api/sessions/${encodeURIComponent(sessionId)}`),
    sessions: () => get<{ sessions: ReadonlyArray<Session>; total: number }>("/sessions?limit=100"),
    createSession: () => send<Session>("POST", "/sessions", {}),
    deleteSession: (id: string) =>
      send<{ success: boolean }>("DELETE", `/sessions/${encodeURIComponent(id)}`),
    history: (id: string) =>
      get<{ messages: ReadonlyArray<StoredMessage> }>(`/messages/${encodeURIComponent(id)}`),
    sessionRun: (id: string) =>
      get<{ run: { runId: string; status: string } | null }>(`/sessions/${encodeURIComponent(id)}/run`),
    abort: (sessionId: string) => send<{ success: boolean }>("POST", "/messages/abort", { sessionId }),
    /** Starts a streamed turn; the response's body is the run's SSE. */
    startTurn: async (sessionId: string, message: string) => {
      const response = await fetch(`/messages/${encodeURIComponent(sessionId)}`, {
        method: "POST",
        headers: headersOf(token, true),
        body: JSON.stringify({ message, stream: true })
      })
      if (!response.ok || response.body === null) throw await explain(response)
      return response
    },
    /**
     * Answers the approval the run `runId` waits for (`POST /runs/:runId/resume`, docs/waiting.md):
     * the response streams the resumed run (SSE), or is JSON when the wait had an answer already.
     */
    resume: async (runId: string, decision: "approve" | "deny", note?: string) => {
      const response = await fetch(`/runs/${encodeURIComponent(runId)}/resume`, {
        method: "POST",
        headers: headersOf(token, true),
        body: JSON.stringify(note === undefined || note.trim() === "" ? { decision } : { decision, note })
      })
      if (!response.ok || response.body === null) throw await explain(response)
      return response
    },
    /**
     * Answers a question a call in flight asks (an `input` wait, `POST /runs/:runId/resume` with
     * `values` or `decline`, and the wait's id): JSON, `answered` or `already`; the run, still
     * streaming, goes on. Values that do not fit the form are a 400 whose message says why.
     */
    answer: (
      runId: string,
      body: { readonly waitId: string } & (
        | { readonly values: Record<string, unknown> }
        | { readonly decline: true }
      )
    ) =>
      send<{ answered?: boolean; already?: boolean; wait?: { answered?: { by?: string } } }>(
        "POST",
        `/runs/${encodeURIComponent(runId)}/resume`,
        body
      ),
    /** The run's wait and how it was answered (`GET /runs/:runId/waits`, docs/waiting.md). */
    waits: (runId: string) =>
      send<{
        waits: ReadonlyArray<{ answered: { by?: string } | null; resumedRunId: string | null }>
      }>("GET", `/runs/${encodeURIComponent(runId)}/waits`),
    /** Rejoins a run after frame `after` (`GET /runs/:id?after=N`). */
    rejoin: async (runId: string, after: number) => {
      const response = await fetch(`/runs/${encodeURIComponent(runId)}?after=${after}`, {
        headers: headersOf(token)
      })
      if (!response.ok || response.body === null) throw await explain(response)
      return response
    }
  }
}

/** The API of one token. */
export type Api = ReturnType<typeof client>

/** A session as `GET /sessions` lists it. */
export interface Session {
  readonly sessionId: string
  readonly title: string
  readonly createdAt: string
  readonly lastUpdatedAt: string
}

/** A message as `GET /messages/:id` shows it. */
export interface StoredMessage {
  readonly type: string
  readonly content: string
  readonly id?: string
  readonly name?: string
  readonly toolCallId?: string
  readonly toolCalls?: ReadonlyArray<{ id?: string; name: string; args: unknown }>
  /** On a tool answer: the call failed (the model was answered with an error). */
  readonly isError?: boolean
  readonly cutOff?: boolean
}

/** One SSE frame: its number, event name and parsed data. */
export interface Frame {
  readonly id: number | undefined
  readonly event: string
  // biome-ignore lint/suspicious/noExplicitAny: frames are JSON the chat reads by event name
  readonly data: any
}

/** The frames of an SSE body as they arrive (`: heartbeat` comments skipped). */
export async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const reader = body
    .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
    .getReader()
  let buffer = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let end = buffer.indexOf("\n\n")
    while (end >= 0) {
      const raw = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      end = buffer.indexOf("\n\n")
      let id: number | undefined
      let event = "message"
      const data: Array<string> = []
      for (const line of raw.split("\n")) {
        if (line.startsWith(":")) continue
        const colon = line.indexOf(":")
        const field = colon < 0 ? line : line.slice(0, colon)
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
        if (field === "id") id = Number(value)
        else if (field === "event") event = value
        else if (field === "data") data.push(value)
      }
      if (data.length === 0) continue
      let parsed: unknown
      try {
        parsed = JSON.parse(data.join("\n"))
      } catch {
        parsed = { error: `Unreadable frame: ${data.join("\n").slice(0, 200)}` }
        event = "error"
      }
      yield { id, event, data: parsed }
    }
  }
}
