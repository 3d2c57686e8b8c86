/**
 * A streamed turn's events on their way out: each is appended to the run's log (`RunStore`), then
 * written to the response as the numbered frame the store gave back. The events of one turn of the
 * event loop reach the store in one `appendAll`. A store may answer later than the next events
 * come (a batched or a networked store): frames still leave in the order the turn emitted them,
 * and the `done` frame is appended only once every earlier frame was (the caller writes it, last).
 * A store that failed (a full disk, a lost connection) costs the rejoin, not the answer: the
 * events still go out, without ids. From the first failed append on, the run's log is left as it
 * was (a later frame must not take the next id, or a rejoin could not tell anything is missing):
 * the run ends with a `gap` frame saying how many frames it lacks, and `interrupted` with reason
 * `log-gap` (docs/spec/pipeline.md#runs), while the live client's `done` says how the turn ended.
 * When the store is still down at the end, that is retried in the background for a while.
 */
import { EventSink, RunStore } from "@plugboard/core"
import { Cause, Duration, Effect, Exit, Option, Schedule } from "effect"

/** A numbered frame as SSE: the run's frame id, then the event and its one-line JSON. */
export const frameSse = (frame: RunStore.Frame): string =>
  `id: ${frame.id}\nevent: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`

/** A failed store call in a sentence: the port's message, not a stack. */
const failureText = (cause: Cause.Cause<RunStore.RunStoreError>): string =>
  Option.match(Cause.failureOption(cause), { onNone: () => Cause.pretty(cause), onSome: (e) => e.message })

interface Slot {
  sse: string | undefined
}

/** Events recorded in one turn of the event loop, on their way to the store as one `appendAll`. */
interface Batch {
  readonly slots: Array<Slot>
  readonly events: Array<EventSink.AgentEvent>
}

/** How long a run whose log has a gap keeps trying to write its `gap` and `done` (from 0.5 s, doubling). */
export const GAP_REPAIR_TRIES = 8

/** What a run log reports when its store fails; the host logs it. */
export interface RunLogReport {
  readonly onGap?: ((missed: number, error: string) => void) | undefined
  readonly onRepairFailed?: ((error: string) => void) | undefined
}

/** Appends, in order, one run's events and writes them with `write`; see the module doc. */
export const makeRunLog = (
  runs: RunStore.RunStoreService,
  did: string,
  runId: string,
  write: (sse: string) => void,
  report: RunLogReport = {}
) => {
  const queue: Array<Slot> = []
  // Frames the store did not take; from the first, nothing more is appended.
  let missed = 0
  let drained: (() => void) | undefined
  let batch: Batch | undefined
  // Frames stored together are written together: one socket write, not one per frame.
  const drain = () => {
    let out = ""
    while (queue.length > 0 && queue[0]!.sse !== undefined) out += queue.shift()!.sse!
    if (out.length > 0) write(out)
    if (queue.length === 0) drained?.()
  }
  // The events of one turn of the event loop reach the store in one call (one fiber, and for a
  // batching store one commit): a turn emits its events in bursts (a tool's `isRunning` and
  // `done`, a model's chunks), and a call per event was most of the run log's cost.
  const unnumbered = (slots: ReadonlyArray<Slot>, events: ReadonlyArray<EventSink.AgentEvent>) => {
    missed += events.length
    slots.forEach((slot, i) => {
      slot.sse = EventSink.toSse(events[i]!)
    })
    drain()
  }
  const send = () => {
    const { slots, events } = batch!
    batch = undefined
    // A batch sent while an earlier one is in flight may still be stored; one after a failure is not.
    if (missed > 0) return unnumbered(slots, events)
    const frames = events.map(({ _tag, ...data }) => ({ event: _tag, data }))
    Effect.runCallback(runs.appendAll(did, runId, frames), {
      onExit: (exit) => {
        if (Exit.isFailure(exit) || missed > 0) {
          if (missed === 0) report.onGap?.(events.length, Exit.isFailure(exit) ? failureText(exit.cause) : "")
          // A batch stored after an earlier one failed is past the hole: it counts as missed too,
          // and the gap frame says where the log stops being whole.
          return unnumbered(slots, events)
        }
        slots.forEach((slot, i) => {
          slot.sse = frameSse(exit.value[i]!)
        })
        drain()
      }
    })
  }
  // The log's repair when it has a gap: the gap frame, then the run ended `interrupted`.
  // Built when it runs: `missed` is read then, once every frame went out.
  const endWithGap = Effect.suspend(() =>
    Effect.andThen(
      runs.append(did, runId, { event: RunStore.GAP_EVENT, data: { missed, reason: "storage-unavailable" } }),
      runs.end(did, runId, { status: "interrupted", reason: RunStore.LOG_GAP })
    )
  )
  return {
    /** Appends the event and writes its frame once it and every earlier one are stored. */
    record: (event: EventSink.AgentEvent): void => {
      const slot: Slot = { sse: undefined }
      queue.push(slot)
      if (batch === undefined) {
        batch = { slots: [], events: [] }
        setImmediate(send)
      }
      batch.slots.push(slot)
      batch.events.push(event)
    },
    /**
     * Once every recorded event is out, ends the run; resolves with its `done` frame, which the
     * caller writes as the stream's last bytes (with the stream's end, in one socket write).
     */
    end: async (outcome: RunStore.EndOutcome): Promise<string> => {
      if (queue.length > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve
        })
      }
      if (missed > 0) {
        // The live client saw every frame: its `done` says how the turn ended. The log says it
        // has a hole, in the background, retried while the store comes back.
        Effect.runCallback(
          endWithGap.pipe(
            Effect.retry({
              schedule: Schedule.exponential(Duration.millis(500)),
              times: GAP_REPAIR_TRIES,
              while: (e) => e.reason === "unavailable"
            })
          ),
          { onExit: (exit) => Exit.isFailure(exit) && report.onRepairFailed?.(failureText(exit.cause)) }
        )
        return EventSink.toSse({ _tag: "done", ...outcome })
      }
      return new Promise<string>((resolve) => {
        Effect.runCallback(runs.end(did, runId, outcome), {
          onExit: (exit) =>
            resolve(
              Exit.isSuccess(exit) ? frameSse(exit.value) : EventSink.toSse({ _tag: "done", ...outcome })
            )
        })
      })
    }
  }
}
