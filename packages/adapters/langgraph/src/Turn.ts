/**
 * Running one turn of a main agent: `runTurn` waits for the answer, `streamTurn` yields the
 * agent's events as they happen and then the answer (what the server writes as SSE).
 */
import { type AIMessage, HumanMessage } from "@langchain/core/messages"
import type { EventSink, GraphState } from "@plugboard/core"
import { TURN_OUTCOME, type TurnOutcome } from "./AgentLoop.js"
import { WaitNeeded } from "./Approvals.js"
import { repairCutOff } from "./CutOff.js"
import type { MainAgent } from "./MainAgent.js"
import { INTERRUPTED_CALL } from "./ModelNode.js"
import { STREAM_TEXT, textOf } from "./ModelStream.js"
import type { AgentStateValue } from "./State.js"
import { type HeldThread, holdThread } from "./ThreadLock.js"

export { textOf }

/** One user message and the state fields the runtime owns for this turn. */
export interface TurnInput {
  /**
   * The user's message. Absent, the turn adds none: it resumes a thread that stopped at its
   * model's tool calls (a wait for approval, `Approvals.ts`), starting with those calls.
   */
  readonly message?: string | HumanMessage | undefined
  readonly client?: GraphState.Client
  readonly wsId?: string
  /** The client's browser tools of this turn, stored in the thread's `browserTools`. */
  readonly browserTools?: ReadonlyArray<GraphState.BrowserToolCallDto>
  /** The client's AG-UI actions of this turn, stored in the thread's `agActions`. */
  readonly agActions?: ReadonlyArray<GraphState.AgActionDto>
  /**
   * The user's invocations for the MCP servers that forward UCANs, minted by the host for this
   * turn; merged into the thread's `mcpUcanContext.invocations` (one per server, newest wins).
   */
  readonly mcpUcanContext?: GraphState.GraphState["mcpUcanContext"]
  /** Upper bound on the agent loop's steps (model calls and tool batches); LangGraph's default is 25. */
  readonly recursionLimit?: number
}

/** What a turn produced. */
export interface TurnResult {
  /** The final answer's text. */
  readonly answer: string
  readonly message: AIMessage
  /** The events of this turn, in emission order. */
  readonly events: ReadonlyArray<EventSink.AgentEvent>
  /** The state after the turn (as checkpointed). */
  readonly state: AgentStateValue
}

const inputOf = (agent: MainAgent, input: TurnInput) => ({
  messages:
    input.message === undefined
      ? []
      : [typeof input.message === "string" ? new HumanMessage(input.message) : input.message],
  config:
    input.wsId === undefined ? { did: agent.request.did } : { did: agent.request.did, wsId: input.wsId },
  ...(input.client === undefined ? {} : { client: input.client }),
  ...(input.browserTools === undefined ? {} : { browserTools: input.browserTools }),
  ...(input.agActions === undefined ? {} : { agActions: input.agActions }),
  ...(input.mcpUcanContext === undefined ? {} : { mcpUcanContext: input.mcpUcanContext })
})

/**
 * The run's config. The thread is checkpointed once, when the turn ends (durability `exit`), on
 * success and on error alike, so a failed turn still keeps the user's message and the steps it
 * completed (docs/spec/pipeline.md#the-stages). The request's signal is the agent loop's, not the
 * run's (`AgentLoop.ts`): the loop ends an aborted turn and hands its error over in `outcome`.
 */
const runConfig = (agent: MainAgent, input: TurnInput, outcome: TurnOutcome) => ({
  configurable: { thread_id: agent.threadId, [TURN_OUTCOME]: outcome },
  durability: "exit" as const,
  ...(input.recursionLimit === undefined ? {} : { recursionLimit: input.recursionLimit })
})

/** Throws the error that ended the agent loop, once the run has saved the steps before it. */
const throwIfFailed = (outcome: TurnOutcome): void => {
  if (outcome.error !== undefined) throw outcome.error.cause
}

/**
 * Takes the thread for one turn: the thread's lock (`ThreadLock.ts`), after which a read the host
 * prefetched is still the thread's state only if no other turn ran meanwhile.
 */
const beginTurn = async (agent: MainAgent): Promise<HeldThread> => {
  const held = await holdThread(agent.threadLock, agent.request.signal)
  if (held.waited) agent.saver.dropPrefetch()
  return held
}

/**
 * Ends a turn inside its lock: its writes landed, and when it was cut short (`partialText` is
 * then what the user saw of its answer) the thread repaired to match (`CutOff.ts`); then the
 * session's next turn may start.
 */
const endTurn = async (
  agent: MainAgent,
  held: HeldThread,
  cut: { readonly partialText: string } | undefined
): Promise<void> => {
  try {
    await agent.saver.settled()
    if (cut !== undefined) {
      await repairCutOff(agent, agent.logger, cut.partialText)
      await agent.saver.settled()
    }
  } finally {
    await held.release()
  }
}

/**
 * Runs one turn to its end and returns the answer with the turn's events. A turn of a thread
 * that another turn is running waits for it to end, then starts from the state it saved
 * (`ThreadLock.ts`). A turn that fails or is aborted leaves no tool call unanswered in the thread.
 */
export const runTurn = async (agent: MainAgent, input: TurnInput): Promise<TurnResult> => {
  const events: Array<EventSink.AgentEvent> = []
  const held = await beginTurn(agent)
  const stop = agent.events.listen((e) => events.push(e))
  let completed = false
  try {
    const outcome: TurnOutcome = {}
    const state = (await agent.graph.invoke(
      inputOf(agent, input),
      runConfig(agent, input, outcome)
    )) as AgentStateValue
    throwIfFailed(outcome)
    const message = state.messages.at(-1) as AIMessage
    completed = true
    return { answer: textOf(message), message, events, state }
  } catch (error) {
    // A turn that waits is not cut: its thread keeps the calls that wait, unanswered.
    if (error instanceof WaitNeeded) completed = true
    throw error
  } finally {
    // An aborted turn ends while handlers may still run: their calls end now, for this turn.
    agent.events.interrupt(INTERRUPTED_CALL)
    stop()
    await endTurn(agent, held, completed ? undefined : { partialText: "" })
    // The host's sink has every event of the turn before the caller writes its `done`.
    await agent.events.flush()
  }
}

/**
 * Runs one turn as a stream: each model call's `reasoning` (when its provider exposed any), each
 * `tool_call` event when it happens, and the assistant's text as `message` events (core's
 * `EventSink.Message`) — token chunks when the model streams, the whole text when it does not
 * (or when a middleware recovered an error) — all in one order: the model step writes them to
 * the turn's custom stream (`ModelStream.ts`). The host's `eventSink` receives the `reasoning`
 * and `tool_call` events as well, so a host writes either the sink or this stream to its client,
 * not both. The caller ends its response with `done` (or `error` then `done`). Like `runTurn`, it
 * waits for any running turn of the thread; it holds the thread until consumed to its end or
 * closed (`return()`, as `break` in `for await` does), and a turn cut short keeps the text it
 * streamed (`CutOff.ts`). A failing turn throws from the iterator after the events that preceded
 * it. Returns the `TurnResult` as the generator's return value.
 */
export async function* streamTurn(
  agent: MainAgent,
  input: TurnInput
): AsyncGenerator<EventSink.AgentEvent, TurnResult> {
  const events: Array<EventSink.AgentEvent> = []
  let state: AgentStateValue | undefined
  // The answer as streamed so far: what a turn cut short keeps in the thread.
  let partialText = ""
  const thread = await beginTurn(agent)
  let completed = false
  try {
    const outcome: TurnOutcome = {}
    const config = runConfig(agent, input, outcome)
    const stream = await agent.graph.stream(inputOf(agent, input), {
      ...config,
      configurable: { ...config.configurable, [STREAM_TEXT]: true },
      streamMode: ["custom", "values"]
    })
    for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
      if (mode === "custom") {
        const event = chunk as EventSink.AgentEvent
        // The answer's chunks are the stream's; the result's events are the agent's (as runTurn's).
        if (event._tag === "message") partialText += event.content
        else events.push(event)
        yield event
      } else if (mode === "values") {
        state = chunk as AgentStateValue
      }
    }
    throwIfFailed(outcome)
    completed = true
  } catch (error) {
    // A turn that waits is not cut: its thread keeps the calls that wait, unanswered.
    if (error instanceof WaitNeeded) completed = true
    // An aborted turn ends while handlers may still run: their calls end in the stream too,
    // before the error (and in the sink, as every event).
    for (const event of agent.events.interrupt(INTERRUPTED_CALL)) {
      events.push(event)
      yield event
    }
    throw error
  } finally {
    // Also when the consumer stops early: the sink and listeners still see every call end.
    agent.events.interrupt(INTERRUPTED_CALL)
    await endTurn(agent, thread, completed ? undefined : { partialText })
    await agent.events.flush()
  }
  if (state === undefined) throw new Error("the turn ended without a state")
  const last = state.messages.at(-1) as AIMessage
  return { answer: textOf(last), message: last, events, state }
}
