/**
 * After a crash (docs/architecture.md "After a crash"): a turn saves its thread when it ends, so
 * a host killed mid-turn leaves the user's question and the answer as far as it streamed in the
 * run's log only. When that run is ended `interrupted` (the boot sweep on one host, a reap of a
 * dead host's run on many), this puts both back in the thread: the question (the run's `run`
 * frame carries it) with the id the turn gave it (`user-<runId>`), then the partial answer, marked
 * cut off as any cut turn's is. A thread that already has the question (the turn saved before the
 * host died) is left as it is, so a repair runs at most once per run.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import type { Catalog, Checkpointer, RunStore, RuntimeLogger } from "@plugboard/core"
import { CUT_OFF, createMainAgent } from "@plugboard/langgraph"
import { Cause, Effect, Option } from "effect"

/** The id a run's user message has in the thread. */
export const userMessageId = (runId: string): string => `user-${runId}`

/** What a repair uses. */
export interface ThreadRepairDeps {
  readonly runs: RunStore.RunStoreService
  readonly saverFor: (did: string) => Effect.Effect<BaseCheckpointSaver, Checkpointer.CheckpointerError>
  readonly catalog: Catalog.Catalog
  readonly model: BaseChatModel
  readonly logger: RuntimeLogger
}

/** The user's message a run answers, from its `run` frame (absent on runs older than the field). */
const questionOf = (frames: ReadonlyArray<RunStore.Frame>): string | undefined => {
  const first = frames.find((f) => f.event === "run")
  return typeof first?.data.message === "string" ? first.data.message : undefined
}

/** Puts an interrupted run's question and partial answer back in its thread; never fails (logged). */
export const repairRun = (deps: ThreadRepairDeps, ref: RunStore.RunRef): Effect.Effect<void> =>
  Effect.gen(function* () {
    const found = yield* deps.runs.get(ref.did, ref.runId)
    if (Option.isNone(found) || found.value.status !== "interrupted") return
    const run = found.value
    const question = questionOf(yield* deps.runs.frames(run.did, run.runId, 0))
    if (question === undefined) return
    const saver = yield* deps.saverFor(run.did)
    yield* Effect.tryPromise(async () => {
      // The agent's graph writes the thread as a turn would (its reducers, its serializer).
      const agent = await createMainAgent({
        catalog: deps.catalog,
        model: deps.model,
        checkpointer: saver,
        threadLock: false,
        logger: deps.logger,
        request: { did: run.did, sessionId: run.sessionId, requestId: run.requestId }
      })
      const id = userMessageId(run.runId)
      const state = await agent.getState()
      if ((state.messages ?? []).some((m) => m.id === id)) return
      const messages: Array<BaseMessage> = [new HumanMessage({ id, content: question })]
      if (run.partialText.length > 0) {
        messages.push(
          new AIMessage({
            id: run.requestId,
            content: run.partialText,
            response_metadata: { plugboard: { [CUT_OFF]: true } }
          })
        )
      }
      await agent.graph.updateState(
        { configurable: { thread_id: run.sessionId } },
        { messages, config: { did: run.did } },
        "agent"
      )
    })
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.sync(() =>
        deps.logger.error("an interrupted run's question could not be put back in its thread", {
          runId: ref.runId,
          error: Cause.pretty(cause).slice(0, 500)
        })
      )
    )
  )

/** Repairs the threads of the runs the boot sweep ended, one after the other. */
export const repairRuns = (
  deps: ThreadRepairDeps,
  refs: ReadonlyArray<RunStore.RunRef>
): Effect.Effect<void> => Effect.forEach(refs, (ref) => repairRun(deps, ref), { discard: true })
