/**
 * The MCP connection pool: one connection per server (or per server and user, with
 * `connectionKey`), opened on first use, shared by concurrent uses, closed after an idle period,
 * and opened again by the next use after a crash. Calls are bounded by a timeout and an abort
 * signal (both cancel the request on the server with `notifications/cancelled`), and their
 * results are mapped onto core's `ToolOutput` (`Results.ts`): a tool's own failure (`isError`)
 * is an answer, every other failure an `McpError`.
 */
import { describe, type RuntimeLogger, silentLogger, type ToolOutput } from "@plugboard/core"
import { isSessionExpired, McpConnection } from "./Connection.js"
import { Listings } from "./Listings.js"
import { McpError } from "./McpError.js"
import { toToolOutput } from "./Results.js"
import type { McpDescription, McpRequestOptions, McpServerConfig, McpToolDescription } from "./Types.js"

export { McpError, type McpErrorReason } from "./McpError.js"

/** Options of an {@link McpPool}. */
export interface McpPoolOptions {
  /** A connection unused this long is closed (default 300,000 ms); the next use reopens it. */
  readonly idleMs?: number
  readonly logger?: RuntimeLogger
  /** How plugboard introduces itself in `initialize` (default `plugboard`). */
  readonly clientInfo?: { readonly name: string; readonly version: string }
  /**
   * The clock of the tool-list memory (`ttlMs`, `Listings.ts`), in epoch ms (default
   * `Date.now`); tests pass a controllable one.
   */
  readonly now?: (() => number) | undefined
}

/** What a connection says about its server, with the tools it just listed. */
const describeConnection = (
  connection: McpConnection,
  tools: ReadonlyArray<McpToolDescription>
): McpDescription => ({
  serverInfo: connection.serverInfo,
  ...(connection.instructions === undefined ? {} : { instructions: connection.instructions }),
  tools,
  ...(connection.protocolVersion === undefined ? {} : { protocolVersion: connection.protocolVersion }),
  ...(connection.listHints.ttlMs === undefined ? {} : { ttlMs: connection.listHints.ttlMs }),
  ...(connection.listHints.cacheScope === undefined ? {} : { cacheScope: connection.listHints.cacheScope })
})

/** The default idle period before a connection is closed. */
export const DEFAULT_IDLE_MS = 300_000

/** A pool's connection slot: the connection, or the promise of it every concurrent use awaits. */
interface Entry {
  readonly key: string
  readonly serverName: string
  readonly fingerprint: string
  connection: McpConnection | undefined
  connecting: Promise<McpConnection> | undefined
  /** The SDK-level open behind `connecting`, so `close()` can wait for a connection still opening. */
  opening: Promise<McpConnection> | undefined
  /** Uses under way (waiting for the connection or in a request). */
  users: number
  idle: NodeJS.Timeout | undefined
  /** When the last use ended (epoch ms): the idle timer, armed once, checks it when it fires. */
  lastUsed: number
  /** Replaced by a connection for a changed config: closed once its last use ends. */
  retired: boolean
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const checkTimeout = (value: unknown, where: string): number => {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`${where} must be a positive number of milliseconds, got ${String(value)}.`)
  }
  return value
}

const checkServer = (server: McpServerConfig): void => {
  if (!isRecord(server) || typeof server.name !== "string" || server.name === "") {
    throw new TypeError("An MCP server config needs a non-empty name.")
  }
  const transport: unknown = server.transport
  if (!isRecord(transport) || (transport.kind !== "stdio" && transport.kind !== "http")) {
    throw new TypeError(`MCP server '${server.name}' has no transport of kind 'stdio' or 'http'.`)
  }
  if (transport.kind === "stdio" && (typeof transport.command !== "string" || transport.command === "")) {
    throw new TypeError(`MCP server '${server.name}' has no command.`)
  }
  if (transport.kind === "http") {
    if (typeof transport.url !== "string" || !URL.canParse(transport.url)) {
      throw new TypeError(`MCP server '${server.name}' has no valid url (got ${String(transport.url)}).`)
    }
  }
  checkTimeout(server.timeoutMs, `MCP server '${server.name}' timeoutMs`)
}

// The same tools as before: a listing that changed nothing keeps the old array, so readers that
// compare by identity (the plugins' later tools) rebuild nothing.
const sameTools = (a: ReadonlyArray<McpToolDescription>, b: ReadonlyArray<McpToolDescription>): boolean =>
  a.length === b.length && JSON.stringify(a) === JSON.stringify(b)

/**
 * Connections to MCP servers, shared by every user of the host. Use one per host; `close()` it
 * at shutdown (it also ends every stdio child).
 */
export class McpPool {
  private readonly idleMs: number
  private readonly logger: RuntimeLogger
  private readonly clientInfo: { readonly name: string; readonly version: string }
  private readonly entries = new Map<string, Entry>()
  /** Entries replaced while in use, closed when their last use ends (or by `close()`). */
  private readonly retired = new Set<Entry>()
  private readonly tools = new Map<string, ReadonlyArray<McpToolDescription>>()
  private readonly listeners = new Set<
    (serverName: string, tools: ReadonlyArray<McpToolDescription>) => void
  >()
  private readonly fingerprints = new WeakMap<McpServerConfig, string>()
  private readonly listings: Listings
  private closing: Promise<void> | undefined
  /** Connections closing (a failed open's included): `close()` waits until each is closed. */
  private readonly stopping = new Set<Promise<void>>()

  constructor(options: McpPoolOptions = {}) {
    this.idleMs = options.idleMs === undefined ? DEFAULT_IDLE_MS : checkTimeout(options.idleMs, "idleMs")
    this.logger = options.logger ?? silentLogger
    this.clientInfo = options.clientInfo ?? { name: "plugboard", version: "0.1.0" }
    this.listings = new Listings(options.now ?? Date.now)
  }

  /**
   * Connects (or reuses the open connection) and returns the server's `initialize` (or
   * `server/discover`) answer and every page of `tools/list`, all within
   * `options.timeoutMs ?? server.timeoutMs`. A list the server gave a `ttlMs` is served again
   * without a request while it holds (`Listings.ts`).
   */
  async describe(server: McpServerConfig, options: McpRequestOptions = {}): Promise<McpDescription> {
    checkServer(server)
    const budget = checkTimeout(options.timeoutMs ?? server.timeoutMs, "timeoutMs")
    // A closed pool serves nothing, kept lists included (`acquire` says it is closed).
    const kept =
      this.closing === undefined
        ? this.listings.get(server.name, options.connectionKey, this.fingerprint(server))
        : undefined
    if (kept !== undefined) return kept
    const deadline = Date.now() + budget
    for (let attempt = 0; ; attempt++) {
      const { entry, connection } = await this.acquire(server, options, deadline, budget, undefined)
      try {
        const tools = await connection.listTools({
          what: "tools/list",
          timeoutMs: deadline - Date.now(),
          budgetMs: budget,
          signal: options.signal
        })
        return describeConnection(connection, tools)
      } catch (error) {
        if (attempt === 0 && isSessionExpired(error)) continue
        throw error
      } finally {
        this.release(entry)
      }
    }
  }

  /**
   * Calls a tool by the server's own name, within `options.timeoutMs ?? server.timeoutMs`
   * (connecting included). Opens the connection on first use; after a crash or a close the next
   * call reconnects. The tool's own failure (`isError`) resolves as a `ToolOutput` with
   * `isError`; everything else rejects with an `McpError`.
   */
  async call(
    server: McpServerConfig,
    tool: string,
    args: Readonly<Record<string, unknown>>,
    options: McpRequestOptions = {}
  ): Promise<ToolOutput.ToolOutput> {
    checkServer(server)
    if (typeof tool !== "string" || tool === "") {
      throw new TypeError(`A call to MCP server '${server.name}' needs a tool name, got ${String(tool)}.`)
    }
    if (!isRecord(args)) {
      throw new TypeError(
        `The arguments of tool '${tool}' of MCP server '${server.name}' must be an object, got ${Array.isArray(args) ? "an array" : String(args)}.`
      )
    }
    const budget = checkTimeout(options.timeoutMs ?? server.timeoutMs, "timeoutMs")
    const deadline = Date.now() + budget
    for (let attempt = 0; ; attempt++) {
      const { entry, connection } = await this.acquire(server, options, deadline, budget, tool)
      try {
        const result = await connection.callTool(tool, args, {
          what: "tools/call",
          tool,
          timeoutMs: deadline - Date.now(),
          budgetMs: budget,
          signal: options.signal,
          onProgress: options.onProgress,
          onElicit: options.onElicit
        })
        // A kept list whose ttl ran out is read again, without delaying this answer.
        if (this.listings.takeExpired(server.name, options.connectionKey)) connection.listInBackground()
        return toToolOutput(result)
      } catch (error) {
        // A server that restarted no longer knows our HTTP session; it never saw the request,
        // so sending it once more, on a new session, is safe.
        if (attempt === 0 && isSessionExpired(error)) continue
        throw error
      } finally {
        this.release(entry)
      }
    }
  }

  /**
   * The protocol revision the open connection to this server (and connection key) speaks, e.g.
   * `2026-07-28` or `2025-11-25`; undefined while none is open.
   */
  protocolVersion(serverName: string, connectionKey?: string): string | undefined {
    const connection = this.entries.get(`${serverName}\u0000${connectionKey ?? ""}`)?.connection
    return connection?.isOpen === true ? connection.protocolVersion : undefined
  }

  /** The tools a connection to this server last listed; undefined if none was listed in this process. */
  currentTools(serverName: string): ReadonlyArray<McpToolDescription> | undefined {
    return this.tools.get(serverName)
  }

  /**
   * Resolves once the tool lists that servers announced as changed (`tools/list_changed`) have
   * been read again, or after `maxWaitMs`, whichever comes first; undefined when no relisting is
   * under way, so that a caller with nothing to wait for does not wait a tick. A request that
   * begins just after a server changed its tools (the turn that called the tool adding one has
   * ended) then sees the new list, rather than the one before the change.
   */
  toolsSettled(maxWaitMs: number): Promise<void> | undefined {
    const pending: Array<Promise<void>> = []
    for (const entry of this.entries.values()) {
      const refreshing = entry.connection?.toolsRefreshing
      if (refreshing !== undefined) pending.push(refreshing)
    }
    if (pending.length === 0) return undefined
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, maxWaitMs)
      timer.unref()
    })
    return Promise.race([Promise.all(pending).then(() => {}), bound]).finally(() => clearTimeout(timer))
  }

  /** Listens to tool lists refreshed after `tools/list_changed` (or changed across a reconnect). Returns the unsubscribe function. */
  onToolsChanged(
    listener: (serverName: string, tools: ReadonlyArray<McpToolDescription>) => void
  ): () => void {
    if (typeof listener !== "function") throw new TypeError("onToolsChanged needs a function.")
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  /**
   * Closes every connection and resolves once each is closed: every stdio child, and every
   * process of its group, gone (docs/mounting.md, Lifecycle); idempotent. Later uses reject with `closed`.
   */
  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing
    const entries = [...this.entries.values(), ...this.retired]
    this.entries.clear()
    this.retired.clear()
    this.closing = Promise.allSettled(
      entries.map(async (entry) => {
        clearTimeout(entry.idle)
        const opening = entry.opening
        await entry.connection?.close("pool")
        if (opening !== undefined)
          await opening.then(
            (c) => c.close("pool"),
            () => {}
          )
      })
    )
      // Then every connection still closing, a server that never answered `initialize` among
      // them: close() resolves only when no process it started runs.
      .then(() => Promise.allSettled([...this.stopping]))
      .then(() => {})
    return this.closing
  }

  private track(done: Promise<void>): void {
    this.stopping.add(done)
    void done.finally(() => this.stopping.delete(done))
  }

  private fingerprint(server: McpServerConfig): string {
    let fingerprint = this.fingerprints.get(server)
    if (fingerprint === undefined) {
      fingerprint = JSON.stringify([server.transport, server.timeoutMs])
      this.fingerprints.set(server, fingerprint)
    }
    return fingerprint
  }

  /** Takes a use of the server's connection, opening it if needed, within the caller's bounds. */
  private async acquire(
    server: McpServerConfig,
    options: McpRequestOptions,
    deadline: number,
    budget: number,
    /** The tool a call is for; undefined for describe. */
    tool: string | undefined
  ): Promise<{ entry: Entry; connection: McpConnection }> {
    const doing = tool === undefined ? "tools/list" : `the call of tool '${tool}'`
    if (this.closing !== undefined) {
      throw new McpError({
        reason: "closed",
        server: server.name,
        tool,
        message: `The MCP pool is closed: ${doing} of MCP server '${server.name}' was not made.`
      })
    }
    if (options.signal?.aborted === true) {
      throw new McpError({
        reason: "aborted",
        server: server.name,
        tool,
        message: `MCP server '${server.name}': ${doing} was aborted before it was sent.`,
        cause: options.signal.reason
      })
    }
    // Keyed under the server's name too, so no connection key can reach another server's connection.
    const key = `${server.name}\u0000${options.connectionKey ?? ""}`
    const fingerprint = this.fingerprint(server)
    let entry = this.entries.get(key)
    if (entry !== undefined && entry.fingerprint !== fingerprint) {
      this.retire(entry)
      entry = undefined
    }
    if (entry === undefined) {
      entry = {
        key,
        serverName: server.name,
        fingerprint,
        connection: undefined,
        connecting: undefined,
        opening: undefined,
        users: 0,
        idle: undefined,
        lastUsed: 0,
        retired: false
      }
      this.entries.set(key, entry)
    }
    // The idle timer stays armed: when it fires during a use, or before the idle period since
    // the last use has passed, it lets the connection be (see `arm`).
    entry.users++
    try {
      const connection = await this.connectionOf(entry, server, options, deadline, budget, tool, doing)
      connection.setHeaders(options.headers)
      return { entry, connection }
    } catch (error) {
      this.release(entry)
      throw error
    }
  }

  private connectionOf(
    entry: Entry,
    server: McpServerConfig,
    options: McpRequestOptions,
    deadline: number,
    budget: number,
    tool: string | undefined,
    doing: string
  ): Promise<McpConnection> {
    if (entry.connection?.isOpen === true) return Promise.resolve(entry.connection)
    entry.connection = undefined
    if (entry.connecting === undefined) {
      // One connect for every concurrent use, bounded by the server's own timeout rather than
      // by the first caller's: a caller that gives up does not take the others down with it.
      const opening = McpConnection.open(
        {
          server,
          clientInfo: this.clientInfo,
          logger: this.logger,
          headers: options.headers,
          events: {
            closed: (connection) => this.onClosed(entry, connection),
            stopping: (done) => this.track(done),
            toolsListed: (connection, tools, listChanged) => {
              this.listings.put(
                server.name,
                options.connectionKey,
                entry.fingerprint,
                describeConnection(connection, tools),
                connection.listHints
              )
              this.onToolsListed(server.name, tools, listChanged)
            }
          }
        },
        server.timeoutMs
      )
      const connecting = opening.then(
        (connection) => {
          entry.connecting = undefined
          entry.opening = undefined
          if (this.closing !== undefined) {
            void connection.close("pool")
            throw new McpError({
              reason: "closed",
              server: server.name,
              message: `The MCP pool is closed: the connection to MCP server '${server.name}' was closed as it opened.`
            })
          }
          entry.connection = connection
          // A call's first connection lists tools too (describe lists them anyway), so
          // currentTools knows them and a reconnect notices a server that changed meanwhile.
          if (tool !== undefined) connection.listInBackground()
          // A retired entry's waiting uses still get it; the last one's release closes it.
          if (entry.users === 0) {
            if (entry.retired) {
              this.retired.delete(entry)
              entry.connection = undefined
              void connection.close("replaced")
            } else {
              this.arm(entry)
            }
          }
          return connection
        },
        (error: unknown) => {
          entry.connecting = undefined
          entry.opening = undefined
          if (entry.users === 0 && this.entries.get(entry.key) === entry) this.entries.delete(entry.key)
          throw error
        }
      )
      // Every caller may have given up by the time it settles; its failure is theirs, not unhandled.
      connecting.catch(() => {})
      entry.connecting = connecting
      entry.opening = opening
    }
    return this.within(entry.connecting, server, options.signal, deadline, budget, tool, doing)
  }

  /** Waits for a connection, no longer than the caller's deadline or signal allow. */
  private within(
    connecting: Promise<McpConnection>,
    server: McpServerConfig,
    signal: AbortSignal | undefined,
    deadline: number,
    budget: number,
    tool: string | undefined,
    doing: string
  ): Promise<McpConnection> {
    return new Promise<McpConnection>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          done()
          reject(
            new McpError({
              reason: "timeout",
              server: server.name,
              tool,
              message: `MCP server '${server.name}' did not connect within ${budget} ms; ${doing} was not made.`
            })
          )
        },
        Math.max(0, deadline - Date.now())
      )
      const onAbort = () => {
        done()
        reject(
          new McpError({
            reason: "aborted",
            server: server.name,
            tool,
            message: `MCP server '${server.name}': ${doing} was aborted while connecting; nothing was sent.`,
            cause: signal?.reason
          })
        )
      }
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener("abort", onAbort)
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      connecting.then(
        (connection) => {
          done()
          resolve(connection)
        },
        (error: unknown) => {
          done()
          reject(error)
        }
      )
    })
  }

  private release(entry: Entry): void {
    entry.users--
    if (entry.users > 0) return
    if (entry.retired) {
      this.retired.delete(entry)
      void entry.connection?.close("replaced")
      entry.connection = undefined
    } else if (entry.connection?.isOpen === true) {
      entry.lastUsed = Date.now()
      if (entry.idle === undefined) this.arm(entry)
    }
  }

  /**
   * Starts the idle timer; unref'd, so an idle connection never keeps the process alive. One
   * timer per idle period, not one per use: a busy connection's calls (thousands a minute) only
   * stamp `lastUsed`, and the timer, when it fires early, waits out the rest of the period.
   */
  private arm(entry: Entry, delayMs: number = this.idleMs): void {
    clearTimeout(entry.idle)
    entry.idle = setTimeout(() => {
      entry.idle = undefined
      // In use: the use's release arms the timer again.
      if (entry.users > 0 || this.entries.get(entry.key) !== entry) return
      const left = entry.lastUsed + this.idleMs - Date.now()
      if (left > 0) {
        this.arm(entry, left)
        return
      }
      this.entries.delete(entry.key)
      const connection = entry.connection
      entry.connection = undefined
      if (connection !== undefined) {
        this.logger.debug(`MCP server '${entry.serverName}': idle connection closed.`, {
          server: entry.serverName
        })
        void connection.close("idle")
      }
    }, delayMs)
    entry.idle.unref()
  }

  /** A config changed under the same key: the old connection serves its last uses, then closes. */
  private retire(entry: Entry): void {
    entry.retired = true
    clearTimeout(entry.idle)
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key)
    if (entry.users === 0) {
      void entry.connection?.close("replaced")
      entry.connection = undefined
    } else {
      this.retired.add(entry)
    }
  }

  private onClosed(entry: Entry, connection: McpConnection): void {
    if (entry.connection !== connection) return
    entry.connection = undefined
    clearTimeout(entry.idle)
    if (entry.users === 0 && this.entries.get(entry.key) === entry) this.entries.delete(entry.key)
  }

  private onToolsListed(
    serverName: string,
    tools: ReadonlyArray<McpToolDescription>,
    listChanged: boolean
  ): void {
    const previous = this.tools.get(serverName)
    const changed = previous === undefined || !sameTools(previous, tools)
    if (changed) this.tools.set(serverName, tools)
    // The first listing is what the server is; only a change, or the server saying so, is news.
    if (!listChanged && (previous === undefined || !changed)) return
    const current = this.tools.get(serverName)!
    for (const listener of this.listeners) {
      try {
        listener(serverName, current)
      } catch (error) {
        this.logger.warn(`An onToolsChanged listener failed: ${describe(error)}`, {
          server: serverName
        })
      }
    }
  }
}
