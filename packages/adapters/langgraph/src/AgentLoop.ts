/**
 * The agent loop of one turn (docs/spec/pipeline.md: model call, tool calls, again until an answer)
 * as a single LangGraph node.
 *
 * Why one node rather than a model node and a tool node that route to each other: LangGraph
 * charges every superstep a fixed price that has nothing to do with the agent (planning the step's
 * tasks, a LangSmith `RunTree` for each runnable it invokes, a copy of every channel for the step's
 * checkpoint). A turn of three model calls and two tool batches was five supersteps, and that price
 * was over a third of the agent's CPU per turn (docs/benchmarks.md, Server). Here the steps run in
 * one superstep and the state is checkpointed once, when the turn ends: what the turn checkpointed
 * before (durability `exit`).
 *
 * The steps keep the graph's semantics:
 * - each step sees the state as the previous steps left it, through the channels' own reducers
 *   (`applyUpdate`);
 * - the loop returns every step's update, in order, and LangGraph applies them through the same
 *   reducers, so the checkpoint is what the two nodes would have written;
 * - a turn that fails, is aborted or runs out of steps keeps the steps it completed, as a run of the
 *   two nodes did: the loop stops there, returns those steps, and the turn throws its error once
 *   LangGraph has saved them (`TurnOutcome`);
 * - an abort ends the loop at once, even while a step is still running (a tool handler that
 *   ignores its signal runs on, its result unused), as LangGraph's own abort does;
 * - the number of steps (model calls and tool batches) is bounded by the run's `recursionLimit`,
 *   LangGraph's default 25 unless the turn sets one, and going past it throws LangGraph's
 *   `GraphRecursionError`.
 */
import { type BaseMessage, isAIMessage } from "@langchain/core/messages"
import { Command, GraphRecursionError, type LangGraphRunnableConfig } from "@langchain/langgraph"
import { type AgentStateUpdate, type AgentStateValue, applyUpdate } from "./State.js"

/** A step of the loop: the state in, the update it makes. */
export type LoopStep = (state: AgentStateValue, config?: LangGraphRunnableConfig) => Promise<AgentStateUpdate>

/** What a resumed turn fails with when its thread no longer ends at the calls that waited. */
export const STALE_RESUME =
  "This approval came too late: the conversation went on since the call asked for it, so nothing ran."

/** LangGraph's default bound on steps, which the loop keeps when the run sets none. */
const DEFAULT_RECURSION_LIMIT = 25

/**
 * Where the loop leaves the error that ended it, for the turn to throw once LangGraph has saved
 * the steps before it. One per run, passed in the run's `configurable` under `TURN_OUTCOME`.
 */
export interface TurnOutcome {
  error?: { readonly cause: unknown } | undefined
}

/** The `configurable` key of a run's `TurnOutcome`. */
export const TURN_OUTCOME = "plugboard_turn_outcome"

/** Whether the model's last answer asks for tools, so that a tool step comes next. */
const wantsTools = (state: AgentStateValue): boolean => {
  const last: BaseMessage | undefined = state.messages.at(-1)
  return last !== undefined && isAIMessage(last) && (last.tool_calls?.length ?? 0) > 0
}

/** LangGraph's error for an aborted run, so that an aborted turn fails as it did. */
const abortError = () => new Error("Abort")

/**
 * `start()`, or the abort error as soon as `signal` aborts, whichever comes first; not started at
 * all when `signal` has already aborted.
 */
const untilAborted = <A>(start: () => Promise<A>, signal: AbortSignal | undefined): Promise<A> => {
  if (signal === undefined) return start()
  if (signal.aborted) return Promise.reject(abortError())
  const step = start()
  return new Promise<A>((resolve, reject) => {
    const onAbort = () => reject(abortError())
    signal.addEventListener("abort", onAbort, { once: true })
    step.then(
      (value) => {
        signal.removeEventListener("abort", onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      }
    )
  })
}

/**
 * Builds the loop node: `model`, then `tools` while the model asks for them. `signal` is the
 * request's: the run itself is given none, so that the loop, not LangGraph, decides where an
 * aborted turn ends. A turn `resuming` a wait starts with the tools of the thread's last answer,
 * and fails (`STALE_RESUME`) when the thread no longer ends with calls.
 */
export const makeAgentLoop =
  (model: LoopStep, tools: LoopStep, signal: AbortSignal | undefined, resuming = false) =>
  async (
    state: AgentStateValue,
    config?: LangGraphRunnableConfig
  ): Promise<Array<Command> | AgentStateUpdate> => {
    const steps: Array<Command> = []
    const limit = config?.recursionLimit ?? DEFAULT_RECURSION_LIMIT
    let current = state
    const run = async (step: LoopStep) => {
      if (steps.length >= limit) {
        throw new GraphRecursionError(
          `Recursion limit of ${limit} steps reached without the agent answering; ` +
            "a turn that needs more steps can set a higher recursionLimit."
        )
      }
      const update = await untilAborted(() => step(current, config), signal)
      steps.push(new Command({ update }))
      current = applyUpdate(current, update)
    }
    try {
      // A turn that resumes a wait (docs/waiting.md) starts where the thread stopped: with the
      // tool calls of the model's last answer, which no tool step answered yet.
      if (!wantsTools(current)) {
        // The thread moved on since it stopped (a newer message): the wait's call is gone.
        if (resuming) throw new Error(STALE_RESUME)
        await run(model)
      }
      while (wantsTools(current)) {
        await run(tools)
        await run(model)
      }
    } catch (cause) {
      const outcome = config?.configurable?.[TURN_OUTCOME] as TurnOutcome | undefined
      // Outside a turn (a caller of the graph itself) the error is thrown, as a node's would be.
      if (outcome === undefined) throw cause
      outcome.error = { cause }
    }
    // LangGraph takes a list of updates only when it holds a `Command`; no step, no update.
    return steps.length > 0 ? steps : {}
  }
