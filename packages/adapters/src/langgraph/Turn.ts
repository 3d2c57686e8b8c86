/**
 * Running one turn of a main agent: `runTurn` waits for the answer, `streamTurn` yields the
 * agent's events as they happen and then the answer (what the server writes as SSE).
 */
import { type AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages"
import type { EventSink, GraphState } from "@plugboard/core"
import type { MainAgent } from "./MainAgent.js"
import type { AgentStateValue } from "./State.js"

/** One user message and the state fields the runtime owns for this turn. */
export interface TurnInput {
  readonly message: string | HumanMessage
  readonly client?: GraphState.Client
  readonly wsId?: string
  /** Upper bound on graph steps (model + tool node visits); LangGraph's default is 25. */
  readonly recursionLimit?: number
  /**
   * When the thread is checkpointed. `exit` (default): once, when the turn ends — on success and
   * on error alike, so a failed turn still keeps the user's message; seed 002's "the final state
   * is checkpointed". `async` / `sync`: after every graph step as well (a crash mid-turn keeps
   * the steps done so far), at the price of one serialisation per step.
   */
  readonly durability?: "exit" | "async" | "sync"
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

/** The text of a message's content (string, or the text parts of content blocks). */
export const textOf = (message: BaseMessage): string => {
  const c = message.content
  if (typeof c === "string") return c
  return c
    .map((part) => (typeof part === "string" ? part : part.type === "text" ? String(part.text) : ""))
    .join("")
}

const inputOf = (agent: MainAgent, input: TurnInput) => ({
  messages: [typeof input.message === "string" ? new HumanMessage(input.message) : input.message],
  config:
    input.wsId === undefined ? { did: agent.request.did } : { did: agent.request.did, wsId: input.wsId },
  ...(input.client === undefined ? {} : { client: input.client })
})

/** Runs one turn to its end and returns the answer with the turn's events. */
export const runTurn = async (agent: MainAgent, input: TurnInput): Promise<TurnResult> => {
  const events: Array<EventSink.AgentEvent> = []
  const stop = agent.events.listen((e) => events.push(e))
  try {
    const state = (await agent.graph.invoke(inputOf(agent, input), {
      configurable: { thread_id: agent.threadId },
      durability: input.durability ?? "exit",
      ...(agent.request.signal === undefined ? {} : { signal: agent.request.signal }),
      ...(input.recursionLimit === undefined ? {} : { recursionLimit: input.recursionLimit })
    })) as AgentStateValue
    const message = state.messages.at(-1) as AIMessage
    return { answer: textOf(message), message, events, state }
  } finally {
    stop()
    // The host's sink has every event of the turn before the caller writes its `done`.
    await agent.events.flush()
  }
}

/**
 * Runs one turn, yielding each event as it is emitted and then the answer as one `message`
 * event (core's `EventSink.Message`). The caller ends its stream with `done` (or `error` then
 * `done`): only the host knows when the response is over. A failing turn
 * (e.g. a model error no middleware recovered) throws from the iterator after the events that
 * preceded it. Returns the `TurnResult` as the generator's return value.
 */
export async function* streamTurn(
  agent: MainAgent,
  input: TurnInput
): AsyncGenerator<EventSink.AgentEvent, TurnResult> {
  const queue: Array<EventSink.AgentEvent> = []
  let wake: (() => void) | undefined
  const stop = agent.events.listen((e) => {
    queue.push(e)
    wake?.()
  })
  let settled = false
  const run = runTurn(agent, input).finally(() => {
    settled = true
    wake?.()
  })
  // Keep an early rejection from being reported as unhandled while events are still drained.
  run.catch(() => {})
  try {
    while (true) {
      while (queue.length > 0) yield queue.shift()!
      if (settled) break
      await new Promise<void>((resolve) => {
        wake = resolve
      })
      wake = undefined
    }
    const result = await run
    yield { _tag: "message", content: result.answer, timestamp: new Date().toISOString() }
    return result
  } finally {
    stop()
  }
}
