/**
 * The MCP gateway: a plugboard catalog served as an MCP server that any MCP client can mount
 * (`plugboard mcp`, docs/mcp-gateway.md). The client is given the meta-tools and the always-tier
 * tools; `load_capability` appends a plugin's tools to that session's list and announces it;
 * `call_tool` reaches a loaded tool for clients that never read the list again.
 *
 * It serves MCP 2026-07-28 to the clients that speak it and the 2025 revisions to the others, on the
 * official SDK v2 (`@modelcontextprotocol/server`, docs/mcp-gateway.md#revisions): over stdio (or any
 * transport) the SDK's `serveStdio` picks the era from the client's first message; over HTTP,
 * `GatewayHttp` routes each request by its era.
 *
 * This module is an adapter: every rule is core's. What is listed is `CallTool.offer` for the
 * session's thread, what a call does is `ToolCall.plan` then `ToolCall.execute`, what the user
 * may use is their `Access.view`. The gateway only translates MCP requests into those calls, keeps
 * each session's thread (docs/mcp-gateway.md#threads), and passes results back as the tools gave
 * them. The host composes it: the catalog (and the MCP pool behind its upstream plugins), a
 * store for threads named by key, and the transport (stdio, or Streamable HTTP with `http`).
 */
import { PassThrough, type Readable, type Writable } from "node:stream"
import type { Transport } from "@modelcontextprotocol/server"
import { StdioServerTransport, serveStdio } from "@modelcontextprotocol/server/stdio"
import {
  Access,
  type Catalog,
  type Connect,
  type LoadedPluginsStore,
  type RuntimeLogger,
  silentLogger,
  type ToolCall
} from "@plugboard/core"
import { GatewayHttp, type HttpOptions, type Listener } from "./internal/gateway/http.js"
import { Questions } from "./internal/gateway/questions.js"
import { type GatewayRuntime, GatewaySession } from "./internal/gateway/session.js"
import { keptId, keptThread, noThread, sessionThread, type Thread } from "./internal/gateway/thread.js"
import { describeError } from "./McpError.js"

export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_SESSION_IDLE_MS,
  GatewayHttp,
  type HttpOptions as GatewayHttpOptions,
  THREAD_HEADER,
  THREAD_PARAMETER
} from "./internal/gateway/http.js"
export { GATEWAY_CACHE_HINT, NO_THREAD_NOTE } from "./internal/gateway/session.js"

/** Options of `makeGateway`. */
export interface GatewayOptions {
  /** The catalog, booted by the host (its MCP-derived plugins call through the host's pool). */
  readonly catalog: Catalog.Catalog
  /** Who the gateway's user is: every tool runs as this DID. */
  readonly did: string
  /** What the user's credentials grant (`Access`); none by default, so a plugin that `requires` anything is unavailable. */
  readonly grants?: Access.Grants | undefined
  /**
   * Where threads named by a key are kept (the SQLite store of `@plugboard/sqlite`, or a function
   * opening it on first use). Without one, a thread key is refused.
   */
  readonly threads?:
    | LoadedPluginsStore.LoadedPluginsStoreService
    | (() => Promise<LoadedPluginsStore.LoadedPluginsStoreService>)
    | undefined
  /** The plugins' shared state, read once at boot (`Catalog.readSharedState`). */
  readonly shared?: Readonly<Record<string, unknown>> | undefined
  readonly logger?: RuntimeLogger | undefined
  /** How the server introduces itself (default `plugboard`). */
  readonly serverInfo?: { readonly name: string; readonly version: string } | undefined
  /** Put before the Tier-1 block in the server's instructions. */
  readonly basePrompt?: string | undefined
  /** The UCAN invocations `forwardUcan` servers' tools need, asked for before each tool call. */
  readonly invocations?: (() => Promise<Readonly<Record<string, string>>>) | undefined
  /** Ranks a `list_capabilities` query (an embedder's ranking); lexical without one. */
  readonly ranking?: ((query: string) => Promise<ToolCall.Ranked>) | undefined
  /**
   * The plugins the user must connect an account for first (core's `Connect`: `list_capabilities`
   * lists them with the link, `load_capability` refuses them with it), read before each of those
   * two calls. Without it, none.
   */
  readonly pending?: (() => Promise<Connect.Pending>) | undefined
}

/** A session served over a transport of the host's (`Gateway.connect`). */
export interface GatewayConnection {
  /** Which kind of thread the session is on, and its key when it is a kept one. */
  readonly thread: { readonly kind: "session" | "kept"; readonly key?: string | undefined }
  /** Resolves when the transport closes (the client went away). */
  readonly closed: Promise<void>
  /** Resolves once no request of the session is under way (its answers have been sent). */
  readonly settled: () => Promise<void>
  readonly close: () => Promise<void>
}

/** A gateway: sessions over any transport, and a Streamable HTTP handler. */
export interface Gateway {
  /**
   * Serves one connection over `transport` (stdio: one per process), in the era its client opens
   * with (`initialize`: 2025; a 2026-07-28 request or `server/discover`: 2026-07-28). Its thread is
   * the connection's own, in memory, unless `thread` names one kept in the store (then every
   * connection naming it, in any process, shares its loads).
   */
  readonly connect: (
    transport: Transport,
    options?: { readonly thread?: string | undefined }
  ) => Promise<GatewayConnection>
  /**
   * Serves one connection over this process's stdio (or the given streams): `connect` with the
   * SDK's stdio transport, fed through a stream that does not end with `stdin`, so that the
   * answers to requests sent just before the client closed its end still go out:
   * `GatewayConnection`'s `closed` does not resolve at the end of the input; the host watches
   * `stdin` itself, waits for `settled`, then closes.
   */
  readonly stdio: (options?: {
    readonly stdin?: NodeJS.ReadableStream | undefined
    readonly stdout?: NodeJS.WritableStream | undefined
    readonly thread?: string | undefined
  }) => Promise<GatewayConnection>
  /** A Streamable HTTP handler at `/mcp`, for `http.createServer` (see `GatewayHttpOptions`). */
  readonly http: (options?: HttpOptions) => GatewayHttp
  /**
   * Serves `catalog` from the next request on, in every session (the host built it again: an
   * OAuth server's tool list read at its first connect, docs/oauth.md#the-tool-list), and tells
   * every client listening that its tool list changed (`notifications/tools/list_changed`). A
   * request under way keeps the catalog it started with. The host builds it by core's rules, so
   * the prefix a thread was offered does not change.
   */
  readonly replaceCatalog: (catalog: Catalog.Catalog) => void
  /** Closes every session and HTTP handler; idempotent. The host closes the catalog's pool. */
  readonly close: () => Promise<void>
}

/** Builds a gateway over a booted catalog. */
export const makeGateway = (options: GatewayOptions): Gateway => {
  const grants = options.grants ?? []
  const runtime: GatewayRuntime = {
    catalog: options.catalog,
    view: Access.view(options.catalog, grants),
    did: options.did,
    capabilities: grants,
    shared: options.shared ?? {},
    logger: options.logger ?? silentLogger,
    serverInfo: options.serverInfo ?? { name: "plugboard", version: "0.1.0" },
    basePrompt: options.basePrompt ?? "",
    invocations: options.invocations,
    ranking: options.ranking,
    pending: options.pending,
    questions: new Questions()
  }

  let store: Promise<LoadedPluginsStore.LoadedPluginsStoreService> | undefined
  const threads = options.threads
  const storeOf = (): Promise<LoadedPluginsStore.LoadedPluginsStoreService> => {
    if (threads === undefined) {
      return Promise.reject(
        new TypeError("This gateway keeps no threads by key: it was given no thread store.")
      )
    }
    store ??= typeof threads === "function" ? threads() : Promise.resolve(threads)
    return store
  }
  /** A kept thread whose store opens on first use (a stdio gateway naming no thread never opens it). */
  const kept = (key: string): Thread => {
    if (threads === undefined) {
      throw new TypeError(`Thread '${key}' cannot be kept: this gateway was given no thread store.`)
    }
    let thread: Thread | undefined
    const open = async () => {
      thread ??= keptThread(await storeOf(), key)
      return thread
    }
    return {
      kind: "kept",
      key,
      id: keptId(key),
      read: async () => (await open()).read(),
      add: async (names) => (await open()).add(names)
    }
  }

  // Who is on each thread (`Thread.id`): a load is announced to them all.
  const listeners = new Map<string, Set<Listener>>()
  const listen = (threadId: string, listener: Listener): (() => void) => {
    let set = listeners.get(threadId)
    if (set === undefined) {
      set = new Set()
      listeners.set(threadId, set)
    }
    set.add(listener)
    return () => {
      const current = listeners.get(threadId)
      if (current === undefined) return
      current.delete(listener)
      if (current.size === 0) listeners.delete(threadId)
    }
  }
  const onLoaded = (session: GatewaySession): void => {
    for (const listener of listeners.get(session.thread.id) ?? []) {
      // A 2025-era session told its own client on the call's stream already.
      if (listener === session && session.era === "legacy") continue
      listener.notifyListChanged()
    }
  }

  const handlers = new Set<GatewayHttp>()
  const connections = new Set<GatewayConnection>()
  let counter = 0

  const connect: Gateway["connect"] = async (transport, connectOptions = {}) => {
    const key = connectOptions.thread
    const thread = key === undefined ? sessionThread() : kept(key)
    // A thread that cannot be read (its store does not open) fails the connection, not a request.
    await thread.read()
    const id = `connection-${++counter}`
    let resolveClosed: () => void = () => {}
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve
    })
    // The SDK's entry owns the transport's callbacks; this view of it also sees it close.
    const wire: Transport = {
      start: () => transport.start(),
      send: (message, options) => transport.send(message, options),
      close: () => transport.close(),
      setProtocolVersion: (version) => transport.setProtocolVersion?.(version)
    }
    transport.onmessage = (message, extra) => wire.onmessage?.(message, extra)
    transport.onerror = (error) => wire.onerror?.(error)
    const sessions = new Set<GatewaySession>()
    let connection: GatewayConnection | undefined
    transport.onclose = () => {
      wire.onclose?.()
      if (connection !== undefined) connections.delete(connection)
      resolveClosed()
    }
    // One instance per era the client opens with (a `server/discover` probe that falls back to
    // `initialize` makes two, the first closed); each is on the connection's thread.
    const handle = serveStdio(
      async ({ era }) => {
        const session = await GatewaySession.open(runtime, thread, id, era, onLoaded)
        sessions.add(session)
        const unlisten = listen(thread.id, session)
        session.server.onclose = () => {
          sessions.delete(session)
          unlisten()
        }
        return session.server
      },
      {
        transport: wire,
        onerror: (error) => runtime.logger.debug(`MCP gateway connection: ${describeError(error)}`)
      }
    )
    connection = {
      thread: key === undefined ? { kind: "session" } : { kind: "kept", key },
      closed,
      settled: async () => {
        await Promise.all([...sessions].map((s) => s.settled()))
      },
      close: () => handle.close()
    }
    connections.add(connection)
    return connection
  }

  return {
    connect,
    replaceCatalog: (catalog) => {
      runtime.catalog = catalog
      runtime.view = Access.view(catalog, grants)
      for (const set of listeners.values()) for (const listener of set) listener.notifyListChanged()
    },
    stdio: (stdioOptions = {}) => {
      // The SDK's transport closes at the end of its input, dropping requests in flight; fed
      // through a stream that stays open, it leaves the end to the host (see `Gateway.stdio`).
      const input = new PassThrough()
      ;((stdioOptions.stdin ?? process.stdin) as Readable).pipe(input, { end: false })
      return connect(new StdioServerTransport(input, (stdioOptions.stdout ?? process.stdout) as Writable), {
        thread: stdioOptions.thread
      })
    },
    http: (httpOptions) => {
      const handler = new GatewayHttp(
        {
          runtime,
          thread: (key, kind) =>
            key !== undefined ? kept(key) : kind === "session" ? sessionThread() : noThread(),
          onLoaded,
          listen
        },
        httpOptions
      )
      handlers.add(handler)
      return handler
    },
    close: async () => {
      await Promise.allSettled([
        ...[...handlers].map((h) => h.close()),
        ...[...connections].map((c) => c.close())
      ])
      handlers.clear()
      connections.clear()
      runtime.questions.close()
    }
  }
}
