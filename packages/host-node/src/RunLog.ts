/**
 * A streamed turn's events on their way out: each is appended to the run's log (`RunStore`), then
 * written to the response as the numbered frame the store gave back. A store may answer later
 * than the next event comes (a batched or a networked store): frames still leave in the order the
 * turn emitted them, and the `done` frame is appended only once every earlier frame was. A store
 * that failed (a full disk, a lost connection) costs the rejoin, not the answer: the event still
 * goes out, without an id.
 */
import { EventSink, type RunStore } from "@plugboard/core"
import { Effect, Exit } from "effect"

/** A numbered frame as SSE: the run's frame id, then the event and its one-line JSON. */
export const frameSse = (frame: RunStore.Frame): string =>
  `id: ${frame.id}\nevent: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`

interface Slot {
  sse: string | undefined
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
  let draining = false
  // Frames stored together (a store commits a turn of the event loop's appends as one group) are
  // written together: one socket write, not one per frame.
  const drain = () => {
    draining = false
    let out = ""
    while (queue.length > 0 && queue[0]!.sse !== undefined) out += queue.shift()!.sse!
    if (out.length > 0) write(out)
    if (queue.length === 0) drained?.()
  }
  /** Runs `effect` (a store call) and settles `slot` with the frame it stored, or `fallback`. */
  const settle = (slot: Slot, effect: Effect.Effect<RunStore.Frame, unknown>, fallback: string) => {
    queue.push(slot)
    Effect.runCallback(effect, {
      onExit: (exit) => {
        slot.sse = Exit.isSuccess(exit) ? frameSse(exit.value) : fallback
        if (!draining) {
          draining = true
          setImmediate(drain)
        }
      }
    })
  }
  return {
    /** Appends the event and writes its frame once it and every earlier one are stored. */
    record: (event: EventSink.AgentEvent): void => {
      const { _tag, ...data } = event
      settle({ sse: undefined }, runs.append(did, runId, { event: _tag, data }), EventSink.toSse(event))
    },
    /** Once every recorded event is out, ends the run and writes its `done` frame. */
    end: async (outcome: RunStore.EndOutcome): Promise<void> => {
      if (queue.length > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve
        })
      }
      await new Promise<void>((resolve) => {
        drained = resolve
        settle(
          { sse: undefined },
          runs.end(did, runId, outcome),
          EventSink.toSse({ _tag: "done", ...outcome })
        )
      })
    }
  }
}
