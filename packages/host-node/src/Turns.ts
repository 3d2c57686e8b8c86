/**
 * Running one agent turn for a request: the per-request agent built from the boot catalog
 * (`createMainAgent`), the user's checkpointer (thread id = session id), the turn streamed to the
 * caller (`streamTurn`: tool calls and answer chunks in one order) or run to its end for a JSON
 * answer (`runTurn`), its abort signal, and the storage/agent split of its time.
 *
 * A turn never throws to its caller: it ends with an outcome (answer, error or aborted), so the
 * SSE writer can always finish with `done`. After a failed or aborted turn, tool calls the model
 * made that never got an answer are answered in the stored thread ("cancelled"), so the thread
 * stays a valid conversation for the next turn and for `GET /messages/:id`.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, HumanMessage, isAIMessage, ToolMessage } from "@langchain/core/messages"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import {
  type ClientToolsOption,
  createMainAgent,
  type MainAgent,
  makeRequestScope,
  type RequestScope,
  runTurn,
  streamTurn,
  type TurnInput,
  type TurnResult,
  textOf
} from "@plugboard/adapters/langgraph"
import type { Catalog, EventSink, GraphState, RuntimeLogger } from "@plugboard/core"
import { type StorageTimings, TimedSaver } from "./TimedSaver.js"

/** What every turn of this server shares (built once at boot). */
export interface TurnDeps {
  readonly catalog: Catalog.Catalog
  readonly model: BaseChatModel
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly basePrompt?: string | undefined
  /** The user's saver (default per-user SQLite, or the host's `checkpointerForUser`). */
  readonly saverFor: (did: string) => Promise<BaseCheckpointSaver>
  /** Wraps the whole turn of a user (the registry's turn gate, then the Matrix sync schedule). */
  readonly around: <A>(did: string, run: () => Promise<A>) => Promise<A>
  /** The user's invocations for the MCP servers that forward UCANs (none configured: absent). */
  readonly mcpInvocations?: ((did: string) => Promise<Record<string, string>>) | undefined
}

/** One turn to run. */
export interface TurnRequest {
  readonly did: string
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
 * Never rejects: a failing hook is logged and skipped, as in the turn.
 */
export const prepareScope = (
  deps: Pick<TurnDeps, "catalog" | "shared" | "logger">,
  request: { readonly did: string; readonly sessionId: string }
): Promise<RequestScope> =>
  makeRequestScope({
    catalog: deps.catalog,
    request: { userDid: request.did, sessionId: request.sessionId, shared: deps.shared },
    logger: deps.logger
  })

/** How a turn ended, with its time split. */
export interface TurnOutcome {
  readonly status: "answered" | "failed" | "aborted"
  readonly answer?: string | undefined
  readonly messageId?: string | undefined
  readonly error?: { readonly message: string; readonly code: string } | undefined
  readonly timings: { readonly load: number; readonly save: number; readonly agent: number }
}

/** Text a tool call gets when its turn was cancelled before it returned. */
export const CANCELLED_CALL = "Cancelled: the turn was aborted before this tool call returned."

/** Tool calls of AI messages that no ToolMessage answers. */
export const danglingCalls = (messages: ReadonlyArray<BaseMessage>) => {
  const answered = new Set<string>()
  for (const m of messages) if (ToolMessage.isInstance(m)) answered.add(m.tool_call_id)
  return messages.flatMap((m) =>
    isAIMessage(m) ? (m.tool_calls ?? []).filter((c) => c.id !== undefined && !answered.has(c.id)) : []
  )
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const codeOf = (error: unknown): string => {
  const e = error as { _tag?: unknown; reason?: unknown; name?: unknown } | null
  if (typeof e?._tag === "string") return typeof e.reason === "string" ? `${e._tag}:${e.reason}` : e._tag
  // A plain Error says nothing a client could act on; a named one (TypeError, AbortError) does.
  return typeof e?.name === "string" && e.name !== "Error" ? e.name : "turn-failed"
}

/** Marks an answer a cut-off turn kept: `response_metadata.plugboard.cutOff` (history shows it). */
export const CUT_OFF = "cutOff"

/**
 * Makes the stored conversation match what the user saw of a turn that was cut short: its
 * dangling tool calls answered as cancelled, then the answer as far as it was streamed (under the
 * turn's request id, the id the client streamed it into), marked as cut off.
 */
const repair = async (
  agent: MainAgent,
  logger: RuntimeLogger,
  partial?: { readonly text: string; readonly requestId: string }
): Promise<void> => {
  try {
    const state = await agent.getState()
    const dangling = danglingCalls(state.messages ?? [])
    const answers: Array<BaseMessage> = dangling.map(
      (c) => new ToolMessage({ content: CANCELLED_CALL, tool_call_id: c.id!, name: c.name, status: "error" })
    )
    if (partial !== undefined && partial.text.length > 0) {
      answers.push(
        new AIMessage({
          id: partial.requestId,
          content: partial.text,
          response_metadata: { plugboard: { [CUT_OFF]: true } }
        })
      )
    }
    if (answers.length === 0) return
    // As the model node: its router sees a ToolMessage (or an answer) last and ends the run there.
    await agent.graph.updateState(
      { configurable: { thread_id: agent.threadId } },
      { messages: answers },
      "model"
    )
  } catch (error) {
    logger.error("could not close the interrupted tool calls of a thread", {
      threadId: agent.threadId,
      error: describe(error)
    })
  }
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
 * Runs one turn. With `emit`, the turn is streamed and every event (`tool_call`, `message`
 * chunks) goes to it in order; without, it runs to its end (the JSON answer). Never rejects.
 */
export const runOne = (
  deps: TurnDeps,
  request: TurnRequest,
  emit?: ((event: EventSink.AgentEvent) => void) | undefined
) =>
  deps.around(request.did, async (): Promise<TurnOutcome> => {
    const storage: StorageTimings = { load: 0, save: 0 }
    const started = performance.now()
    const timings = () => {
      const total = performance.now() - started
      return {
        load: storage.load,
        save: storage.save,
        agent: Math.max(0, total - storage.load - storage.save)
      }
    }
    // The answer as streamed so far: what a cut-off turn keeps in the thread.
    let partialText = ""
    let agent: MainAgent | undefined
    let stopObserving: (() => void) | undefined
    try {
      const saver = new TimedSaver(await deps.saverFor(request.did), storage)
      agent = await createMainAgent({
        catalog: deps.catalog,
        model: deps.model,
        checkpointer: saver,
        shared: deps.shared,
        logger: deps.logger,
        ...(deps.basePrompt === undefined ? {} : { basePrompt: deps.basePrompt }),
        request: {
          did: request.did,
          sessionId: request.sessionId,
          requestId: request.requestId,
          signal: request.signal
        },
        ...(request.clientTools === undefined ? {} : { clientTools: request.clientTools }),
        ...(request.scope === undefined ? {} : { scope: request.scope })
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
      const result =
        emit === undefined
          ? await runTurn(agent, input)
          : await streamed(agent, input, (event) => {
              if (event._tag === "message") partialText += event.content
              emit(event)
            })
      return {
        status: "answered",
        answer: textOf(result.message),
        messageId: result.message.id,
        timings: timings()
      }
    } catch (error) {
      if (agent !== undefined)
        await repair(agent, deps.logger, { text: partialText, requestId: request.requestId })
      if (request.signal.aborted) return { status: "aborted", timings: timings() }
      deps.logger.error("turn failed", { sessionId: request.sessionId, error: describe(error) })
      return {
        status: "failed",
        error: { message: describe(error), code: codeOf(error) },
        timings: timings()
      }
    } finally {
      stopObserving?.()
    }
  })
