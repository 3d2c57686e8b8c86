/**
 * One live connection to one MCP server, over the official SDK v2's `Client`: a stdio child
 * process or a Streamable HTTP session, on the protocol revision negotiated at connect (2026-07-28
 * through `server/discover`, else a 2025 one through `initialize`; docs/mounting.md#protocol-revisions). It turns every way a request can fail into an `McpError` that
 * says what happened (a stdio child's exit code and last stderr lines when it died), lists tools
 * page by page, and refreshes them on `notifications/tools/list_changed`. When and how long a
 * connection lives is the pool's business (`Pool.ts`); a connection only reports that it closed.
 */
import {
  Client,
  type ElicitResult,
  type ProtocolEra,
  ProtocolError,
  ProtocolErrorCode,
  type RequestOptions,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type Transport
} from "@modelcontextprotocol/client"
import type { RuntimeLogger, Wait } from "@plugboard/core"
import { anyResult, isRecord, type ListHints, readHints, readTool } from "./internal/connection/answers.js"
import { bounded, errorText, sessionGone, unanswerableInput } from "./internal/connection/errors.js"
import { StderrTail } from "./internal/connection/stderr.js"
import { MAX_TIMER_MS, pausedTimeout } from "./internal/connection/timeout.js"
import { describeError, isMcpError, McpError, type McpErrorReason } from "./McpError.js"
import { type StdioTransport, stdioTransport } from "./StdioTransport.js"

import type { McpDescription, McpProgress, McpServerConfig, McpToolDescription } from "./Types.js"

export type { ListHints } from "./internal/connection/answers.js"
export { isSessionExpired, isUnauthorized } from "./internal/connection/errors.js"

/** A server answering page after page forever is refused past this many pages of tools/list. */
const MAX_TOOL_PAGES = 1_000
/**
 * Largest JSON-RPC message read from a stdio server: above the SDK's 10 MiB, since one answer may
 * carry up to `Results.ts`' 16,000,000 characters of text (a door then cuts it to a page, core's
 * `ResultPages`); past it the connection is closed and the call fails saying why.
 */
const MAX_MESSAGE_BYTES = 32 * 1024 * 1024

/** What the pool hears from a connection. */
export interface ConnectionEvents {
  /** The connection ended without `close()` being called (a crash, a lost session). Called once. */
  readonly closed: (connection: McpConnection) => void
  /**
   * The connection began to close, for any reason (the pool's, a failed `initialize`, a lost
   * server): `done` resolves once it is closed, a stdio server's whole process group gone.
   */
  readonly stopping?: ((done: Promise<void>) => void) | undefined
  /** A tools/list finished; `listChanged` when the server's `tools/list_changed` asked for it. */
  readonly toolsListed: (
    connection: McpConnection,
    tools: ReadonlyArray<McpToolDescription>,
    listChanged: boolean
  ) => void
}

/** What opening a connection needs. */
export interface ConnectionParams {
  readonly server: McpServerConfig
  readonly clientInfo: { readonly name: string; readonly version: string }
  readonly logger: RuntimeLogger
  readonly events: ConnectionEvents
  /** The opening use's own headers (a user's invocation): they go on `initialize` too. */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** One request's bounds. */
export interface RequestContext {
  /** What the request is, for messages: "tools/list", or the tool's name with `tool`. */
  readonly what: string
  readonly tool?: string | undefined
  /** The SDK's timeout for this request (what is left of the caller's budget). */
  readonly timeoutMs: number
  /** The caller's whole budget, for the message. */
  readonly budgetMs: number
  readonly signal?: AbortSignal | undefined
  readonly onProgress?: ((progress: McpProgress) => void) | undefined
  /** Answers the server's elicitations while this request is in flight (`McpRequestOptions.onElicit`). */
  readonly onElicit?: ((question: Wait.InputQuestion) => Promise<Wait.InputAnswer>) | undefined
}

/** Why a connection was closed on purpose. */
export type CloseReason = "idle" | "pool" | "replaced" | "abandoned"

const closeText: Record<CloseReason, string> = {
  idle: "it was idle",
  pool: "the MCP pool was closed",
  replaced: "the server's config changed",
  abandoned: "the server could not be reached"
}

/** A live connection to one server. Build it with {@link McpConnection.open}. */
export class McpConnection {
  readonly server: McpServerConfig
  private readonly client: Client
  private readonly transport: Transport | StdioTransport
  private readonly logger: RuntimeLogger
  private readonly events: ConnectionEvents
  private readonly stderr = new StderrTail()
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
  /** The server sent a message over `MAX_MESSAGE_BYTES`: the SDK closed the connection. */
  private overflowed = false
  private useHeaders: Readonly<Record<string, string>> = {}
  /** Negotiation is off: the server exited on `server/discover` once (`open`). */
  private readonly legacyOnly: boolean
  /** The connect failed because the child exited while it was being probed. */
  private diedOnProbe = false
  private closeReason: CloseReason | undefined
  private closing: Promise<void> | undefined
  private ended = false
  private opened = false
  /** The relisting under way after `tools/list_changed` (settles, never rejects), if any. */
  private refreshing: Promise<void> | undefined
  private refreshAgain = false
  private progressCounter = 0
  private readonly progress = new Map<string, (progress: McpProgress) => void>()
  /** The askers of the requests in flight that can answer an elicitation (`RequestContext.onElicit`). */
  private readonly askers = new Set<(question: Wait.InputQuestion) => Promise<Wait.InputAnswer>>()
  /** The tools this connection last listed. */
  tools: ReadonlyArray<McpToolDescription> | undefined
  /** The freshness the server gave that listing (2026-07-28; empty from a 2025 server). */
  listHints: ListHints = {}
  serverInfo: McpDescription["serverInfo"] = { name: "" }
  instructions: string | undefined

  private constructor(params: ConnectionParams, legacyOnly: boolean) {
    this.legacyOnly = legacyOnly
    this.server = params.server
    this.logger = params.logger
    this.events = params.events
    this.useHeaders = params.headers ?? {}
    this.transport = this.makeTransport()
    // Form elicitation only: a server may ask the user for values during a call (docs/waiting.md).
    this.client = new Client(
      { name: params.clientInfo.name, version: params.clientInfo.version },
      {
        capabilities: { elicitation: { form: {} } },
        // The protocol revision is negotiated at connect (`connect()`): `server/discover` first,
        // `initialize` for a server that does not know it.
        versionNegotiation: { mode: legacyOnly ? "legacy" : "auto" }
      }
    )
    // Transport errors (an SSE stream lost, a stray response) surface as failed requests or as
    // a close; here they are only worth a debug line, and must never reach 'error' listeners.
    this.client.onerror = (error) => {
      // The SDK closes the connection on a message over its read buffer (and the child, its stdin
      // ended, exits 0): remembered so the failure names the cause, not the exit.
      if (/ReadBuffer exceeded maximum size/.test(describeError(error))) this.overflowed = true
      this.logger.debug(`MCP server '${this.server.name}': ${describeError(error)}`, {
        server: this.server.name
      })
    }
    this.client.onclose = () => this.onClosed()
    this.client.setNotificationHandler("notifications/tools/list_changed", () => this.refreshTools())
    // On 2025 revisions a server sends `elicitation/create` as a request of its own; on 2026-07-28
    // it answers `input_required`, and the SDK fulfils the embedded request through this same
    // handler before retrying the call (docs/mounting.md#protocol-revisions).
    this.client.setRequestHandler("elicitation/create", (request) =>
      this.elicit(request.params as Record<string, unknown>)
    )
  }

  /**
   * A server's `elicitation/create`: the question goes to the one request in flight on this
   * connection that can ask its user, and the user's answer comes back (values: `accept`;
   * a decline or no answer in time: `decline`). The protocol does not say which request an
   * elicitation is for, so with none, or more than one, in flight it is declined: a question is
   * never put to a user whose call did not ask it.
   */
  private async elicit(params: Record<string, unknown>): Promise<ElicitResult> {
    const schema = params.requestedSchema
    const asker = this.askers.size === 1 ? [...this.askers][0] : undefined
    if (asker === undefined || (params.mode !== undefined && params.mode !== "form") || !isRecord(schema)) {
      this.logger.debug(
        `MCP server '${this.server.name}': an elicitation was declined (no single call to ask for)`,
        {
          server: this.server.name,
          inFlight: this.askers.size
        }
      )
      return { action: "decline" }
    }
    const message = typeof params.message === "string" ? params.message : ""
    const answer = await asker({ message, schema })
    return answer._tag === "values"
      ? { action: "accept", content: answer.values as ElicitResult["content"] }
      : { action: "decline" }
  }

  /**
   * Starts the server (stdio) or opens a session (HTTP) and runs `initialize`, bounded by
   * `timeoutMs`. Rejects with an `McpError`: `unreachable` when it cannot start or answer,
   * `timeout` when initialize takes too long.
   */
  static async open(params: ConnectionParams, timeoutMs: number): Promise<McpConnection> {
    const started = Date.now()
    const connection = new McpConnection(params, false)
    try {
      await connection.connect(timeoutMs)
      return connection
    } catch (error) {
      // A stdio server that exits on the `server/discover` probe (some SDKs end on any request
      // before `initialize`) is started again and spoken to on the 2025 revisions alone.
      if (!connection.diedOnProbe) throw error
      params.logger.debug(
        `MCP server '${params.server.name}' exited on server/discover; it is restarted on the 2025 revisions.`,
        { server: params.server.name }
      )
      await connection.closing
      const legacy = new McpConnection(params, true)
      await legacy.connect(Math.max(1, timeoutMs - (Date.now() - started)))
      return legacy
    }
  }

  /** The protocol revision this connection negotiated (e.g. `2026-07-28`, `2025-11-25`). */
  get protocolVersion(): string | undefined {
    return this.client.getNegotiatedProtocolVersion()
  }

  /** `modern` (2026-07-28 and later, `server/discover`) or `legacy` (`initialize`). */
  get protocolEra(): ProtocolEra | undefined {
    return this.client.getProtocolEra()
  }

  /** Open, and not closing. */
  get isOpen(): boolean {
    return !this.ended && this.closeReason === undefined
  }

  /**
   * Headers this use adds to the server's own (a user's invocation). A later use replaces them:
   * an invocation renewed for the same user goes out without reconnecting.
   */
  setHeaders(headers: Readonly<Record<string, string>> | undefined): void {
    this.useHeaders = headers ?? {}
  }

  private makeTransport(): Transport {
    const config = this.server.transport
    if (config.kind === "http") {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...config.headers } },
        // The per-use headers go on every request through fetch, so a later use's headers (a
        // renewed invocation) replace the earlier ones on the same session.
        fetch: (url, init) => {
          const headers = new Headers(init?.headers)
          for (const [key, value] of Object.entries(this.useHeaders)) headers.set(key, value)
          return fetch(url, { ...init, headers })
        }
      })
    }
    return stdioTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      maxBufferSize: MAX_MESSAGE_BYTES,
      onStderr: (chunk) => this.stderr.push(chunk),
      onExit: (code, signal) => {
        this.exit = { code, signal }
      }
    })
  }

  private async connect(timeoutMs: number): Promise<void> {
    // On stdio a `server/discover` probe left unanswered means a 2025 server, and the SDK then
    // sends `initialize`: the deadline bounds probe and handshake together, so a silent server
    // still fails within `timeoutMs` (the SDK's probe takes no signal; the handshake does).
    const started = Date.now()
    const deadline = new AbortController()
    const timer = setTimeout(
      () =>
        deadline.abort(
          new SdkError(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: timeoutMs })
        ),
      Math.max(1, timeoutMs)
    )
    try {
      await this.client.connect(this.transport, { timeout: timeoutMs, signal: deadline.signal })
    } catch (error) {
      this.diedOnProbe =
        !this.legacyOnly &&
        this.server.transport.kind === "stdio" &&
        this.exit !== undefined &&
        this.client.getProtocolEra() === undefined &&
        Date.now() - started < timeoutMs &&
        !(error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
      // Not awaited: the caller should hear why now (what the error says was already gathered).
      // A server that never answered is stopped without the grace after its stdin ends, and the
      // pool's close() waits until it and its process group are gone (`events.stopping`).
      this.closeReason = "abandoned"
      void this.shutdown()
      throw this.connectError(error, timeoutMs)
    } finally {
      clearTimeout(timer)
    }
    const info = this.client.getServerVersion()
    this.serverInfo = {
      name: typeof info?.name === "string" ? info.name : this.server.name,
      ...(typeof info?.title === "string" ? { title: info.title } : {}),
      ...(typeof info?.version === "string" ? { version: info.version } : {})
    }
    this.opened = true
    this.interceptProgress()
    await this.listenForChanges(timeoutMs)
    const instructions = this.client.getInstructions()
    this.instructions = typeof instructions === "string" ? instructions : undefined
    this.logger.debug(`MCP server '${this.server.name}' connected.`, { server: this.server.name })
  }

  /**
   * On 2026-07-28 a server's `tools/list_changed` reaches only a client that opened a
   * `subscriptions/listen` stream; on 2025 revisions it arrives unasked. A server that does not
   * let us listen still works: its list is relisted when its `ttlMs` runs out (`Pool.ts`).
   */
  private async listenForChanges(timeoutMs: number): Promise<void> {
    if (this.client.getProtocolEra() !== "modern") return
    if (this.client.getServerCapabilities()?.tools?.listChanged !== true) return
    try {
      await this.client.listen({ toolsListChanged: true }, { timeout: Math.max(1, timeoutMs) })
    } catch (error) {
      this.logger.debug(
        `MCP server '${this.server.name}' did not open subscriptions/listen: ${describeError(error)}`,
        { server: this.server.name }
      )
    }
  }

  /**
   * How the server learns a request was cancelled: `notifications/cancelled`, except over HTTP on
   * 2026-07-28, where the SDK closes the request's own stream instead (the revision's rule).
   */
  private cancelledBy(): string {
    return this.server.transport.kind === "http" && this.protocolEra === "modern"
      ? "its HTTP stream was closed"
      : "notifications/cancelled"
  }

  private cancelled(): string {
    return this.cancelledBy() === "notifications/cancelled"
      ? "the server was sent notifications/cancelled"
      : "its HTTP stream was closed, which tells the server"
  }

  private where(): string {
    const config = this.server.transport
    return config.kind === "http" ? ` at ${config.url}` : ` (${config.command})`
  }

  private death(): string {
    if (this.overflowed)
      return `sent a message over plugboard's limit of ${MAX_MESSAGE_BYTES / (1024 * 1024)} MiB, so the connection was closed (it reopens on the next call)`
    if (this.exit === undefined) return "closed the connection"
    if (this.exit.signal !== null) return `was killed by ${this.exit.signal}`
    return `exited with code ${this.exit.code}`
  }

  private connectError(error: unknown, timeoutMs: number): McpError {
    const server = this.server.name
    const fail = (reason: McpErrorReason, message: string) =>
      new McpError({ reason, server, message, cause: error })
    const code = (error as { code?: unknown } | null)?.code
    if (
      typeof code === "string" &&
      !(error instanceof SdkError) &&
      this.server.transport.kind === "stdio" &&
      this.exit === undefined
    ) {
      const why =
        code === "ENOENT"
          ? `command '${this.server.transport.command}' was not found`
          : code === "EACCES"
            ? `command '${this.server.transport.command}' is not executable`
            : describeError(error)
      return fail("unreachable", `MCP server '${server}' could not be started: ${why} (${code}).`)
    }
    if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
      return fail(
        "timeout",
        `MCP server '${server}'${this.where()} did not finish initializing within ${timeoutMs} ms.${this.stderr.text()}`
      )
    }
    if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) {
      return fail(
        "unreachable",
        `MCP server '${server}'${this.where()} ${this.death()} before it finished initializing.${this.stderr.text()}`
      )
    }
    return fail(
      "unreachable",
      `MCP server '${server}'${this.where()} could not be reached: ${errorText(error)}.${this.stderr.text()}`
    )
  }

  /** The error a failed request becomes; a transport failure also retires the connection. */
  private requestError(error: unknown, context: RequestContext): McpError {
    if (isMcpError(error)) return error
    const server = this.server.name
    const what = context.tool === undefined ? context.what : `the call of tool '${context.tool}'`
    const fail = (reason: McpErrorReason, message: string) =>
      new McpError({ reason, server, tool: context.tool, message, cause: error })
    if (context.signal?.aborted === true) {
      return fail("aborted", `MCP server '${server}': ${what} was aborted; ${this.cancelled()}.`)
    }
    if (this.closeReason !== undefined && this.closeReason !== "abandoned") {
      return fail(
        "closed",
        `MCP server '${server}': ${what} was cut short: the connection was closed (${closeText[this.closeReason]}).`
      )
    }
    const input = unanswerableInput(error)
    if (input !== undefined) {
      return fail(
        "protocol",
        `MCP server '${server}' needs ${input} to finish ${what}, and plugboard cannot give it: only a form question to the user (elicitation) is answered (docs/mounting.md#protocol-revisions).`
      )
    }
    if (error instanceof SdkError && !(error instanceof SdkHttpError)) {
      if (error.code === SdkErrorCode.RequestTimeout) {
        return fail(
          "timeout",
          `MCP server '${server}' did not answer ${what} within ${context.budgetMs} ms; the request was cancelled (${this.cancelledBy()}).`
        )
      }
      if (error.code === SdkErrorCode.ConnectionClosed) {
        return fail(
          "crashed",
          `MCP server '${server}'${this.where()} ${this.death()} during ${what}.${this.stderr.text()}`
        )
      }
      if (error.code === SdkErrorCode.InputRequiredRoundsExceeded) {
        return fail(
          "protocol",
          `MCP server '${server}' kept asking for input during ${what} (${bounded(error.message)}); the call was given up.`
        )
      }
      if (error.code !== SdkErrorCode.InvalidResult) {
        return fail("protocol", `MCP server '${server}': ${what} failed: ${bounded(describeError(error))}`)
      }
    }
    if (error instanceof ProtocolError || (error instanceof SdkError && !(error instanceof SdkHttpError))) {
      // The server's own words, bounded: some servers answer with a whole validation dump.
      return fail(
        "protocol",
        `MCP server '${server}' answered ${what} with an error: ${bounded(error.message)}`
      )
    }
    if (this.ended || this.exit !== undefined) {
      return fail(
        "crashed",
        `MCP server '${server}'${this.where()} ${this.death()} during ${what}.${this.stderr.text()}`
      )
    }
    if (error instanceof SdkHttpError) {
      // The session is gone, or the answer was no MCP answer at all: this session is of no more
      // use. Other statuses are the server's answer to this one request.
      if (sessionGone(error) || error.code === SdkErrorCode.ClientHttpUnexpectedContent) this.abandon()
      return fail("unreachable", `MCP server '${server}'${this.where()} refused ${what}: ${errorText(error)}`)
    }
    if (this.server.transport.kind === "http" && error instanceof TypeError) {
      this.abandon()
      return fail(
        "unreachable",
        `MCP server '${server}'${this.where()} could not be reached for ${what}: ${describeError(error)}`
      )
    }
    return fail("protocol", `MCP server '${server}': ${what} failed: ${describeError(error)}`)
  }

  private async request(
    send: (
      options: RequestOptions,
      meta: { readonly progressToken?: string }
    ) => Promise<Record<string, unknown>>,
    context: RequestContext
  ): Promise<Record<string, unknown>> {
    // A signal of our own per request, when the caller gives one: the SDK never removes its
    // listener from the signal it is given, and a caller's signal (a whole turn's) may outlive
    // thousands of requests. Without a caller's signal there is nothing to relay.
    const callerSignal = context.signal
    const onElicit = context.onElicit
    const controller =
      callerSignal === undefined && onElicit === undefined ? undefined : new AbortController()
    const onAbort = () => controller?.abort(callerSignal?.reason)
    callerSignal?.addEventListener("abort", onAbort, { once: true })
    // A request that can ask its user keeps its own timeout, paused while the user is asked: the
    // time a person takes to answer (up to WAIT_TIMEOUT_MS) is not the server's slowness.
    const clock =
      onElicit === undefined || controller === undefined
        ? undefined
        : pausedTimeout(controller, context.timeoutMs)
    // One question at a time per call: a server that asks again before its first question is
    // answered is declined (a user is never flooded with forms, nor the store with waits).
    let asking = false
    const asker =
      onElicit === undefined
        ? undefined
        : async (question: Wait.InputQuestion): Promise<Wait.InputAnswer> => {
            if (asking) {
              this.logger.debug(
                `MCP server '${this.server.name}': a second question during one call was declined (one at a time)`,
                { server: this.server.name }
              )
              return { _tag: "declined" }
            }
            asking = true
            clock?.pause()
            try {
              return await onElicit(question)
            } finally {
              asking = false
              clock?.resume()
            }
          }
    if (asker !== undefined) this.askers.add(asker)
    const onProgress = context.onProgress
    const progressToken = onProgress === undefined ? undefined : `plugboard-${++this.progressCounter}`
    if (progressToken !== undefined && onProgress !== undefined) {
      this.progress.set(progressToken, (p) => {
        try {
          onProgress(p)
        } catch (error) {
          this.logger.warn(`A progress listener failed: ${describeError(error)}`, {
            server: this.server.name
          })
        }
      })
    }
    try {
      if (context.signal?.aborted === true) throw context.signal.reason
      if (!this.isOpen) throw new SdkError(SdkErrorCode.ConnectionClosed, "Connection closed")
      return await send(
        {
          timeout: clock === undefined ? Math.max(1, context.timeoutMs) : MAX_TIMER_MS,
          ...(controller === undefined ? {} : { signal: controller.signal }),
          resetTimeoutOnProgress: false
        },
        progressToken === undefined ? {} : { progressToken }
      )
    } catch (error) {
      throw this.requestError(error, context)
    } finally {
      context.signal?.removeEventListener("abort", onAbort)
      if (progressToken !== undefined) this.progress.delete(progressToken)
      if (asker !== undefined) this.askers.delete(asker)
      clock?.stop()
    }
  }

  /**
   * Delivers progress notifications as they arrive, before the SDK sees them. The SDK runs
   * notification handlers a microtask late but settles responses at once, so the progress a
   * server sends just before its answer (the last step, "100%") reached a handler already
   * removed, and was lost; our own progress tokens, read off the wire, keep every one.
   */
  private interceptProgress(): void {
    const deliver = this.transport.onmessage
    this.transport.onmessage = ((message: unknown, extra?: unknown) => {
      if (isRecord(message) && message.method === "notifications/progress" && isRecord(message.params)) {
        const { progressToken, progress, total, message: text } = message.params
        const listener = typeof progressToken === "string" ? this.progress.get(progressToken) : undefined
        if (listener !== undefined) {
          if (typeof progress === "number") {
            listener({
              progress,
              ...(typeof total === "number" ? { total } : {}),
              ...(typeof text === "string" ? { message: text } : {})
            })
          }
          return
        }
      }
      ;(deliver as ((message: unknown, extra?: unknown) => void) | undefined)?.(message, extra)
    }) as Transport["onmessage"]
  }

  /** Calls a tool; resolves with the raw result (an object; mapped by `Results.toToolOutput`). */
  callTool(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    context: RequestContext
  ): Promise<Record<string, unknown>> {
    // Results are read with the loosest schema: `Results.toToolOutput` checks every field and
    // keeps what the SDK's strict schema would refuse whole (an unknown block type).
    return this.request(
      (options, meta) =>
        this.client.request(
          {
            method: "tools/call",
            params: {
              name: tool,
              arguments: { ...args },
              ...(meta.progressToken === undefined ? {} : { _meta: meta })
            }
          },
          anyResult,
          options
        ),
      context
    )
  }

  /** Lists every page of tools/list, keeps the list, and reports it to the pool. */
  async listTools(context: RequestContext, listChanged = false): Promise<ReadonlyArray<McpToolDescription>> {
    const deadline = Date.now() + context.timeoutMs
    const tools: Array<McpToolDescription> = []
    const seen = new Set<string>()
    const cursors = new Set<string>()
    let cursor: string | undefined
    let hints: ListHints = {}
    for (let page = 0; ; page++) {
      if (page >= MAX_TOOL_PAGES) {
        throw new McpError({
          reason: "protocol",
          server: this.server.name,
          message: `MCP server '${this.server.name}' answered tools/list with more than ${MAX_TOOL_PAGES} pages.`
        })
      }
      const params = cursor === undefined ? {} : { cursor }
      let result: Record<string, unknown>
      try {
        result = await this.request(
          (options) => this.client.request({ method: "tools/list", params }, anyResult, options),
          { ...context, timeoutMs: deadline - Date.now() }
        )
      } catch (error) {
        // A server with no tools (only prompts or resources) may not know the method at all.
        const cause = isMcpError(error) ? error.cause : undefined
        if (page === 0 && cause instanceof ProtocolError && cause.code === ProtocolErrorCode.MethodNotFound) {
          result = { tools: [] }
        } else {
          throw error
        }
      }
      if (page === 0) hints = readHints(result)
      if (!Array.isArray(result.tools)) {
        throw new McpError({
          reason: "protocol",
          server: this.server.name,
          message: `MCP server '${this.server.name}' answered tools/list without a list of tools.`
        })
      }
      for (const raw of result.tools) {
        const tool = readTool(raw)
        if (typeof tool === "string") {
          this.logger.warn(`MCP server '${this.server.name}' lists ${tool}; it is left out.`, {
            server: this.server.name
          })
        } else if (seen.has(tool.name)) {
          this.logger.warn(
            `MCP server '${this.server.name}' lists tool '${tool.name}' twice; the first is kept.`,
            {
              server: this.server.name
            }
          )
        } else {
          seen.add(tool.name)
          tools.push(tool)
        }
      }
      const next = result.nextCursor
      if (typeof next !== "string" || next === "") break
      if (cursors.has(next)) {
        throw new McpError({
          reason: "protocol",
          server: this.server.name,
          message: `MCP server '${this.server.name}' answered tools/list with a cursor it already gave (${next.slice(0, 100)}): its pages loop.`
        })
      }
      cursors.add(next)
      cursor = next
    }
    this.tools = tools
    this.listHints = hints
    this.events.toolsListed(this, tools, listChanged)
    return tools
  }

  /**
   * Relists tools after `tools/list_changed`. A notification arriving while a listing is under
   * way asks for one more listing after it, so a burst of changes costs at most two listings and
   * the last answer always reflects the last change.
   */
  refreshTools(): void {
    if (this.refreshing !== undefined) {
      this.refreshAgain = true
      return
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false
          if (!this.isOpen) return
          const budget = this.server.timeoutMs
          await this.listTools({ what: "tools/list", timeoutMs: budget, budgetMs: budget }, true)
        } while (this.refreshAgain)
      } catch (error) {
        if (this.isOpen) {
          this.logger.warn(
            `MCP server '${this.server.name}' changed its tools, and relisting them failed: ${describeError(error)}`,
            {
              server: this.server.name
            }
          )
        }
      } finally {
        this.refreshing = undefined
      }
    })()
  }

  /** The relisting `tools/list_changed` started, while it runs (it never rejects); else undefined. */
  get toolsRefreshing(): Promise<void> | undefined {
    return this.refreshing
  }

  /** Lists tools without anyone waiting; a failure is only logged. */
  listInBackground(): void {
    const budget = this.server.timeoutMs
    this.listTools({ what: "tools/list", timeoutMs: budget, budgetMs: budget }).catch((error) => {
      if (this.isOpen) {
        this.logger.debug(
          `MCP server '${this.server.name}': listing its tools failed: ${describeError(error)}`,
          {
            server: this.server.name
          }
        )
      }
    })
  }

  private onClosed(): void {
    if (this.ended) return
    this.ended = true
    // A connection that never opened is reported by open()'s rejection, and one closed on
    // purpose needs no report.
    if (!this.opened || this.closeReason !== undefined) return
    this.logger.warn(
      `MCP server '${this.server.name}'${this.where()} ${this.death()}.${this.stderr.text()}`,
      {
        server: this.server.name
      }
    )
    this.events.closed(this)
  }

  /** Gives up on a connection the server no longer serves; the pool opens a new one next time. */
  private abandon(): void {
    if (this.closeReason !== undefined) return
    this.closeReason = "abandoned"
    this.events.closed(this)
    void this.shutdown()
  }

  /**
   * Closes the connection: ends an HTTP session (bounded wait), or ends a stdio child's stdin,
   * then signals its process group until it is gone (`StdioTransport.ts`). Idempotent; never rejects.
   */
  close(reason: CloseReason): Promise<void> {
    if (this.closeReason === undefined) this.closeReason = reason
    return this.shutdown()
  }

  private shutdown(): Promise<void> {
    if (this.closing !== undefined) return this.closing
    this.closing = (async () => {
      const transport = this.transport
      // Given up on (never initialized, or no longer answering): no grace after its stdin ends.
      if ("kill" in transport && this.closeReason === "abandoned") void transport.kill()
      if (
        transport instanceof StreamableHTTPClientTransport &&
        !this.ended &&
        this.closeReason !== "abandoned"
      ) {
        let timer: NodeJS.Timeout | undefined
        await Promise.race([
          transport.terminateSession().catch(() => {}),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, 1_000)
            timer.unref()
          })
        ])
        clearTimeout(timer)
      }
      // A stdio transport's close resolves once the child and its process group are gone.
      await this.client.close().catch(() => {})
      this.ended = true
    })()
    this.events.stopping?.(this.closing)
    return this.closing
  }
}
