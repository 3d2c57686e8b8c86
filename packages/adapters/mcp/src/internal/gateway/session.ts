/**
 * One MCP server instance of the gateway: a low-level SDK (v2) `Server` whose `tools/list` and
 * `tools/call` handlers ask core (docs/mcp-gateway.md). The list is `CallTool.offer` of the
 * instance's thread, so it only grows and keeps core's order; every call goes through
 * `ToolCall.plan` (the gate, the meta-tools, `call_tool`) and `ToolCall.execute`; a load is kept in
 * the thread before anyone is told, so a list asked for then already has the tools.
 *
 * An instance serves one era (docs/mcp-gateway.md#revisions). A 2025-era instance is a session
 * (stdio, or an HTTP `Mcp-Session-Id`): it tells its own client of a load with
 * `notifications/tools/list_changed` on the call's own stream (over HTTP the client reads it before
 * the answer). A 2026-07-28 instance has no session to tell: the revision carries change
 * notifications only on `subscriptions/listen` streams, which the serving entry (stdio's, or the
 * HTTP handler of the thread) holds, so the load is announced to the thread's listeners
 * (`onLoaded`) and the serving entry writes it on those streams.
 *
 * Why the low-level `Server` and not `McpServer.registerTool`: the list is computed per request from
 * core's offer, in core's order; registered tools would be one list for the whole server, in
 * registration order.
 */
import {
  type CallToolResult,
  type InputRequiredResult,
  type ListToolsResult,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext
} from "@modelcontextprotocol/server"
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
  type ToolCallInfo,
  type ToolProgress
} from "@plugboard/core"
import { describeError } from "../../McpError.js"
import { answerResult, type CallResult, executedResult, listedTool } from "./answers.js"
import { clientElicits, QUESTION_TTL_MS, type Questions } from "./questions.js"
import type { Thread } from "./thread.js"

/** Which revisions an instance serves: the 2025 family (`initialize`), or 2026-07-28 and later. */
export type Era = "legacy" | "modern"

/**
 * The cache hint of the gateway's `tools/list` and `server/discover` answers on 2026-07-28
 * (`ttlMs`, `cacheScope`; docs/mcp-gateway.md#caching): stale at once, since a load can change the
 * list the next moment, and private, since the list is the thread's and the user's.
 */
export const GATEWAY_CACHE_HINT = { ttlMs: 0, cacheScope: "private" } as const
/** What every session of a gateway shares. */
export interface GatewayRuntime {
  /**
   * The catalog each request starts with; the host may replace it (`Gateway.replaceCatalog`), with
   * `view`, between requests: a request keeps the pair it started with.
   */
  catalog: Catalog.Catalog
  /** The gateway user's view of the catalog (`Access.view` of their grants). */
  view: Access.View
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
  /** The calls waiting for their client's answer to a question, by `requestState`. */
  readonly questions: Questions
}

type Extra = ServerContext

/** What a runtime computes once per loaded set, whatever instance asks (one per request on 2026-07-28). */
interface Derived {
  readonly offers: WeakMap<LoadedPlugins.LoadedPlugins, ReadonlyArray<Offer.OfferedTool>>
  readonly instructions: WeakMap<LoadedPlugins.LoadedPlugins, string>
}
const derived = new WeakMap<Catalog.Catalog, Derived>()
// Keyed by the catalog (one runtime's, whose view is fixed per catalog): a replaced catalog starts afresh.
const derivedOf = (catalog: Catalog.Catalog): Derived => {
  let d = derived.get(catalog)
  if (d === undefined) {
    d = { offers: new WeakMap(), instructions: new WeakMap() }
    derived.set(catalog, d)
  }
  return d
}

/** What a request that keeps no thread is told when it loads (docs/mcp-gateway.md#threads). */
export const NO_THREAD_NOTE =
  "This request opened no MCP session and named no thread: what it loaded is forgotten with this answer, " +
  "and the next request starts with nothing loaded. To keep loads, initialize a session (its Mcp-Session-Id " +
  "keeps them), or name a thread: the query parameter ?thread=<id> on the URL or the header X-Plugboard-Thread: <id>."

/** One server instance: its SDK server, its era and its thread. */
export class GatewaySession {
  readonly server: Server

  private constructor(
    private readonly runtime: GatewayRuntime,
    readonly thread: Thread,
    /** Names the session in tool contexts (the thread key for a kept thread). */
    readonly id: string,
    readonly era: Era,
    instructions: string,
    /** Told after a load is kept, so that the thread's listeners can be told. */
    private readonly onLoaded: (session: GatewaySession) => void
  ) {
    this.server = new Server(runtime.serverInfo, {
      capabilities: { tools: { listChanged: true } },
      instructions,
      cacheHints: { "tools/list": GATEWAY_CACHE_HINT, "server/discover": GATEWAY_CACHE_HINT }
    })
    this.server.onerror = (error) => runtime.logger.debug(`MCP gateway session: ${describeError(error)}`)
    this.server.setRequestHandler("tools/list", () =>
      this.counted(
        async (): Promise<ListToolsResult> => ({
          tools: this.offer(await this.read()).map(listedTool) as ListToolsResult["tools"]
        })
      )
    )
    // The SDK checks the result against the era's schema on every call (answers.ts builds it
    // from checked shapes, so it passes unchanged).
    this.server.setRequestHandler("tools/call", (request, ctx) =>
      this.counted(
        async () =>
          (await this.call(request.params.name, request.params.arguments ?? {}, ctx)) as
            | CallToolResult
            | InputRequiredResult
      )
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
    era: Era,
    onLoaded: (session: GatewaySession) => void = () => {}
  ): Promise<GatewaySession> {
    const loaded = await thread.read()
    const cache = derivedOf(runtime.catalog).instructions
    let instructions = cache.get(loaded)
    if (instructions === undefined) {
      instructions = SystemPrompt.compose({
        basePrompt: runtime.basePrompt,
        catalog: runtime.catalog,
        loadedPlugins: loaded,
        view: runtime.view
      })
      cache.set(loaded, instructions)
    }
    return new GatewaySession(runtime, thread, id, era, instructions, onLoaded)
  }

  /**
   * Tells the client the list changed (a load on its thread): a 2025-era session by a notification
   * of its own; a 2026-07-28 instance by one its serving entry routes onto the client's
   * `subscriptions/listen` streams (on stdio; none open: nothing is sent).
   */
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
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `The thread's loaded plugins cannot be read: ${describeError(error)}`
      )
    }
  }

  /**
   * The list for `loaded` in `catalog` (the runtime's now, unless a request took its own),
   * computed once per loaded set (threads keep an unchanged set's array).
   */
  private offer(
    loaded: LoadedPlugins.LoadedPlugins,
    catalog: Catalog.Catalog = this.runtime.catalog,
    view: Access.View = this.runtime.view
  ): ReadonlyArray<Offer.OfferedTool> {
    const cache = derivedOf(catalog).offers
    let offer = cache.get(loaded)
    if (offer === undefined) {
      offer = CallTool.offer(catalog, loaded, view)
      cache.set(loaded, offer)
    }
    return offer
  }

  private async call(name: string, args: unknown, extra: Extra): Promise<CallResult | InputRequiredResult> {
    // A round answering a question goes on with the call that asked it (questions.ts).
    const state = extra.mcpReq.requestState()
    if (typeof state === "string") {
      return (
        this.runtime.questions.resume(state, extra) ??
        answerResult({
          content: `This answers a question no call waits on any more (answered already, or not within ${QUESTION_TTL_MS / 60_000} minutes): call '${name}' again.`,
          outcome: "refused"
        })
      )
    }
    const { catalog, view } = this.runtime
    const loaded = await this.read()
    // Only the meta-tools read it: a loaded tool's call to a server not connected fails on its own.
    const pending =
      name === MetaTools.LIST_CAPABILITIES || name === MetaTools.LOAD_CAPABILITY
        ? await this.runtime.pending?.()
        : undefined
    const step: ToolCall.Step = {
      catalog,
      offered: this.offer(loaded, catalog, view),
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
    const run = async (asking?: {
      readonly ask: NonNullable<ToolCallInfo["ask"]>
      readonly signal: AbortSignal
    }): Promise<CallResult> => {
      let ended = false
      const context = await this.context(loaded, decided.tool.name, extra, () => ended, asking)
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
    // A client that answers elicitation can be asked the tool's questions; any other declines them.
    if (!clientElicits(extra, this.server.getClientCapabilities())) return run()
    return this.runtime.questions.start((ask, signal) => run({ ask, signal }), extra)
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
        // A 2025-era session is told on the call's own stream; on 2026-07-28 that stream carries
        // only the request's own notifications, and the thread's listen streams are told instead.
        if (this.era === "legacy") {
          await extra.mcpReq.notify({ method: "notifications/tools/list_changed" }).catch(() => {})
        }
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
   * ends; when the client answers elicitation, `toolCall.ask` (questions.ts). With neither, none.
   */
  private async context(
    loaded: LoadedPlugins.LoadedPlugins,
    tool: string,
    extra: Extra,
    ended: () => boolean,
    asking?: { readonly ask: NonNullable<ToolCallInfo["ask"]>; readonly signal: AbortSignal }
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
      signal: asking?.signal ?? extra.mcpReq.signal // a call that asks outlives its first round
    })
    const token = extra.mcpReq._meta?.progressToken
    if (token === undefined && asking === undefined) return base
    return {
      ...base,
      toolCall: {
        id: String(extra.mcpReq.id),
        name: tool,
        ...(asking === undefined ? {} : { ask: asking.ask }),
        // Progress goes on the first round's stream, while it is open.
        progress: (p: ToolProgress) => {
          if (ended() || token === undefined || extra.mcpReq.signal.aborted) return
          extra.mcpReq
            .notify({
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
