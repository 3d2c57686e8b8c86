/**
 * Running one agent turn for a request: the per-request agent built from the boot catalog
 * (`createMainAgent`) on the saver the route resolved (a `TurnSaver`: thread id = session id), the
 * session's turn lock, the turn streamed to the caller (`streamTurn`: tool calls and answer chunks
 * in one order) or run to its end for a JSON answer (`runTurn`), its abort signal, and the
 * storage/agent split of its time.
 *
 * A turn never throws to its caller: it ends with an outcome (answer, error or aborted), so the
 * SSE writer can always finish with `done`. A turn cut short leaves the thread as the user saw it
 * (the adapter's `CutOff`: dangling calls answered, the partial answer kept and marked).
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { HumanMessage } from "@langchain/core/messages"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import type {
  Access,
  Catalog,
  EventSink,
  GraphState,
  RuntimeLogger,
  TurnBounds,
  TurnLock
} from "@plugboard/core"
import {
  type ClientToolsOption,
  createMainAgent,
  type MainAgent,
  makeRequestScope,
  type PreloadOption,
  type QueryRanking,
  type RequestScope,
  runTurn,
  streamTurn,
  type TurnInput,
  type TurnResult,
  type TurnSaver,
  textOf
} from "@plugboard/langgraph"

/** What every turn of this server shares (built once at boot). */
export interface TurnDeps {
  readonly catalog: Catalog.Catalog
  readonly model: BaseChatModel
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly basePrompt?: string | undefined
  /** The user's saver (default per-user SQLite, or the host's `checkpointerForUser`). */
  readonly saverFor: (did: string) => Promise<BaseCheckpointSaver>
  /** Wraps the whole turn of a user (the user databases' turn gate, which a Matrix restore waits on). */
  readonly around: <A>(did: string, run: () => Promise<A>) => Promise<A>
  /** One turn per session at a time (`TurnLock` port); the key is `turnLockKey`'s. */
  readonly turnLock: TurnLock.TurnLockService
  /** Lease of the session's lock (`TURN_LOCK_TTL_MS`): how long a dead host can keep the session. */
  readonly turnLockTtlMs?: number | undefined
  /** What one turn may spend (`TURN_*`); reaching a bound ends the turn, `failed`. */
  readonly turnBounds?: TurnBounds.Limits | undefined
  /** Predictive preload (`PRELOAD`; README "Predictive preload"); off when absent. */
  readonly preload?: PreloadOption | undefined
  /** `list_capabilities`' query ranking with an embedder (`EMBEDDING_MODEL`); lexical when absent. */
  readonly ranking?: QueryRanking | undefined
  /** Whether users' threads share one saver: then a thread's key is its session id alone. */
  readonly threadsShared?: boolean | undefined
  /** The user's invocations for the MCP servers that forward UCANs (none configured: absent). */
  readonly mcpInvocations?: ((did: string) => Promise<Record<string, string>>) | undefined
  /** Tool lists that MCP servers announced as changed, while they are being read (`Sources.toolsSettled`). */
  readonly toolsSettled?: (() => Promise<void> | undefined) | undefined
}

/** One turn to run. */
export interface TurnRequest {
  /** The user's saver, resolved once for the request (with the thread's read, when it was made). */
  readonly saver: TurnSaver
  readonly did: string
  /** What the user's credentials grant: the turn offers what the catalog's `requires` allow. */
  readonly capabilities?: ReadonlyArray<Access.Capability> | undefined
  readonly sessionId: string
  readonly requestId: string
  readonly message: string
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
  /** The request's scope when the route built it first (`prepareScope`); built with the agent otherwise. */
  readonly scope?: RequestScope | undefined
}

/**
 * Runs the request's per-request hooks (`getRequestTools`, `getRequestSubAgents`) ahead of the
 * turn, so the route can check the client's tool names against every tool the turn could offer
 * before it answers; the turn then reuses the scope (`TurnRequest.scope`), so the hooks run once.
 * A tool list an MCP server announced as changed is waited for first (`toolsSettled`), so the
 * turn after the one that changed it offers the new tools. Never rejects: a failing hook is
 * logged and skipped, as in the turn.
 */
export const prepareScope = async (
  deps: Pick<TurnDeps, "catalog" | "shared" | "logger" | "toolsSettled">,
  request: { readonly did: string; readonly sessionId: string }
): Promise<RequestScope> => {
  const settling = deps.toolsSettled?.()
  if (settling !== undefined) await settling
  return makeRequestScope({
    catalog: deps.catalog,
    request: { userDid: request.did, sessionId: request.sessionId, shared: deps.shared },
    logger: deps.logger
  })
}

/** How a turn ended, with its time split. */
export interface TurnOutcome {
  readonly status: "answered" | "failed" | "aborted"
  readonly answer?: string | undefined
  readonly messageId?: string | undefined
  /**
   * Why a failed turn failed. `unavailable`: a port it needs could not answer (a storage or
   * coordination engine down); its message then names no host, port or user (the log does).
   */
  readonly error?:
    | { readonly message: string; readonly code: string; readonly unavailable?: boolean }
    | undefined
  readonly timings: { readonly load: number; readonly save: number; readonly agent: number }
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const codeOf = (error: unknown): string => {
  const e = error as { _tag?: unknown; reason?: unknown } | null
  if (typeof e?._tag === "string") return typeof e.reason === "string" ? `${e._tag}:${e.reason}` : e._tag
  // An untagged error (a TypeError, a SyntaxError) is a bug somewhere: its class name is not a
  // reason a client could act on (its message still goes with the turn's error event).
  return "turn-failed"
}

/** Whether a port failed `unavailable` (a `Schema.TaggedError` with that reason). */
const isUnavailable = (error: unknown): boolean => {
  const e = error as { _tag?: unknown; reason?: unknown } | null
  return typeof e?._tag === "string" && e.reason === "unavailable"
}

const UNAVAILABLE = "A service this turn needs is unavailable right now. Try again shortly."

/** The session's key in the turn lock: one namespace per user, or one for all when threads are shared. */
export const turnLockKey = (deps: Pick<TurnDeps, "threadsShared">, did: string, sessionId: string): string =>
  deps.threadsShared === true ? `thread\u0000${sessionId}` : `${did}\u0000${sessionId}`

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
 * Runs one turn. With `emit`, the turn is streamed and every event (`tool_call`, `message`
 * chunks) goes to it in order; without, it runs to its end (the JSON answer). Never rejects.
 */
export const runOne = (
  deps: TurnDeps,
  request: TurnRequest,
  emit?: ((event: EventSink.AgentEvent) => void) | undefined
) =>
  deps.around(request.did, async (): Promise<TurnOutcome> => {
    const storage = request.saver.timings
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
      const agent = await createMainAgent({
        catalog: deps.catalog,
        model: deps.model,
        checkpointer: request.saver,
        threadLock: {
          lock: deps.turnLock,
          key: turnLockKey(deps, request.did, request.sessionId),
          ttlMs: deps.turnLockTtlMs
        },
        shared: deps.shared,
        logger: deps.logger,
        ...(deps.basePrompt === undefined ? {} : { basePrompt: deps.basePrompt }),
        request: {
          did: request.did,
          sessionId: request.sessionId,
          requestId: request.requestId,
          signal: request.signal,
          turnBounds: deps.turnBounds,
          capabilities: request.capabilities
        },
        ...(request.clientTools === undefined ? {} : { clientTools: request.clientTools }),
        scope: request.scope ?? (await prepareScope(deps, request)),
        ...(deps.preload === undefined ? {} : { preload: deps.preload }),
        ...(deps.ranking === undefined ? {} : { ranking: deps.ranking })
      })
      if (request.observe !== undefined) stopObserving = agent.events.listen(request.observe)
      const invocations = await deps.mcpInvocations?.(request.did)
      const input: TurnInput = {
        message:
          request.extras === undefined
            ? request.message
            : new HumanMessage({
                content: request.message,
                additional_kwargs: { plugboard: request.extras }
              }),
        ...request.clientState,
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
      if (request.signal.aborted) return { status: "aborted", timings: timings() }
      deps.logger.error("turn failed", { sessionId: request.sessionId, error: describe(error) })
      const unavailable = isUnavailable(error)
      return {
        status: "failed",
        error: {
          message: unavailable ? UNAVAILABLE : describe(error),
          code: codeOf(error),
          ...(unavailable ? { unavailable } : {})
        },
        timings: timings()
      }
    } finally {
      stopObserving?.()
    }
  })
