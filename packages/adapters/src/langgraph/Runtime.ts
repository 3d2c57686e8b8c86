/**
 * What the graph's nodes share for one request: the boot catalog, the request scope, the
 * request's identity and the host's shared state and logger.
 */
import { type Catalog, makeRuntimeContext, type RuntimeContext, type RuntimeLogger } from "@plugboard/core"
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
}

/** Assembles the runtime of one request. */
export const makeAgentRuntime = (options: {
  readonly catalog: Catalog.Catalog
  readonly scope: RequestScope
  readonly request: AgentRequest
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
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
  return { ...options, context, ready: (state) => options.scope.init(context(state)) }
}
