/**
 * What the graph's nodes share for one request: the boot catalog, the request scope, the
 * request's identity and the host's shared state and logger.
 */
import {
  type Catalog,
  type ClientTools,
  LoadedPlugins,
  makeRuntimeContext,
  Offer,
  type RuntimeContext,
  type RuntimeLogger
} from "@plugboard/core"
import type { DynamicTool, RequestScope } from "./RequestScope.js"
import { type AgentStateValue, toCoreState } from "./State.js"

/** The identity of the request an agent is built for. */
export interface AgentRequest {
  readonly did: string
  /** The session id; also the LangGraph `thread_id`. */
  readonly sessionId: string
  readonly signal?: AbortSignal | undefined
  /** Correlates this request's events; a fresh id when absent. */
  readonly requestId?: string | undefined
}

/** One call of a client-side tool, as the host forwards it to the client. */
export interface ClientToolCall {
  /** The model's tool call id: the client's answer names it. */
  readonly callId: string
  readonly kind: ClientTools.ClientToolKind
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
}

/**
 * The request's client-side tools (checked by `ClientTools.validate`) and how to run one: the
 * host sends the call to the client and resolves with its answer, or rejects (no answer in
 * time, client gone); a rejection becomes the ToolMessage the model sees.
 */
export interface ClientToolsOption {
  readonly tools: ReadonlyArray<ClientTools.ClientTool>
  readonly call: (call: ClientToolCall) => Promise<unknown>
}

/** Per-request runtime handed to the nodes. */
export interface AgentRuntime {
  readonly catalog: Catalog.Catalog
  readonly scope: RequestScope
  readonly request: AgentRequest
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  /** The RuntimeContext for a state snapshot. */
  readonly context: (state: AgentStateValue) => RuntimeContext
  /** The dynamic tools whose sub-agent init succeeded (runs init once per request). */
  readonly ready: (state: AgentStateValue) => Promise<ReadonlyArray<DynamicTool>>
  /** The request's client-side tools (none when the host gave none). */
  readonly client: ClientToolsOption | undefined
}

/**
 * What one model call is offered: core's offer, then the thread's visible request tools, then
 * the client's tools last (they change per request; the cached prefix must not).
 */
export const offerFor = (
  rt: AgentRuntime,
  loaded: LoadedPlugins.LoadedPlugins,
  ready: ReadonlyArray<DynamicTool>
): ReadonlyArray<Offer.OfferedTool> => {
  const request = Offer.requestTools(rt.catalog, loaded, ready)
  const client = rt.client?.tools ?? []
  return Offer.offer(
    rt.catalog,
    loaded,
    client.length === 0 ? request : [...request, ...client.map((t) => t.offered)]
  )
}

/** Assembles the runtime of one request. */
export const makeAgentRuntime = (options: {
  readonly catalog: Catalog.Catalog
  readonly scope: RequestScope
  readonly request: AgentRequest
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly client?: ClientToolsOption | undefined
}): AgentRuntime => {
  const context = (state: AgentStateValue): RuntimeContext =>
    makeRuntimeContext({
      state: toCoreState(state),
      sessionId: options.request.sessionId,
      did: options.request.did,
      shared: options.shared,
      logger: options.logger,
      ...(options.request.signal === undefined ? {} : { signal: options.request.signal })
    })
  return {
    ...options,
    client: options.client,
    context,
    ready: (state) => options.scope.init(context(state), LoadedPlugins.fromUnknown(state.loadedPlugins))
  }
}
