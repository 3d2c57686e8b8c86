/**
 * `createMainAgent`: the per-request agent of docs/spec/pipeline.md, built from the catalog cached
 * at boot.
 *
 * Why a hand-written `StateGraph` (one node running the model ⇄ tools loop, `AgentLoop.ts`) rather
 * than `createAgent` + middleware from `langchain`: `createAgent` can change the tools bound per
 * model call (`wrapModelCall`), but its tool node must be given every callable tool up front and
 * runs whatever the model calls among them. Here the set of callable tools changes inside a turn (`load_capability`), the catalog may
 * hold thousands of tools (materialising them as LangChain tools per request would cost more than
 * the whole turn budget), a call must be gated against what *that* model call was offered, the
 * validation retry, the events and `loadedPlugins` updates have exact rules, and plugin middleware
 * has its own contract (`beforeModel` / `afterModel` / `onError` → `{ recover }`). With a model
 * step and a tool step of our own, each of those is one call into core, and per-request work stays
 * proportional to what is offered, not to the catalog's size.
 */

import { randomUUID } from "node:crypto"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import {
  type CompiledStateGraph,
  END,
  type LangGraphRunnableConfig,
  START,
  StateGraph
} from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { type Catalog, type EventSink, type RuntimeLogger, silentLogger } from "@plugboard/core"
import { makeAgentLoop } from "./AgentLoop.js"
import type { CodeModeOption } from "./CodeRun.js"
import { Emitter } from "./Events.js"
import { makeModelNode } from "./ModelNode.js"
import { makeRequestScope, type RequestScope } from "./RequestScope.js"
import {
  type AgentRequest,
  type AgentRuntime,
  type ClientToolsOption,
  makeAgentRuntime,
  type PreloadOption,
  type QueryRanking
} from "./Runtime.js"
import {
  AgentState,
  type AgentStateUpdate,
  type AgentStateValue,
  agentStateFor,
  DeltaAgentState,
  TurnAgentState
} from "./State.js"
import { defaultThreadLock, type ThreadLockOption } from "./ThreadLock.js"
import { makeToolNode } from "./ToolNode.js"
import { TurnSaver } from "./TurnSaver.js"

/** What `createMainAgent` needs: boot-time values plus the request. */
export interface CreateMainAgentOptions {
  /** The catalog built once at boot (`Catalog.make`). */
  readonly catalog: Catalog.Catalog
  /** A LangChain chat model with tool calling (`bindTools`). */
  readonly model: BaseChatModel
  /**
   * The user's checkpointer; threads are keyed by session id. The turn runs on it through a
   * `TurnSaver` (made here unless it is one already, e.g. with a read the host prefetched).
   */
  readonly checkpointer: BaseCheckpointSaver
  /**
   * The lock that keeps turns of this thread one at a time (`ThreadLock.ts`): the host's, keyed
   * in its namespace; `false` when the caller orders the thread's turns itself (it holds a lock
   * around each whole turn). Default: this process's lock, per checkpointer object.
   */
  readonly threadLock?: ThreadLockOption | false | undefined
  /** The host's own instructions, before the Tier-1 block. */
  readonly basePrompt?: string
  /** Receives every `reasoning` and `tool_call` event of the turn, in order (the host's SSE writer). */
  readonly eventSink?: EventSink.EventSinkService
  /** Values registered by plugins' `getSharedState` at boot. */
  readonly shared?: Readonly<Record<string, unknown>>
  readonly logger?: RuntimeLogger
  readonly request: AgentRequest
  /** The request's client-side tools (browser tools, AG-UI actions), offered after every server tool. */
  readonly clientTools?: ClientToolsOption | undefined
  /**
   * This request's scope, when the host built it first (`makeRequestScope`, for the same catalog,
   * user, session and shared state) to check the client's tool names against the request's own
   * tools before answering; the per-request hooks then run once. Built here when absent.
   */
  readonly scope?: RequestScope | undefined
  /**
   * Predictive preload (docs/architecture.md#predictive-preload): before the turn's first model call the
   * plugins are ranked against the user's message (with `ranking`) and, in mode `on`, a confident
   * top plugin's tools are offered for that turn. Off when absent.
   */
  readonly preload?: PreloadOption | undefined
  /**
   * The host's ranking (core's `Ranking`, docs/benchmarks.md#routing-quality): `list_capabilities`'
   * query and predictive preload are both ranked with it. Lexical when absent.
   */
  readonly ranking?: QueryRanking | undefined
  /**
   * Code mode (docs/code-mode.md): `run_code` is offered over the offered tools, and its programs
   * run in `sandbox` (e.g. `@plugboard/codemode`'s QuickJS). Off when absent.
   */
  readonly codeMode?: CodeModeOption | undefined
}

/**
 * The compiled LangGraph graph of a main agent. Spelled out rather than inferred: the inferred
 * type names core's state types by a path outside any package export, so it cannot be emitted
 * in `.d.ts` files (TS2883).
 */
export type AgentGraph = CompiledStateGraph<
  AgentStateValue,
  AgentStateUpdate,
  "agent" | typeof START,
  typeof AgentState.spec,
  typeof AgentState.spec
>

/**
 * The `configurable` key under which a request's graph carries its agent loop (`AGENT_LOOP` in
 * the graph's own config, merged into every run, state read and update of that graph).
 */
const AGENT_LOOP = "plugboard_agent_loop"

type Loop = ReturnType<typeof makeAgentLoop>

/** The graph's one node: the loop of the request whose graph runs it. */
const runLoop = (state: AgentStateValue, config?: LangGraphRunnableConfig) => {
  const loop = config?.configurable?.[AGENT_LOOP] as Loop | undefined
  if (typeof loop !== "function") throw new TypeError("The agent's graph ran without its request's loop.")
  return loop(state, config)
}

/**
 * The graph of each state shape, compiled once per process. Compiling cost a turn more CPU than
 * its model step's own work (docs/architecture.md#where-a-one-step-turns-cpu-goes-2026-12-06);
 * the compiled graph holds nothing of a request: its node runs the loop its run's config carries.
 * Safe at module level: a pure memo of the state shape (three module constants), copied per request.
 */
const compiled = new Map<typeof AgentState, AgentGraph>()

const compiledFor = (shape: typeof AgentState): AgentGraph => {
  let graph = compiled.get(shape)
  if (graph === undefined) {
    graph = new StateGraph(shape)
      .addNode("agent", runLoop)
      .addEdge(START, "agent")
      .addEdge("agent", END)
      .compile() as unknown as AgentGraph
    compiled.set(shape, graph)
  }
  return graph
}

/**
 * The request's graph: a copy of the compiled graph of its state's shape (as LangGraph's own
 * `withConfig` copies one) with the request's saver, its loop in the graph's config and, for a
 * turn's own state, that turn's messages channel. Every value of the request lives on this copy:
 * concurrent requests share only the compiled, request-free parts.
 */
const buildGraph = (
  rt: AgentRuntime,
  emitter: Emitter,
  options: CreateMainAgentOptions,
  saver: TurnSaver
): AgentGraph => {
  // Messages as deltas where the saver reads them in one pass, a new thread's first turn as one
  // full copy (State.ts, `agentStateFor`).
  const state = agentStateFor(saver, () => saver.threadFound === false)
  const own = state !== AgentState && state !== DeltaAgentState
  const base = compiledFor(own ? TurnAgentState : state)
  const loop: Loop = makeAgentLoop(
    makeModelNode(rt, options.model, options.basePrompt ?? "", emitter),
    makeToolNode(rt, emitter),
    options.request.signal,
    options.request.approval?.resume !== undefined
  )
  const Graph = base.constructor as new (fields: Record<string, unknown>) => AgentGraph
  return new Graph({
    ...base,
    checkpointer: saver,
    config: { configurable: { [AGENT_LOOP]: loop } },
    ...(own ? { channels: { ...base.channels, messages: state.spec.messages } } : {})
  })
}

/** An agent built for one request. Run it with `runTurn` or `streamTurn`. */
export interface MainAgent {
  readonly graph: AgentGraph
  /** The LangGraph `thread_id`: the session id. */
  readonly threadId: string
  readonly request: AgentRequest & { readonly requestId: string }
  /** Per-turn listeners for the agent's events (the host's sink receives them too). */
  readonly events: Pick<Emitter, "listen" | "flush" | "interrupt">
  /** The thread's checkpointed state (what the next turn will start from). */
  readonly getState: () => Promise<AgentStateValue>
  readonly logger: RuntimeLogger
  /** The saver the turn runs on: its storage timings, and when its writes have landed. */
  readonly saver: TurnSaver
  /** The lock `runTurn` and `streamTurn` hold for the whole turn (see `ThreadLock.ts`); `false`: the caller's. */
  readonly threadLock: ThreadLockOption | false
}

/**
 * Builds the agent for one request: runs the per-request hooks (`getRequestTools`,
 * `getRequestSubAgents`), and compiles the graph against `checkpointer` (`thread_id` = session
 * id). A checkpointer whose load fails is logged and the turn runs on an empty state.
 */
export const createMainAgent = async (options: CreateMainAgentOptions): Promise<MainAgent> => {
  const logger = options.logger ?? silentLogger
  const shared = options.shared ?? {}
  const request = { ...options.request, requestId: options.request.requestId ?? randomUUID() }
  const scope =
    options.scope ??
    (await makeRequestScope({
      catalog: options.catalog,
      request: { userDid: request.did, sessionId: request.sessionId, shared },
      logger
    }))
  const rt = makeAgentRuntime({
    catalog: options.catalog,
    scope,
    request,
    shared,
    logger,
    client: options.clientTools,
    preload: options.preload,
    ranking: options.ranking,
    codeMode: options.codeMode
  })
  const emitter = new Emitter(
    { requestId: request.requestId, sessionId: request.sessionId },
    options.eventSink,
    logger
  )
  const saver =
    options.checkpointer instanceof TurnSaver
      ? options.checkpointer
      : new TurnSaver(options.checkpointer, logger)
  const graph = buildGraph(rt, emitter, options, saver)
  const config = { configurable: { thread_id: request.sessionId } }
  return {
    graph,
    threadId: request.sessionId,
    request,
    events: emitter,
    getState: async () => (await graph.getState(config)).values as AgentStateValue,
    logger,
    saver,
    threadLock: options.threadLock ?? defaultThreadLock(saver.inner, request.sessionId)
  }
}
