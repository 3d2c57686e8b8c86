/**
 * What the graph's nodes share for one request: the boot catalog, the request scope, the
 * request's identity and the host's shared state and logger.
 */

import { type BaseMessage, HumanMessage } from "@langchain/core/messages"
import {
  Access,
  type Catalog,
  type ClientTools,
  CodeMode,
  type Connect,
  type GraphState,
  LoadedPlugins,
  makeRuntimeContext,
  Offer,
  Preload,
  Ranking,
  ResultPages,
  type RuntimeContext,
  type RuntimeLogger,
  type TokenCounter,
  type TurnBounds
} from "@plugboard/core"
import { Effect } from "effect"
import type { ApprovalOption } from "./Approvals.js"
import type { CodeModeOption } from "./CodeRun.js"
import { holdsKeptResult } from "./KeptResults.js"
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
  /**
   * The turn's bounds (`TurnBounds.make`): reaching one ends the turn with core's
   * `TurnBoundExceeded`. None when absent.
   */
  readonly turnBounds?: TurnBounds.Limits | undefined
  /**
   * The capabilities the user's credentials grant (`Auth.Verified.capabilities`): what the
   * catalog's `requires` are checked against (core's `Access`). None when absent.
   */
  readonly capabilities?: ReadonlyArray<Access.Capability> | undefined
  /**
   * Counts what each model call sent and answered for the turn's token bound (the host's exact
   * tokenizer, e.g. `@plugboard/tokenizers`' o200k); core's heuristic when absent. Wrapped in
   * `TokenCounter.memoized` once for all requests (as the host does), its counts of the texts
   * and tools' schemas that every turn sends again are kept across turns.
   */
  readonly tokenCounter?: TokenCounter.TokenCounterService | undefined
  /**
   * Characters of a tool's answer that enter the conversation whole; a longer one is cut to its
   * first page and kept for `read_result` (core's `ResultPages`; its default when absent).
   */
  readonly resultMaxChars?: number | undefined
  /**
   * Which calls wait for their user's approval, and the answer of the wait this turn resumes
   * (`Approvals.ts`). No call waits when absent.
   */
  readonly approval?: ApprovalOption | undefined
  /**
   * The plugins this user must connect an account for first (core's `Connect`, docs/oauth.md):
   * listed as `needsConnect`, refused by `load_capability` with the link. None when absent.
   */
  readonly pending?: Connect.Pending | undefined
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

/**
 * The host's ranking (core's `Ranking`, docs/benchmarks.md#routing-quality), chosen once where it
 * composes: `list_capabilities`' `query` and predictive preload's guess are both ranked with it.
 * Lexical (`Ranking.lexical`) when absent; when a fused ranking's embedder fails, that listing or
 * that turn's preload ranks lexically (logged).
 */
export type QueryRanking = Ranking.Ranking

/**
 * Predictive preload (core's `Preload`, docs/architecture.md#predictive-preload): `mode` and the confidence
 * `threshold` (core's default when absent); `available` says whether the user may use a plugin;
 * `onAgreement` receives each turn's agreement as the turn ends, beside the log line.
 */
export interface PreloadOption {
  readonly mode: Preload.Mode
  readonly threshold?: number | undefined
  readonly available?: ((plugin: string) => boolean) | undefined
  readonly onAgreement?: ((agreement: Preload.Agreement) => void) | undefined
}

/** The preload of the turn a state belongs to: its decision and the plugins loaded as it began. */
export interface PreloadTurn {
  readonly decision: Preload.Decision
  readonly loadedBefore: LoadedPlugins.LoadedPlugins
  /** Position of the turn's user message in the thread's messages. */
  readonly start: number
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
  /** The catalog as the user's grants see it (`Access.view` of `request.capabilities`). */
  readonly view: Access.View
  /** Code mode (`run_code` offered, programs run in its sandbox: `CodeRun.ts`); off when absent. */
  readonly codeMode: CodeModeOption | undefined
  readonly preloadOption: PreloadOption | undefined
  /** The host's ranking, for `list_capabilities`' query and for preload; lexical when absent. */
  readonly ranking: QueryRanking | undefined
  /**
   * Decides the preload of the turn `state` is in, once per turn, before its first model call
   * (the ranking may embed the message, so this is async): from its last user message, ranked
   * with `ranking`, and the plugins then loaded. Nothing when preload is off.
   */
  readonly preparePreload: (state: AgentStateValue) => Promise<void>
  /**
   * The preload `preparePreload` decided for the turn `state` is in, the same for every call of
   * that turn; absent when preload is off or the turn's preload was not prepared.
   */
  readonly preload: (state: AgentStateValue) => PreloadTurn | undefined
  /** What this request's turn has spent so far against its bounds (`TurnGuard.ts`); set at its first model call. */
  readonly tally: { current: TurnBounds.Tally | undefined; readonly counts: Map<string, number> }
  /** The last offer `offerFor` made this request, and what it was made of; none before its first. */
  readonly lastOffer: { current: LastOffer | undefined }
}

/** An offer `offerFor` made, with the inputs it is a function of (beside the request's own). */
interface LastOffer {
  readonly key: string
  readonly ready: ReadonlyArray<DynamicTool>
  readonly decision: Preload.Decision | undefined
  readonly holds: boolean
  readonly offered: ReadonlyArray<Offer.OfferedTool>
}

/**
 * What one model call is offered: core's offer, then the thread's visible request tools, then
 * the client's tools (they change per request; the cached prefix must not), then the turn's
 * preloaded tools last (they change per turn).
 */
export const offerFor = (
  rt: AgentRuntime,
  loaded: LoadedPlugins.LoadedPlugins,
  ready: ReadonlyArray<DynamicTool>,
  state: AgentStateValue
): ReadonlyArray<Offer.OfferedTool> => {
  const decision = rt.preload(state)?.decision
  const holds = holdsKeptResult(state.messages)
  // The offer is a function of these alone (the catalog, view, client tools and code mode are
  // the request's): a step whose thread loaded nothing since the last step's, with the same
  // ready tools, preload and pages, is offered the last step's very list.
  const key = loaded.join("\u0000")
  const last = rt.lastOffer.current
  if (
    last !== undefined &&
    last.key === key &&
    last.ready === ready &&
    last.decision === decision &&
    last.holds === holds
  )
    return last.offered
  const offered = offerOf(rt, loaded, ready, decision, holds)
  rt.lastOffer.current = { key, ready, decision, holds, offered }
  return offered
}

const offerOf = (
  rt: AgentRuntime,
  loaded: LoadedPlugins.LoadedPlugins,
  ready: ReadonlyArray<DynamicTool>,
  decision: Preload.Decision | undefined,
  holds: boolean
): ReadonlyArray<Offer.OfferedTool> => {
  const request = Offer.requestTools(rt.catalog, loaded, ready, rt.view)
  const client = rt.client?.tools ?? []
  const preloaded = Preload.tools(rt.catalog, loaded, decision, rt.view)
  // read_result comes last: it appears once a result was cut, and must not move what precedes it.
  const pages = ResultPages.offer(holds)
  const offered = Offer.offer(
    rt.catalog,
    loaded,
    client.length === 0 && preloaded.length === 0 && pages.length === 0
      ? request
      : [...request, ...client.map((t) => t.offered), ...preloaded, ...pages],
    rt.view
  )
  // run_code after everything: its API text grows with each load (core's `CodeMode.offer`).
  if (rt.codeMode === undefined) return offered
  const code = CodeMode.offer("on", offered)
  return code.length === 0 ? offered : [...offered, ...code]
}

/** The text of a user message's content (a string, or parts of which the text ones count). */
const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  let out = ""
  for (const part of content) {
    if (typeof part === "object" && part !== null && (part as { type?: unknown }).type === "text") {
      const text = (part as { text?: unknown }).text
      if (typeof text === "string") out += (out.length > 0 ? " " : "") + text
    }
  }
  return out
}

/** Index of the last user message of `messages`, or -1. */
const lastHuman = (messages: ReadonlyArray<BaseMessage>): number => {
  for (let i = messages.length - 1; i >= 0; i--) if (HumanMessage.isInstance(messages[i])) return i
  return -1
}

/** The per-turn preload of a runtime (see `AgentRuntime.preparePreload` and `preload`). */
const makePreload = (
  catalog: Catalog.Catalog,
  option: PreloadOption | undefined,
  ranking: QueryRanking | undefined,
  logger: RuntimeLogger
): Pick<AgentRuntime, "preparePreload" | "preload"> => {
  if (option === undefined || option.mode === "off")
    return { preparePreload: async () => {}, preload: () => undefined }
  let current: { readonly message: BaseMessage; readonly turn: PreloadTurn } | undefined
  const turnMessage = (state: AgentStateValue) => {
    const start = lastHuman(state.messages)
    return start < 0 ? undefined : { start, message: state.messages[start]! }
  }
  return {
    preparePreload: async (state) => {
      const at = turnMessage(state)
      if (at === undefined || current?.message === at.message) return
      const loadedBefore = LoadedPlugins.fromUnknown(state.loadedPlugins)
      const text = contentText(at.message.content)
      const ranks = ranking ?? Ranking.lexical(catalog)
      // A ranking that ranks at once (the lexical one) decides without an Effect run per turn.
      const decision =
        Preload.decideNow(ranks, catalog, loadedBefore, text, option) ??
        (await Effect.runPromise(
          Preload.decideWith(ranks, catalog, loadedBefore, text, option).pipe(
            Effect.catchAll((error) => {
              logger.warn("preload: the embedder's ranking failed; ranking lexically", {
                error: error.message
              })
              return Effect.succeed(Preload.decide(catalog, loadedBefore, text, option))
            })
          )
        ))
      current = { message: at.message, turn: { decision, loadedBefore, start: at.start } }
    },
    preload: (state) => {
      const at = turnMessage(state)
      return at !== undefined && current?.message === at.message ? current.turn : undefined
    }
  }
}

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A frozen copy of `value`'s arrays and plain objects, at every depth; anything else (LangChain
 * messages, class instances) is shared as it is.
 */
const frozenCopy = (value: unknown, seen: WeakMap<object, unknown>): unknown => {
  if (typeof value !== "object" || value === null) return value
  const done = seen.get(value)
  if (done !== undefined) return done
  if (Array.isArray(value)) {
    const out: Array<unknown> = []
    seen.set(value, out)
    for (const item of value) out.push(frozenCopy(item, seen))
    return Object.freeze(out)
  }
  if (!isPlainObject(value)) return value
  const out: Record<string, unknown> = {}
  seen.set(value, out)
  for (const key of Object.keys(value)) out[key] = frozenCopy((value as Record<string, unknown>)[key], seen)
  return Object.freeze(out)
}

/**
 * The state as plugins see it (`history.state` is read-only:
 * docs/spec/graph-state.md#the-runtimecontext). The graph hands its nodes its own channel values,
 * the very arrays and objects it checkpoints: a handler or middleware that wrote into them in place
 * (a `push` onto `loadedPlugins`, a field of `userContext`, a message spliced out) changed the
 * thread, loaded plugins without `load_capability` and got past `GraphState.checkPluginUpdate`.
 * Plugins get frozen copies instead; a write throws. The messages themselves are LangChain objects
 * and are shared (the list holding them is a copy).
 */
const readonlyState = (state: AgentStateValue): GraphState.GraphState =>
  frozenCopy(toCoreState(state), new WeakMap()) as GraphState.GraphState

/** Assembles the runtime of one request. */
export const makeAgentRuntime = (options: {
  readonly catalog: Catalog.Catalog
  readonly scope: RequestScope
  readonly request: AgentRequest
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly client?: ClientToolsOption | undefined
  readonly preload?: PreloadOption | undefined
  readonly ranking?: QueryRanking | undefined
  readonly codeMode?: CodeModeOption | undefined
}): AgentRuntime => {
  const view = Access.view(options.catalog, options.request.capabilities)
  // Never preload a plugin the user may not use (unless the host decides that itself).
  const preload =
    options.preload === undefined || options.preload.available !== undefined || view.open
      ? options.preload
      : { ...options.preload, available: (plugin: string) => !view.denied.has(plugin) }
  // A node builds the context of its state more than once (its sub-agents' init, its hooks).
  const contexts = new WeakMap<AgentStateValue, RuntimeContext>()
  const build = (state: AgentStateValue): RuntimeContext =>
    makeRuntimeContext({
      state: readonlyState(state),
      sessionId: options.request.sessionId,
      did: options.request.did,
      capabilities: options.request.capabilities,
      shared: options.shared,
      logger: options.logger,
      ...(options.request.signal === undefined ? {} : { signal: options.request.signal })
    })
  const context = (state: AgentStateValue): RuntimeContext => {
    let ctx = contexts.get(state)
    if (ctx === undefined) {
      ctx = build(state)
      contexts.set(state, ctx)
    }
    return ctx
  }
  // The scope's init of the same loaded plugins answers the same tools: each sub-agent initialises
  // once per request, with the context of the first step that could offer it (`RequestScope.init`).
  // So a step whose thread loaded nothing since an earlier one's takes that step's answer, without
  // building its context and asking again (a failed init is asked again, as before).
  const readyFor = new Map<string, Promise<ReadonlyArray<DynamicTool>>>()
  const ready = (state: AgentStateValue): Promise<ReadonlyArray<DynamicTool>> => {
    const loaded = LoadedPlugins.fromUnknown(state.loadedPlugins)
    const key = loaded.join("\u0000")
    let tools = readyFor.get(key)
    if (tools === undefined) {
      tools = options.scope.init(context(state), loaded, view)
      readyFor.set(key, tools)
      tools.catch(() => readyFor.delete(key))
    }
    return tools
  }
  return {
    ...options,
    client: options.client,
    view,
    preloadOption: preload,
    ranking: options.ranking,
    codeMode: options.codeMode,
    ...makePreload(options.catalog, preload, options.ranking, options.logger),
    tally: { current: undefined, counts: new Map() },
    lastOffer: { current: undefined },
    context,
    ready
  }
}
