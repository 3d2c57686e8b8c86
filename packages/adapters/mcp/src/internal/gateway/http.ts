/**
 * The gateway over Streamable HTTP at `/mcp` (docs/mcp-gateway.md#over-http): a Node request
 * handler in front of the SDK's `StreamableHTTPServerTransport`. What it adds to the transport:
 *
 * - the checks before anything is read: the path, the `Host` and `Origin` a loopback server
 *   accepts (DNS rebinding), the bearer credential when one is set, the thread key;
 * - the body read once, bounded (`413` past `maxBodyBytes`), parsed, and handed to the transport;
 * - which thread a request is served on: a session opened by `initialize` (its `Mcp-Session-Id`
 *   carries its thread, held in memory, or the thread it named); a request without a session
 *   (MCP 2026-07-28 clients send no `initialize`) is served by a server of its own, on the thread it
 *   names, or on an empty one it forgets;
 * - sessions bounded in number and closed after an idle period.
 *
 * Every refusal is an HTTP status with a JSON-RPC error body whose message says what to do.
 */
import { createHash, randomUUID, timingSafeEqual } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { LoadedPluginsStore } from "@plugboard/core"
import { describeError } from "../../McpError.js"
import { type GatewayRuntime, GatewaySession } from "./session.js"
import type { Thread } from "./thread.js"

/** Options of the HTTP handler. */
export interface HttpOptions {
  /** Every request must carry `Authorization: Bearer <token>` (required off loopback, by the host). */
  readonly bearerToken?: string | undefined
  /**
   * Host names (without port) a request's `Host` may name, and whose origins an `Origin` header
   * may be; `undefined` accepts any (a server bound to a public address, behind its credential).
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** Largest request body read, in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** Most sessions open at once (default 10,000); an `initialize` beyond is answered 503. */
  readonly maxSessions?: number | undefined
  /** A session without a request this long is closed (default 1 hour). */
  readonly sessionIdleMs?: number | undefined
}

/** The default bound on a request body. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
/** The default number of sessions open at once. */
export const DEFAULT_MAX_SESSIONS = 10_000
/** The default idle period of a session. */
export const DEFAULT_SESSION_IDLE_MS = 60 * 60 * 1000

/** The header that names a thread (`X-Plugboard-Thread`), as Node lower-cases it. */
export const THREAD_HEADER = "x-plugboard-thread"
/** The query parameter that names a thread (`/mcp?thread=<id>`). */
export const THREAD_PARAMETER = "thread"

interface Entry {
  readonly session: GatewaySession
  readonly transport: StreamableHTTPServerTransport
  lastSeen: number
  /** Requests (an open GET stream included) under way: a session busy with one is never idle. */
  inflight: number
}

/** What the handler needs from the gateway. */
export interface HttpContext {
  readonly runtime: GatewayRuntime
  /** The thread of a new session or session-less request: kept under `key`, else the given kind. */
  readonly thread: (key: string | undefined, kind: "session" | "none") => Thread
  /** Sessions of the same kept thread, to tell after a load. */
  readonly onLoaded: (session: GatewaySession) => void
  readonly track: (session: GatewaySession, open: boolean) => void
}

/** A refusal: an HTTP status and a JSON-RPC error body. */
const refuse = (
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {}
): void => {
  if (res.headersSent) {
    res.end()
    return
  }
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null })
  res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(body)
}

const digest = (text: string): Buffer => createHash("sha256").update(text).digest()

/** The host name of a `Host` header or of an origin, without port or IPv6 brackets. */
const hostName = (value: string): string => {
  const v = value.trim().toLowerCase()
  if (v.startsWith("[")) return v.slice(1, v.indexOf("]"))
  const colon = v.lastIndexOf(":")
  return colon < 0 ? v : v.slice(0, colon)
}

const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : (value as string | undefined)

/** Reads a body up to `max` bytes; `undefined` when it is larger (the rest is not read). */
const readBody = (req: IncomingMessage, max: number): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"])
    if (Number.isFinite(declared) && declared > max) {
      resolve(undefined)
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        req.removeAllListeners("data")
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const isInitialize = (message: unknown): boolean =>
  Array.isArray(message)
    ? message.some(isInitialize)
    : typeof message === "object" &&
      message !== null &&
      (message as { method?: unknown }).method === "initialize"

/** The HTTP side of a gateway; see the module doc. */
export class GatewayHttp {
  private readonly sessions = new Map<string, Entry>()
  private readonly token: Buffer | undefined
  private readonly allowedHosts: ReadonlySet<string> | undefined
  private readonly maxBodyBytes: number
  private readonly maxSessions: number
  private readonly idleMs: number
  private readonly sweeper: NodeJS.Timeout
  private closed = false

  constructor(
    private readonly context: HttpContext,
    options: HttpOptions = {}
  ) {
    const token = options.bearerToken
    if (token !== undefined && token.length === 0) throw new TypeError("bearerToken must not be empty.")
    this.token = token === undefined ? undefined : digest(`Bearer ${token}`)
    this.allowedHosts =
      options.allowedHosts === undefined
        ? undefined
        : new Set(options.allowedHosts.map((h) => h.toLowerCase()))
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS
    this.idleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS
    // One timer for every session; unref'd, so it never keeps the process alive.
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, this.idleMs / 2)))
    this.sweeper.unref()
  }

  /** Sessions open now. */
  get sessionCount(): number {
    return this.sessions.size
  }

  /** The Node request handler: give it to `http.createServer`. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.serve(req, res).catch((error: unknown) => {
      this.context.runtime.logger.warn(`MCP gateway: a request failed: ${describeError(error)}`)
      refuse(res, 500, -32603, `Internal error: ${describeError(error)}`)
    })
  }

  /** Closes every session (their streams end); later requests are answered 503. */
  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.sweeper)
    const entries = [...this.sessions.values()]
    this.sessions.clear()
    await Promise.allSettled(entries.map((e) => e.session.close()))
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://gateway.invalid")
    if (url.pathname !== "/mcp" && url.pathname !== "/mcp/") {
      return refuse(
        res,
        404,
        -32601,
        `Not found: the MCP endpoint is /mcp (got ${url.pathname.slice(0, 100)}).`
      )
    }
    if (this.closed) return refuse(res, 503, -32000, "The MCP gateway is shutting down.")
    const denied = this.checkOrigin(req)
    if (denied !== undefined) return refuse(res, 403, -32000, denied)
    if (!this.authorized(req)) {
      return refuse(
        res,
        401,
        -32001,
        "Unauthorized: this MCP gateway needs the header Authorization: Bearer <token> (the token it was started with).",
        { "WWW-Authenticate": 'Bearer realm="plugboard-mcp"' }
      )
    }
    const key = this.threadKey(req, url)
    if (typeof key === "object") return refuse(res, 400, -32600, key.error)

    const sessionId = first(req.headers["mcp-session-id"])
    let body: unknown
    if (req.method === "POST") {
      const text = await readBody(req, this.maxBodyBytes)
      if (text === undefined) {
        return refuse(
          res,
          413,
          -32600,
          `Request body too large: this MCP gateway reads at most ${this.maxBodyBytes} bytes per request.`,
          { Connection: "close" }
        )
      }
      try {
        body = JSON.parse(text)
      } catch {
        return refuse(res, 400, -32700, "Parse error: the request body is not JSON.")
      }
    }

    if (sessionId !== undefined) {
      const entry = this.sessions.get(sessionId)
      if (entry === undefined) {
        return refuse(res, 404, -32001, "Session not found: it was closed or expired; initialize a new one.")
      }
      const bound = entry.session.thread.key
      if (key !== undefined && key !== bound) {
        return refuse(
          res,
          400,
          -32600,
          bound === undefined
            ? `This session keeps its own thread; it cannot switch to thread '${key}'. Open a new session naming it.`
            : `This session is on thread '${bound}', not '${key}'. Open a new session to use another thread.`
        )
      }
      return this.through(entry, req, res, body)
    }
    if (req.method !== "POST") {
      return refuse(
        res,
        400,
        -32000,
        "Bad Request: a GET or DELETE needs the Mcp-Session-Id header of a session."
      )
    }
    if (isInitialize(body)) return this.openSession(key, req, res, body)
    return this.sessionless(key, req, res, body)
  }

  private checkOrigin(req: IncomingMessage): string | undefined {
    if (this.allowedHosts === undefined) return undefined
    const host = first(req.headers.host)
    if (host === undefined || !this.allowedHosts.has(hostName(host))) {
      return `Forbidden: this MCP gateway listens on loopback and answers only requests for ${[...this.allowedHosts].join(", ")} (Host was ${JSON.stringify(host ?? "")}).`
    }
    const origin = first(req.headers.origin)
    if (origin === undefined || origin === "null")
      return origin === "null" ? "Forbidden: an opaque Origin." : undefined
    let originHost: string
    try {
      originHost = hostName(new URL(origin).host)
    } catch {
      return `Forbidden: the Origin ${JSON.stringify(origin.slice(0, 100))} is not a URL.`
    }
    // A web page of another site must not reach a local server through the browser.
    return this.allowedHosts.has(originHost)
      ? undefined
      : `Forbidden: requests from the origin ${origin.slice(0, 100)} are refused; this MCP gateway serves local clients.`
  }

  private authorized(req: IncomingMessage): boolean {
    if (this.token === undefined) return true
    const header = first(req.headers.authorization)
    // Both sides hashed: equal lengths, and a comparison whose time says nothing of the token.
    return header !== undefined && timingSafeEqual(digest(header), this.token)
  }

  /** The thread a request names (query parameter or header), checked; an error to answer otherwise. */
  private threadKey(req: IncomingMessage, url: URL): string | undefined | { readonly error: string } {
    const fromQuery = url.searchParams.get(THREAD_PARAMETER) ?? undefined
    const fromHeader = first(req.headers[THREAD_HEADER])
    if (fromQuery !== undefined && fromHeader !== undefined && fromQuery !== fromHeader) {
      return {
        error: `The thread is named twice, differently: ?thread=${fromQuery.slice(0, 100)} and X-Plugboard-Thread: ${fromHeader.slice(0, 100)}.`
      }
    }
    const key = fromQuery ?? fromHeader
    if (key === undefined) return undefined
    const problem = LoadedPluginsStore.keyProblem(key)
    return problem === undefined ? key : { error: `Bad thread key: ${problem}.` }
  }

  private async through(
    entry: Entry,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown
  ): Promise<void> {
    entry.lastSeen = Date.now()
    entry.inflight++
    res.once("close", () => {
      entry.inflight--
      entry.lastSeen = Date.now()
    })
    await entry.transport.handleRequest(req, res, body)
  }

  private async openSession(
    key: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown
  ): Promise<void> {
    if (this.sessions.size >= this.maxSessions) {
      return refuse(
        res,
        503,
        -32000,
        `Too many sessions: this MCP gateway keeps at most ${this.maxSessions} open; try again later.`,
        { "Retry-After": "60" }
      )
    }
    const thread = this.threadOf(key, "session", res)
    if (thread === undefined) return
    const id = randomUUID()
    let entry: Entry | undefined
    const session = await GatewaySession.open(this.context.runtime, thread, id, this.context.onLoaded)
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => {
        if (entry !== undefined) this.sessions.set(id, entry)
        this.context.track(session, true)
      }
    })
    transport.onclose = () => {
      this.sessions.delete(id)
      this.context.track(session, false)
    }
    entry = { session, transport, lastSeen: Date.now(), inflight: 0 }
    await session.connect(transport)
    await this.through(entry, req, res, body)
  }

  /** A request of no session: a server of its own, closed with the response. */
  private async sessionless(
    key: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown
  ): Promise<void> {
    const thread = this.threadOf(key, "none", res)
    if (thread === undefined) return
    const session = await GatewaySession.open(
      this.context.runtime,
      thread,
      randomUUID(),
      this.context.onLoaded
    )
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.once("close", () => {
      void session.close()
    })
    await session.connect(transport)
    await transport.handleRequest(req, res, body)
  }

  /** The thread of a new session or request; a key the gateway cannot keep is answered 400. */
  private threadOf(
    key: string | undefined,
    kind: "session" | "none",
    res: ServerResponse
  ): Thread | undefined {
    try {
      return this.context.thread(key, kind)
    } catch (error) {
      if (!(error instanceof TypeError)) throw error
      refuse(res, 400, -32600, error.message)
      return undefined
    }
  }

  private sweep(): void {
    const now = Date.now()
    for (const [id, entry] of this.sessions) {
      if (entry.inflight > 0 || now - entry.lastSeen < this.idleMs) continue
      this.sessions.delete(id)
      void entry.session.close()
    }
  }
}
