/**
 * The gateway over Streamable HTTP at `/mcp` (docs/mcp-gateway.md#over-http): a Node request
 * handler in front of the SDK v2's serving, for both eras (docs/mcp-gateway.md#revisions). What it
 * adds:
 *
 * - the checks before anything is read: the path, the `Host` and `Origin` a loopback server
 *   accepts (DNS rebinding), the bearer credential when one is set, the thread key;
 * - the body read once, bounded (`413` past `maxBodyBytes`), parsed, and handed to the SDK;
 * - the era of the request (`isLegacyRequest`, the SDK's own classification): a 2026-07-28 request
 *   (its `_meta` envelope) goes to the SDK's `createMcpHandler` of its thread, one per thread, whose
 *   `subscriptions/listen` streams are told of that thread's loads; a 2025-era one to the sessions;
 * - which thread a request is served on. 2025 era: a session opened by `initialize` (its
 *   `Mcp-Session-Id` carries its thread, held in memory, or the thread it named); a request without
 *   a session is served by a server of its own, on the thread it names, or on an empty one it
 *   forgets. 2026-07-28 (no sessions at all): the thread it names, or else the endpoint's own;
 * - sessions bounded in number and closed after an idle period.
 *
 * Every refusal is an HTTP status with a JSON-RPC error body whose message says what to do.
 */
import { randomUUID, timingSafeEqual } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { isLegacyRequest, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server"
import { LoadedPluginsStore } from "@plugboard/core"
import { describeError } from "../../McpError.js"
import { type Listener, ModernHandlers } from "./modern.js"
import { digest, first, hostName, isInitialize, readBody, refuse } from "./requests.js"
import { type GatewayRuntime, GatewaySession } from "./session.js"
import type { Thread } from "./thread.js"
import { sendWebResponse, webRequest } from "./web.js"

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
  /**
   * Most sessions open at once (default 10,000); an `initialize` beyond is answered 503. Also the
   * most threads whose 2026-07-28 handlers are kept at once (the least recently used is closed).
   */
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
  readonly transport: WebStandardStreamableHTTPServerTransport
  lastSeen: number
  /** Requests (an open GET stream included) under way: a session busy with one is never idle. */
  inflight: number
}

export type { Listener } from "./modern.js"

/** What the handler needs from the gateway. */
export interface HttpContext {
  readonly runtime: GatewayRuntime
  /** The thread of a new session or session-less request: kept under `key`, else the given kind. */
  readonly thread: (key: string | undefined, kind: "session" | "none") => Thread
  /** Tells the thread's listeners of a load. */
  readonly onLoaded: (session: GatewaySession) => void
  /** Adds a listener to a thread (by `Thread.id`); the function returned removes it. */
  readonly listen: (threadId: string, listener: Listener) => () => void
}

/** The HTTP side of a gateway; see the module doc. */
export class GatewayHttp {
  private readonly sessions = new Map<string, Entry>()
  private readonly modern: ModernHandlers
  /** The thread of 2026-07-28 requests that name none: the endpoint's own, in memory. */
  private endpointThread: Thread | undefined
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
    this.modern = new ModernHandlers(context, this.maxSessions, this.maxBodyBytes)
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
    await Promise.allSettled([...entries.map((e) => e.session.close()), this.modern.close()])
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

    // The SDK reads the headers and the body, not the URL's host: a Host that is no URL's is no error.
    const request = webRequest(req, res, url)
    // A 2026-07-28 request has no session: an Mcp-Session-Id it carries is ignored, as the revision says.
    if (req.method === "POST" && !(await isLegacyRequest(request, body))) {
      return this.serveModern(key, request, res, body)
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
      return this.through(entry, request, res, body)
    }
    if (req.method !== "POST") {
      return refuse(
        res,
        400,
        -32000,
        "Bad Request: a GET or DELETE needs the Mcp-Session-Id header of a session."
      )
    }
    if (isInitialize(body)) return this.openSession(key, request, res, body)
    return this.sessionless(key, request, res, body)
  }

  /** A 2026-07-28 request: the SDK's handler of its thread answers it. */
  private async serveModern(
    key: string | undefined,
    request: Request,
    res: ServerResponse,
    body: unknown
  ): Promise<void> {
    let thread: Thread | undefined
    if (key === undefined) {
      this.endpointThread ??= this.context.thread(undefined, "session")
      thread = this.endpointThread
    } else {
      thread = this.threadOf(key, "session", res)
      if (thread === undefined) return
    }
    const handler = this.modern.handlerOf(thread)
    await sendWebResponse(await handler.fetch(request, { parsedBody: body }), res)
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

  private async through(entry: Entry, request: Request, res: ServerResponse, body: unknown): Promise<void> {
    entry.lastSeen = Date.now()
    entry.inflight++
    res.once("close", () => {
      entry.inflight--
      entry.lastSeen = Date.now()
    })
    await sendWebResponse(await entry.transport.handleRequest(request, { parsedBody: body }), res)
  }

  private async openSession(
    key: string | undefined,
    request: Request,
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
    const session = await GatewaySession.open(
      this.context.runtime,
      thread,
      id,
      "legacy",
      this.context.onLoaded
    )
    let unlisten: (() => void) | undefined
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => {
        if (entry !== undefined) this.sessions.set(id, entry)
        unlisten = this.context.listen(thread.id, session)
      }
    })
    transport.onclose = () => {
      this.sessions.delete(id)
      unlisten?.()
    }
    entry = { session, transport, lastSeen: Date.now(), inflight: 0 }
    await session.server.connect(transport)
    await this.through(entry, request, res, body)
  }

  /** A request of no session: a server of its own, closed with the response. */
  private async sessionless(
    key: string | undefined,
    request: Request,
    res: ServerResponse,
    body: unknown
  ): Promise<void> {
    const thread = this.threadOf(key, "none", res)
    if (thread === undefined) return
    const session = await GatewaySession.open(
      this.context.runtime,
      thread,
      randomUUID(),
      "legacy",
      this.context.onLoaded
    )
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.once("close", () => {
      void session.close()
    })
    await session.server.connect(transport)
    await sendWebResponse(await transport.handleRequest(request, { parsedBody: body }), res)
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
