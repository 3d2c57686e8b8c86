/**
 * The agent hop of a turn (docs/architecture.md): the per-request agent built from the boot
 * catalog (`createMainAgent`) on the saver and scope the turn service made, the turn streamed to
 * the caller's `emit` (`streamTurn`: reasoning, tool calls and answer chunks in one order) or run
 * to its end for a JSON answer (`runTurn`), its abort signal, and the storage/agent split of its
 * time. The session's lock is the turn service's (`TurnService.ts`), held around this hop.
 *
 * This is where the turn leaves Effect: LangGraph and the plugins' handlers are Promise code, so
 * the service enters this hop once (`Effect.promise`) and nothing in it runs an Effect back.
 * A turn never rejects: it ends with an outcome (answer, failure or aborted), so the service can
 * always end the run with `done`. A turn cut short leaves the thread as the user saw it (the
 * adapter's `CutOff`: dangling calls answered, the partial answer kept and marked).
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { HumanMessage } from "@langchain/core/messages"
import {
  type Access,
  Approval,
  type Catalog,
  type Connect,
  describe,
  type EventSink,
  type GraphState,
  type RuntimeLogger,
  type TokenCounter,
  TurnBounds,
  type Wait
} from "@plugboard/core"
import {
  type ApprovalOption,
  type ClientToolsOption,
  type CodeModeOption,
  createMainAgent,
  type MainAgent,
  type PreloadOption,
  type QueryRanking,
  type RequestScope,
  runTurn,
  streamTurn,
  type TurnInput,
  type TurnResult,
  type TurnSaver,
  textOf,
  WaitNeeded
} from "@plugboard/langgraph"
import { ModelCallTimeout } from "@plugboard/models"
import type { CatalogNow } from "./LiveCatalog.js"

/** What every turn's agent shares (built once at boot). */
export interface AgentDeps {
  /** The catalog boot built; a turn runs on `current()`'s when given (`LiveCatalog.ts`). */
  readonly catalog: Catalog.Catalog
  /**
   * The catalog and ranking a turn takes when it starts, and keeps to its end (a rebuild after
   * an OAuth server's first connect replaces them for later turns); `catalog`/`ranking` when absent.
   */
  readonly current?: (() => CatalogNow) | undefined
  readonly model: BaseChatModel
  readonly logger: RuntimeLogger
  readonly basePrompt?: string | undefined
  /** Wraps the whole turn of a user (the user databases' turn gate, which a Matrix restore waits on). */
  readonly around: <A>(did: string, run: () => Promise<A>) => Promise<A>
  /** What one turn may spend (`TURN_*`); reaching a bound ends the turn, `failed`. */
  readonly turnBounds?: TurnBounds.Limits | undefined
  /** Counts what each model call sends for the token bound (the exact o200k counter when it loads). */
  readonly tokenCounter?: TokenCounter.TokenCounterService | undefined
  /** Characters of a tool's answer that enter the thread whole (`TOOL_RESULT_MAX_CHARS`, core's `ResultPages`). */
  readonly resultMaxChars?: number | undefined
  /** Predictive preload (`PRELOAD`; docs/architecture.md#predictive-preload); off when absent. */
  readonly preload?: PreloadOption | undefined
  /**
   * The host's one ranking (core's `Ranking`, chosen where it composes: fused with `EMBEDDING_MODEL`'s
   * embedder, else lexical), for `list_capabilities`' query and for predictive preload; lexical when absent.
   */
  readonly ranking?: QueryRanking | undefined
  /** The user's invocations for the MCP servers that forward UCANs (none configured: absent). */
  readonly mcpInvocations?: ((did: string) => Promise<Record<string, string>>) | undefined
  /** The plugins the user must connect an account for first (Connections.ts); none when absent. */
  readonly pendingConnects?: ((did: string) => Promise<Connect.Pending>) | undefined
  /** Code mode (`CODE_MODE=on`, docs/code-mode.md): `run_code` is offered and runs in this sandbox; off when absent. */
  readonly codeMode?: CodeModeOption | undefined
  /** The tools the operator makes wait for approval (`APPROVAL_TOOLS`), beside those defined so. */
  readonly approvalTools?: Approval.OperatorList | undefined
  /** `CONNECT_WAITS=on`: a load of a plugin the user has not connected waits for the connection. */
  readonly connectWaits?: boolean | undefined
}

/** One agent run: what the turn service resolved for it. */
export interface AgentRun {
  /** The user's saver for this turn (with the thread's read, when opening the session made one). */
  readonly saver: TurnSaver
  /** The request's scope (its per-request tools and sub-agents), built once by the turn service. */
  readonly scope: RequestScope
  /** The turn's shared state (the plugins' values, with the turn's credits). */
  readonly shared: Readonly<Record<string, unknown>>
  readonly did: string
  /** What the user's credentials grant: the turn offers what the catalog's `requires` allow. */
  readonly capabilities?: ReadonlyArray<Access.Capability> | undefined
  readonly sessionId: string
  readonly requestId: string
  /** The user's message; absent when the turn resumes a wait (`resume`), which adds none. */
  readonly message?: string | undefined
  /** The wait this turn resumes: what it asked and its answer (docs/waiting.md). */
  readonly resume?: { readonly request: Wait.RunWaitRequest; readonly answer: Wait.WaitAnswer } | undefined
  /**
   * Asks the user for a call in flight (an MCP elicitation): an `input` wait on the live call
   * (`TurnWaits.ask`); absent when the turn cannot wait (a JSON turn, no wait store).
   */
  readonly ask?: ApprovalOption["ask"]
  /** The user's message's id in the thread (a run's: what a repair after a crash writes again). */
  readonly messageId?: string | undefined
  /** What the client sent with the message and the turn keeps on it (`plugboard` in its kwargs). */
  readonly extras?: Readonly<Record<string, unknown>> | undefined
  readonly signal: AbortSignal
  /** The client's tools of this turn, offered after the server's and run by the client. */
  readonly clientTools?: ClientToolsOption | undefined
  /** Stored in the thread as this turn's `browserTools` / `agActions`. */
  readonly clientState?:
    | {
        readonly browserTools: ReadonlyArray<GraphState.BrowserToolCallDto>
        readonly agActions: ReadonlyArray<GraphState.AgActionDto>
      }
    | undefined
  /** Told every event the agent emits (tool calls), as it emits it, in both modes (the live gateway). */
  readonly observe?: ((event: EventSink.AgentEvent) => void) | undefined
}

/** Why a turn failed: the bound or call timeout that ended it, or `turn-failed` (never a class name). */
export interface TurnFailure {
  readonly message: string
  /** The run's `done` reason and the `error` frame's `code`. */
  readonly reason: string
  /**
   * A port the turn needs could not answer (a storage or coordination engine down); its message
   * then names no host, port or user (the log does).
   */
  readonly unavailable?: boolean | undefined
}

const UNAVAILABLE = "A service this turn needs is unavailable right now. Try again shortly."

/** How a turn ended, with its time split. */
export interface TurnOutcome {
  /** `waiting`: a tool call waits for its user (`wait`); the thread is saved at that call. */
  readonly status: "answered" | "failed" | "aborted" | "waiting"
  readonly answer?: string | undefined
  readonly messageId?: string | undefined
  readonly error?: TurnFailure | undefined
  /** What the turn waits for (a `waiting` turn's). */
  readonly wait?: Wait.RunWaitRequest | undefined
  readonly timings: { readonly load: number; readonly save: number; readonly agent: number }
}

/** The failure's reason: a turn bound's, a model call bound's, else `turn-failed`. */
export const failureOf = (error: unknown): TurnFailure => {
  if (error instanceof TurnBounds.TurnBoundExceeded) return { message: error.message, reason: error.reason }
  if (error instanceof ModelCallTimeout)
    return { message: error.message, reason: `model-${error.reason}-timeout` }
  // A port's failure (a `Schema.TaggedError`) whose engine is down.
  const e = error as { _tag?: unknown; reason?: unknown } | null
  if (typeof e?._tag === "string" && e.reason === "unavailable")
    return { message: UNAVAILABLE, reason: "turn-failed", unavailable: true }
  // Anything else (an untagged TypeError, a SyntaxError) is a bug: its class name is no reason.
  return { message: describe(error), reason: "turn-failed" }
}

/**
 * Streams a turn: each event `streamTurn` yields (tool calls, answer chunks) goes to `emit` as it
 * comes, exactly once; the agent has no event sink of its own, which would deliver the tool calls
 * a second time.
 */
const streamed = async (
  agent: MainAgent,
  input: TurnInput,
  emit: (event: EventSink.AgentEvent) => void
): Promise<TurnResult> => {
  const events = streamTurn(agent, input)
  let next = await events.next()
  while (next.done !== true) {
    emit(next.value)
    next = await events.next()
  }
  return next.value
}

/**
 * Runs the agent for one turn. With `emit`, the turn is streamed and every event goes to it in
 * order; without, it runs to its end (the JSON answer). Never rejects.
 */
export const runAgent = (
  deps: AgentDeps,
  run: AgentRun,
  emit?: ((event: EventSink.AgentEvent) => void) | undefined
): Promise<TurnOutcome> =>
  deps.around(run.did, async (): Promise<TurnOutcome> => {
    const storage = run.saver.timings
    const started = performance.now()
    const timings = () => {
      const total = performance.now() - started
      return {
        load: storage.load,
        save: storage.save,
        agent: Math.max(0, total - storage.load - storage.save)
      }
    }
    let stopObserving: (() => void) | undefined
    try {
      const pending = await deps.pendingConnects?.(run.did)
      const agent = await createMainAgent({
        catalog: deps.catalog,
        model: deps.model,
        checkpointer: run.saver,
        shared: run.shared,
        // The turn service holds the session's `TurnLock` around the whole turn (SessionLock.ts):
        // the adapter's own thread lock would be a second exclusion on the same session.
        threadLock: false,
        logger: deps.logger,
        ...(deps.basePrompt === undefined ? {} : { basePrompt: deps.basePrompt }),
        request: {
          did: run.did,
          sessionId: run.sessionId,
          requestId: run.requestId,
          signal: run.signal,
          turnBounds: deps.turnBounds,
          capabilities: run.capabilities,
          tokenCounter: deps.tokenCounter,
          resultMaxChars: deps.resultMaxChars,
          ...(pending === undefined ? {} : { pending }),
          // Always: a tool defined with `requiresApproval` waits whatever the operator lists.
          approval: {
            operator: deps.approvalTools ?? Approval.NONE,
            resume: run.resume,
            // A turn that can wait (`ask`: a run on a host with a wait store) waits for a connect,
            // when the operator says so, rather than answering the load with the link
            // (docs/waiting.md#connect-waits).
            ...(run.ask === undefined ? {} : { ask: run.ask, connect: deps.connectWaits === true })
          }
        },
        ...(run.clientTools === undefined ? {} : { clientTools: run.clientTools }),
        scope: run.scope,
        ...(deps.preload === undefined ? {} : { preload: deps.preload }),
        ...(deps.ranking === undefined ? {} : { ranking: deps.ranking }),
        ...(deps.codeMode === undefined ? {} : { codeMode: deps.codeMode })
      })
      if (run.observe !== undefined) stopObserving = agent.events.listen(run.observe)
      const invocations = await deps.mcpInvocations?.(run.did)
      const input: TurnInput = {
        message:
          run.message === undefined
            ? undefined
            : run.extras === undefined && run.messageId === undefined
              ? run.message
              : new HumanMessage({
                  content: run.message,
                  ...(run.messageId === undefined ? {} : { id: run.messageId }),
                  ...(run.extras === undefined ? {} : { additional_kwargs: { plugboard: run.extras } })
                }),
        ...run.clientState,
        ...(invocations === undefined ? {} : { mcpUcanContext: { invocations } })
      }
      const result = emit === undefined ? await runTurn(agent, input) : await streamed(agent, input, emit)
      return {
        status: "answered",
        answer: textOf(result.message),
        messageId: result.message.id,
        timings: timings()
      }
    } catch (error) {
      // The thread is saved at the call that waits; the turn service opens the wait.
      if (error instanceof WaitNeeded) return { status: "waiting", wait: error.request, timings: timings() }
      if (run.signal.aborted) return { status: "aborted", timings: timings() }
      deps.logger.error("turn failed", { sessionId: run.sessionId, error: describe(error) })
      return { status: "failed", error: failureOf(error), timings: timings() }
    } finally {
      stopObserving?.()
    }
  })
