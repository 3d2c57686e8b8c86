/**
 * The gateway's 2026-07-28 side over HTTP (docs/mcp-gateway.md#revisions): one SDK
 * `createMcpHandler` per thread. The revision has no sessions: each request is served by an
 * instance of its own (`GatewaySession` in the `modern` era) on the thread the request names, or
 * on the endpoint's thread; what lasts between requests is the thread, and the handler's open
 * `subscriptions/listen` streams, which are that thread's listeners: a load on the thread, from
 * any era or connection, publishes `notifications/tools/list_changed` on them.
 *
 * Why one handler per thread and not one for the endpoint: a handler's streams all hear every
 * event it publishes, and a load on one thread must not be announced to the clients of another.
 * Handlers are kept for the threads requests name, at most `max` (the least recently used one is
 * closed: its streams end gracefully, and their clients listen again).
 */
import { createMcpHandler, type McpHttpHandler } from "@modelcontextprotocol/server"
import { describeError } from "../../McpError.js"
import { type GatewayRuntime, GatewaySession } from "./session.js"
import type { Thread } from "./thread.js"

/** Whom a load on a thread is told to: a session, or a thread's 2026-07-28 handler. */
export interface Listener {
  readonly notifyListChanged: () => void
}

/** What the handlers need from the gateway. */
export interface ModernContext {
  readonly runtime: GatewayRuntime
  /** Tells the thread's listeners of a load. */
  readonly onLoaded: (session: GatewaySession) => void
  /** Adds a listener to a thread (by `Thread.id`); the function returned removes it. */
  readonly listen: (threadId: string, listener: Listener) => () => void
}

interface Entry {
  readonly handler: McpHttpHandler
  readonly unlisten: () => void
}

/** The 2026-07-28 handlers of one `GatewayHttp`, by thread. */
export class ModernHandlers {
  /** By `Thread.id`, least recently used first. */
  private readonly byThread = new Map<string, Entry>()

  constructor(
    private readonly context: ModernContext,
    private readonly max: number,
    private readonly maxBodyBytes: number
  ) {}

  /** The handler of `thread`, made on first use. */
  handlerOf(thread: Thread): McpHttpHandler {
    const found = this.byThread.get(thread.id)
    if (found !== undefined) {
      this.byThread.delete(thread.id)
      this.byThread.set(thread.id, found)
      return found.handler
    }
    const { runtime, onLoaded } = this.context
    const handler = createMcpHandler(
      // An instance per request; the thread, not the instance, holds the loads.
      async ({ era }) =>
        (await GatewaySession.open(runtime, thread, thread.key ?? thread.id, era, onLoaded)).server,
      {
        // 2025-era requests never reach it: GatewayHttp serves them, with their sessions.
        legacy: "reject",
        maxRequestBodySize: this.maxBodyBytes,
        onerror: (error) => runtime.logger.debug(`MCP gateway (2026-07-28): ${describeError(error)}`)
      }
    )
    const unlisten = this.context.listen(thread.id, {
      notifyListChanged: () => handler.notify.toolsChanged()
    })
    this.byThread.set(thread.id, { handler, unlisten })
    if (this.byThread.size > this.max) {
      const [oldestId, oldest] = this.byThread.entries().next().value as [string, Entry]
      this.byThread.delete(oldestId)
      oldest.unlisten()
      void oldest.handler.close()
    }
    return handler
  }

  /** Closes every handler: their listen streams end with the revision's graceful answer. */
  async close(): Promise<void> {
    const entries = [...this.byThread.values()]
    this.byThread.clear()
    await Promise.allSettled(
      entries.map((e) => {
        e.unlisten()
        return e.handler.close()
      })
    )
  }
}
