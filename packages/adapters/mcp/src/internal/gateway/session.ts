/**
 * One MCP session of the gateway: a low-level SDK `Server` whose `tools/list` and `tools/call`
 * handlers ask core (docs/mcp-gateway.md). The list is `CallTool.offer` of the session's thread, so
 * it only grows and keeps core's order; every call goes through `ToolCall.plan` (the gate, the
 * meta-tools, `call_tool`) and `ToolCall.execute`; a load is kept in the thread before the client is
 * told (`notifications/tools/list_changed`, sent on the call's own stream so that an HTTP client
 * reads it before the answer, and a list it asks for then already has the tools).
 *
 * Why the low-level `Server` and not `McpServer.registerTool`: the list is computed per session and
 * per request from core's offer, in core's order; registered tools would be one list for the whole
 * server, in registration order.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { Protocol, type RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError as SdkMcpError,
  type ServerNotification,
  type ServerRequest
} from "@modelcontextprotocol/sdk/types.js"
import {
  type Access,
  CallTool,
  type Catalog,
  type Connect,
  GraphState,
  type LoadedPlugins,
  MetaTools,
  makeRuntimeContext,
  type Offer,
  type RuntimeContext,
  type RuntimeLogger,
  SystemPrompt,
  ToolCall,
  type ToolProgress
} from "@plugboard/core"
import { describeError } from "../../McpError.js"
import { answerResult, type CallResult, executedResult, listedTool } from "./answers.js"
import type { Thread } from "./thread.js"

/** What every session of a gateway shares. */
export interface GatewayRuntime {
  readonly catalog: Catalog.Catalog
  /** The gateway user's view of the catalog (`Access.view` of their grants). */
  readonly view: Access.View
  readonly did: string
  readonly capabilities: ReadonlyArray<Access.Capability>
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly serverInfo: { readonly name: string; readonly version: string }
  /** Put before the Tier-1 block in the server's instructions. */
  readonly basePrompt: string
  /** The UCAN invocations a `forwardUcan` server's tools need (`mcpUcanContext.invocations`). */
  readonly invocations?: (() => Promise<Readonly<Record<string, string>>>) | undefined
  /** A `list_capabilities` query's ranking computed beforehand (an embedder's); lexical without. */
  readonly ranking?:
    | ((query: string) => Promise<ReadonlyArray<{ readonly name: string; readonly score: number }>>)
    | undefined
  /** The plugins the user must connect an account for first (core's `Connect`), read before each call. */
  readonly pending?: (() => Promise<Connect.Pending>) | undefined
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** What a request that keeps no thread is told when it loads (docs/mcp-gateway.md#threads). */
export const NO_THREAD_NOTE =
  "This request opened no MCP session and named no thread: what it loaded is forgotten with this answer, " +
  "and the next request starts with nothing loaded. To keep loads, initialize a session (its Mcp-Session-Id " +
  "keeps them), or name a thread: the query parameter ?thread=<id> on the URL or the header X-Plugboard-Thread: <id>."

/** One session: its server, its thread, and the offer it last computed. */
export class GatewaySession {
  readonly server: Server
  private cachedFor: LoadedPlugins.LoadedPlugins | undefined
  private cachedOffer: ReadonlyArray<Offer.OfferedTool> = []

  private constructor(
    private readonly runtime: GatewayRuntime,
    readonly thread: Thread,
    /** Names the session in tool contexts (the thread key for a kept thread). */
    readonly id: string,
    instructions: string,
    /** Told after a load is kept, so that other sessions of the same thread can be told too. */
    private readonly onLoaded: (session: GatewaySession) => void
  ) {
    this.server = new Server(runtime.serverInfo, {
      capabilities: { tools: { listChanged: true } },
      instructions
    })
    this.server.onerror = (error) => runtime.logger.debug(`MCP gateway session: ${describeError(error)}`)
    this.server.setRequestHandler(ListToolsRequestSchema, () =>
      this.counted(async () => ({ tools: this.offer(await this.read()).map(listedTool) }))
    )
    // Registered as `Protocol` registers any handler (the request checked against its schema),
    // not through `Server`'s override for tools/call, which parses the request a second time and
    // the result once more on every call: the result is built here from checked shapes
    // (answers.ts), and the client checks it anyway.
    Protocol.prototype.setRequestHandler.call(this.server, CallToolRequestSchema, (request, extra) =>
      this.counted(() => this.call(request.params.name, request.params.arguments ?? {}, extra))
    )
  }

  private inflight = 0
  private idle: Array<() => void> = []

  /** Runs a request's handler, counted, so that `settled` knows when none is under way. */
  private async counted<A>(handler: () => Promise<A>): Promise<A> {
    this.inflight++
    try {
      return await handler()
    } finally {
      this.inflight--
      if (this.inflight === 0) for (const resolve of this.idle.splice(0)) resolve()
    }
  }

  /**
   * Resolves once no request is under way: a stdio client that closes its input right after a
   * request still gets its answer before the session closes.
   */
  settled(): Promise<void> {
    return this.inflight === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve))
  }

  /**
   * Opens a session on `thread`: its instructions are core's system prompt for what the thread
   * has loaded (the Tier-1 block, then the plugins' sections), since an MCP client has no other.
   */
  static async open(
    runtime: GatewayRuntime,
    thread: Thread,
    id: string,
    onLoaded: (session: GatewaySession) => void = () => {}
  ): Promise<GatewaySession> {
    const loaded = await thread.read()
    const instructions = SystemPrompt.compose({
      basePrompt: runtime.basePrompt,
      catalog: runtime.catalog,
      loadedPlugins: loaded,
      view: runtime.view
    })
    return new GatewaySession(runtime, thread, id, instructions, onLoaded)
  }

  /** Serves the session over `transport` (stdio, or one HTTP session's transport). */
  connect(transport: Transport): Promise<void> {
    return this.server.connect(transport)
  }

  /** Tells the client the list changed (a load made by another session of the same thread). */
  notifyListChanged(): void {
    this.server.sendToolListChanged().catch(() => {})
  }

  close(): Promise<void> {
    return this.server.close()
  }

  private async read(): Promise<LoadedPlugins.LoadedPlugins> {
    try {
      return await this.thread.read()
    } catch (error) {
      throw new SdkMcpError(
        ErrorCode.InternalError,
        `The thread's loaded plugins cannot be read: ${describeError(error)}`
      )
    }
  }

  /** The session's list for `loaded`, computed again only when the thread changed. */
  private offer(loaded: LoadedPlugins.LoadedPlugins): ReadonlyArray<Offer.OfferedTool> {
    if (loaded !== this.cachedFor) {
      this.cachedOffer = CallTool.offer(this.runtime.catalog, loaded, this.runtime.view)
      this.cachedFor = loaded
    }
    return this.cachedOffer
  }

  private async call(name: string, args: unknown, extra: Extra): Promise<CallResult> {
    const { catalog, view } = this.runtime
    const loaded = await this.read()
    // Only the meta-tools read it: a loaded tool's call to a server not connected fails on its own.
    const pending =
      name === MetaTools.LIST_CAPABILITIES || name === MetaTools.LOAD_CAPABILITY
        ? await this.runtime.pending?.()
        : undefined
    const step: ToolCall.Step = {
      catalog,
      offered: this.offer(loaded),
      loaded,
      view,
      ...(pending === undefined ? {} : { pending })
    }
    const call: ToolCall.Call = { name, args }
    if (name === MetaTools.LOAD_CAPABILITY) return this.load(step, call, extra)
    const decided = ToolCall.plan(step, call, { ranked: await this.rank(name, args) })
    if (decided._tag === "Answer") return answerResult(decided.answer)
    // The gateway offers no run_code, so the gate never plans a program here.
    if (decided._tag === "Program") return answerResult(ToolCall.noHandler(name))
    const target = ToolCall.catalogTool(catalog, decided.tool)
    if (target === undefined) return answerResult(ToolCall.noHandler(decided.tool.name))
    let ended = false
    const context = await this.context(loaded, decided.tool.name, extra, () => ended)
    try {
      // No count of invalid calls: the client's agent, not the gateway, has turns.
      const executed = await ToolCall.execute(
        decided.tool.name,
        target.tool.input,
        target.tool.handler,
        decided.args,
        undefined,
        context
      )
      return executedResult(executed)
    } finally {
      ended = true
    }
  }

  /** `load_capability`: the load is kept in the thread, then announced, then answered. */
  private async load(step: ToolCall.Step, call: ToolCall.Call, extra: Extra): Promise<CallResult> {
    const loads = ToolCall.applyLoads(step, [call])
    if (loads.newlyLoaded.length > 0) {
      try {
        await this.thread.add(loads.newlyLoaded)
      } catch (error) {
        return answerResult({
          content: `Nothing was loaded: the thread's loads could not be kept (${describeError(error)}). Try again.`,
          outcome: "meta_error"
        })
      }
      if (this.thread.kind !== "none") {
        await extra.sendNotification({ method: "notifications/tools/list_changed" }).catch(() => {})
        this.onLoaded(this)
      }
    }
    const decided = ToolCall.plan(step, call, { load: loads.byCall.get(0), loadedAfter: loads.loaded })
    if (decided._tag !== "Answer") return answerResult(ToolCall.noHandler(MetaTools.LOAD_CAPABILITY))
    const note = this.thread.kind === "none" && loads.newlyLoaded.length > 0 ? [NO_THREAD_NOTE] : []
    return answerResult(decided.answer, note)
  }

  private async rank(name: string, args: unknown): Promise<ToolCall.Ranked | undefined> {
    const ranking = this.runtime.ranking
    const query = (args as { query?: unknown } | undefined)?.query
    if (ranking === undefined || name !== MetaTools.LIST_CAPABILITIES || typeof query !== "string")
      return undefined
    if (query.trim() === "") return undefined
    try {
      return await ranking(query)
    } catch (error) {
      // A failed ranking must not fail the listing: it ranks lexically instead.
      this.runtime.logger.warn("list_capabilities: the ranking failed; ranking lexically", {
        error: describeError(error)
      })
      return undefined
    }
  }

  private stateFor: LoadedPlugins.LoadedPlugins | undefined
  private state: GraphState.GraphState | undefined

  /** The state a handler reads, built again only when the thread's loads changed. */
  private stateOf(loaded: LoadedPlugins.LoadedPlugins): GraphState.GraphState {
    if (this.state === undefined || this.stateFor !== loaded) {
      // The state's client names a QiForge front end; an MCP client is none of them.
      this.state = {
        ...GraphState.initial({ did: this.runtime.did, client: "portal" }),
        loadedPlugins: loaded
      }
      this.stateFor = loaded
    }
    return this.state
  }

  /**
   * The context a handler runs with: the gateway user, the thread's loads, the client's
   * cancellation as the abort signal, and, when the client sent a progress token, the tool's
   * progress (an upstream server's notifications, relayed by the pool) sent to it until the call
   * ends. Without a token there is no `toolCall.progress`, so an upstream call asks for none.
   */
  private async context(
    loaded: LoadedPlugins.LoadedPlugins,
    tool: string,
    extra: Extra,
    ended: () => boolean
  ): Promise<RuntimeContext> {
    const rt = this.runtime
    const invocations = rt.invocations === undefined ? undefined : await rt.invocations()
    const state = this.stateOf(loaded)
    const base = makeRuntimeContext({
      state: invocations === undefined ? state : { ...state, mcpUcanContext: { invocations } },
      sessionId: this.thread.key ?? this.id,
      did: rt.did,
      capabilities: rt.capabilities,
      shared: rt.shared,
      logger: rt.logger,
      signal: extra.signal
    })
    const token = extra._meta?.progressToken
    if (token === undefined) return base
    return {
      ...base,
      toolCall: {
        id: String(extra.requestId),
        name: tool,
        progress: (p: ToolProgress) => {
          if (ended()) return
          extra
            .sendNotification({
              method: "notifications/progress",
              params: {
                progressToken: token,
                progress: p.progress,
                ...(p.total === undefined ? {} : { total: p.total }),
                ...(p.message === undefined ? {} : { message: p.message })
              }
            })
            .catch(() => {})
        }
      }
    }
  }
}
