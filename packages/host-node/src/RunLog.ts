/**
 * A streamed turn's events on their way out: each is appended to the run's log (`RunStore`), then
 * written to the response as the numbered frame the store gave back. The events of one turn of the
 * event loop reach the store in one `appendAll`. A store may answer later than the next events
 * come (a batched or a networked store): frames still leave in the order the turn emitted them,
 * and the `done` frame is appended only once every earlier frame was (the caller writes it, last).
 * A store that failed (a full disk, a lost connection) costs the rejoin, not the answer: the
 * events still go out, without ids.
 */
import { EventSink, type RunStore } from "@plugboard/core"
import { Effect, Exit } from "effect"

/** A numbered frame as SSE: the run's frame id, then the event and its one-line JSON. */
export const frameSse = (frame: RunStore.Frame): string =>
  `id: ${frame.id}\nevent: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`

interface Slot {
  sse: string | undefined
}

/** Events recorded in one turn of the event loop, on their way to the store as one `appendAll`. */
interface Batch {
  readonly slots: Array<Slot>
  readonly events: Array<EventSink.AgentEvent>
}

/** Appends, in order, one run's events and writes them with `write`; see the module doc. */
export const makeRunLog = (
  runs: RunStore.RunStoreService,
  did: string,
  runId: string,
  write: (sse: string) => void
) => {
  const queue: Array<Slot> = []
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
  const send = () => {
    const { slots, events } = batch!
    batch = undefined
    const frames = events.map(({ _tag, ...data }) => ({ event: _tag, data }))
    Effect.runCallback(runs.appendAll(did, runId, frames), {
      onExit: (exit) => {
        slots.forEach((slot, i) => {
          slot.sse = Exit.isSuccess(exit) ? frameSse(exit.value[i]!) : EventSink.toSse(events[i]!)
        })
        drain()
      }
    })
  }
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
