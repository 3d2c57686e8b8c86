/**
 * A streamed turn's events on their way out: each is appended to the run's log (`RunStore`), then
 * written to the response as the numbered frame the store gave back.
 *
 * - One call to the store at a time, in the order the turn emitted its events: the events of one
 *   turn of the event loop go in one `appendAll`, and those that come while a call is in flight go
 *   together in the next. A store that answers late (a networked one) delays the frames, never
 *   reorders them, and the `done` frame is appended once every earlier frame was (the caller
 *   writes it, last).
 * - A store that fails (a full disk, a database restarted) costs the rejoin, not the answer: the
 *   events still go out, without ids. From the first failed call on nothing more is appended, so
 *   no later frame takes the missing ids and a rejoin sees exactly where the log stops being
 *   whole: the run ends with a `gap` frame saying how many frames it lacks and `interrupted` with
 *   reason `log-gap` (docs/spec/pipeline.md#runs), while the live client's `done` says how the
 *   turn ended. A store still down at the end is tried again in the background for a while.
 */
import { EventSink, RunStore } from "@plugboard/core"
import { Cause, Duration, Effect, Exit, Option, Schedule } from "effect"

/** A numbered frame as SSE: the run's frame id, then the event and its one-line JSON. */
export const frameSse = (frame: RunStore.Frame): string =>
  `id: ${frame.id}\nevent: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`

/** Tries at writing a run's `gap` and `done` when its store is down at the end (from 0.5 s, doubling: about 2 min). */
export const GAP_REPAIR_TRIES = 8

/** What a run log reports when its store fails; the host logs it. */
export interface RunLogReport {
  /** The first failed append: `missed` frames went out without ids, and so will every later one. */
  readonly onGap?: ((missed: number, error: string) => void) | undefined
  /** The gap and the run's end could not be written after every try. */
  readonly onRepairFailed?: ((error: string) => void) | undefined
}

/** A failed store call in a sentence: the port's message, not a stack. */
const failureText = (cause: Cause.Cause<RunStore.RunStoreError>): string =>
  Option.match(Cause.failureOption(cause), { onNone: () => Cause.pretty(cause), onSome: (e) => e.message })

interface Slot {
  sse: string | undefined
}

/** Appends, in order, one run's events and writes them with `write`; see the module doc. */
export const makeRunLog = (
  runs: RunStore.RunStoreService,
  did: string,
  runId: string,
  write: (sse: string) => void,
  report: RunLogReport = {}
) => {
  // Every recorded event's frame, in emission order, until written.
  const queue: Array<Slot> = []
  // Recorded, not yet sent to the store.
  let pending: { slots: Array<Slot>; events: Array<EventSink.AgentEvent> } = { slots: [], events: [] }
  let scheduled = false
  let inFlight = false
  // Frames the store did not take; from the first, nothing more is appended.
  let missed = 0
  let drained: (() => void) | undefined

  // Frames stored together are written together: one socket write, not one per frame.
  const drain = () => {
    let out = ""
    while (queue.length > 0 && queue[0]!.sse !== undefined) out += queue.shift()!.sse!
    if (out.length > 0) write(out)
    if (queue.length === 0) drained?.()
  }
  const unnumbered = (slots: ReadonlyArray<Slot>, events: ReadonlyArray<EventSink.AgentEvent>) => {
    missed += events.length
    slots.forEach((slot, i) => {
      slot.sse = EventSink.toSse(events[i]!)
    })
    drain()
  }
  const send = () => {
    scheduled = false
    if (inFlight || pending.events.length === 0) return
    const { slots, events } = pending
    pending = { slots: [], events: [] }
    if (missed > 0) return unnumbered(slots, events)
    inFlight = true
    const frames = events.map(({ _tag, ...data }) => ({ event: _tag, data }))
    Effect.runCallback(runs.appendAll(did, runId, frames), {
      onExit: (exit) => {
        inFlight = false
        if (Exit.isFailure(exit)) {
          report.onGap?.(events.length, failureText(exit.cause))
          unnumbered(slots, events)
        } else {
          slots.forEach((slot, i) => {
            slot.sse = frameSse(exit.value[i]!)
          })
          drain()
        }
        // What was recorded meanwhile goes next, in one call.
        send()
      }
    })
  }
  // Written when it runs: `missed` is read then, once every frame went out.
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
      pending.slots.push(slot)
      pending.events.push(event)
      // The rest of this turn of the event loop joins the same call.
      if (!scheduled && !inFlight) {
        scheduled = true
        setImmediate(send)
      }
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
        // has a hole, in the background, tried again while the store comes back.
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
