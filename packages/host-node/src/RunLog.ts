/**
 * A run's events on their way out: each is appended to the run's log (`RunStore`), then handed to
 * the turn's sink as the numbered frame the store gave back.
 *
 * - One call to the store at a time, in the order the turn emitted its events: each call is a
 *   fiber of the turn's scope, started once the previous one is done, with whatever was recorded
 *   since (one `appendAll`), so the events of one turn of the event loop go together and those
 *   that come while a call is in flight go in the next. No queue and no standing writer fiber: a
 *   turn's few calls cost about a third fewer Effect operations that way. A store that answers late (a networked one) delays the
 *   frames, never reorders them, and the `done` frame is appended once every earlier frame was.
 * - The events that are waiting when the turn ends (those recorded in the turn of
 *   the event loop that ends it: an error, a wait's announcement; or those that queued behind a
 *   slow store's call) go with `done` in one `RunStore.end`, one transaction instead of two. They
 *   are not held for it: each goes out once committed, as every frame does.
 * - A store that fails (a full disk, a database restarted) costs the rejoin, not the answer: the
 *   events still go out, without ids. From the first failed call on nothing more is appended, so
 *   no later frame takes the missing ids and a rejoin sees exactly where the log stops being
 *   whole: the run ends with a `gap` frame saying how many frames it lacks and `interrupted` with
 *   reason `log-gap` (docs/spec/pipeline.md#runs), while the live client's `done` says how the
 *   turn ended. A store still down at the end is tried again in the background for a while.
 */
import { type EventSink, RunStore } from "@plugboard/core"
import { Cause, Deferred, Duration, Effect, Fiber, Option, Runtime, Schedule, Scope } from "effect"

/** A frame on its way to a client: numbered when the run's log holds it, unnumbered when the store failed. */
export interface OutFrame {
  readonly id?: number | undefined
  readonly event: string
  readonly data: Readonly<Record<string, unknown>>
}

/** A numbered frame as SSE: the run's frame id (when it has one), then the event and its one-line JSON. */
export const frameSse = (frame: OutFrame): string =>
  `${frame.id === undefined ? "" : `id: ${frame.id}\n`}event: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`

/** An agent event as the frame it becomes. */
export const frameOf = ({ _tag, ...data }: EventSink.AgentEvent): OutFrame => ({ event: _tag, data })

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

/** One run's log: `record` from anywhere (the agent's callbacks), `end` from the turn. */
export interface RunLog {
  /** Appends the event; its frame goes to the sink once it and every earlier one are stored. */
  readonly record: (event: EventSink.AgentEvent) => void
  /** Once every recorded event is out, ends the run; succeeds with its `done` frame (the caller sends it last). */
  readonly end: (outcome: RunStore.EndOutcome) => Effect.Effect<OutFrame>
}

/**
 * Starts the log of one run in the current scope (the turn's); the gap repair, which may outlive
 * the turn, runs in `background`.
 */
export const make = (options: {
  readonly runs: RunStore.RunStoreService
  readonly did: string
  readonly runId: string
  readonly sink: (frames: ReadonlyArray<OutFrame>) => void
  readonly background: Scope.Scope
  readonly report?: RunLogReport | undefined
}): Effect.Effect<RunLog, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { runs, did, runId, sink, report = {} } = options
    // Each store call is a fiber of the turn's scope, started when the last one is done (`pump`).
    // One call at a time, so one fiber to stop when the scope closes first (a defect): not a
    // `FiberSet`, whose own acquire and release cost about as much as the calls.
    const fork = Runtime.runFork(yield* Effect.runtime<never>())
    let current: Fiber.RuntimeFiber<void> | undefined
    const runFork = (call: Effect.Effect<void>) => {
      const fiber = fork(call)
      current = fiber
      fiber.addObserver(() => {
        if (current === fiber) current = undefined
      })
    }
    yield* Scope.addFinalizer(
      yield* Effect.scope,
      Effect.suspend(() => (current === undefined ? Effect.void : Fiber.interrupt(current)))
    )
    // Frames the store did not take; from the first, nothing more is appended.
    let missed = 0
    const unnumbered = (events: ReadonlyArray<EventSink.AgentEvent>) => {
      missed += events.length
      sink(events.map(frameOf))
    }
    const append = (events: ReadonlyArray<EventSink.AgentEvent>) => {
      if (events.length === 0) return Effect.void
      if (missed > 0) return Effect.sync(() => unnumbered(events))
      return runs.appendAll(did, runId, events.map(frameOf)).pipe(
        Effect.matchCauseEffect({
          onFailure: (cause) =>
            Effect.sync(() => {
              report.onGap?.(events.length, failureText(cause))
              unnumbered(events)
            }),
          onSuccess: (frames) => Effect.sync(() => sink(frames))
        })
      )
    }
    // Written when it runs: `missed` is read then, once every frame went out.
    const endWithGap = Effect.suspend(() =>
      Effect.andThen(
        runs.append(did, runId, {
          event: RunStore.GAP_EVENT,
          data: { missed, reason: "storage-unavailable" }
        }),
        runs.end(did, runId, { status: "interrupted", reason: RunStore.LOG_GAP })
      )
    )
    const unnumberedDone = (outcome: RunStore.EndOutcome): OutFrame => frameOf({ _tag: "done", ...outcome })
    /**
     * The last events and the end: in one call when the log is whole (the store numbers them just
     * before `done`). A refused call wrote nothing (all or none), so the two calls it stands for
     * are made instead, and fail or succeed as they would have.
     */
    const finishWith = (
      events: ReadonlyArray<EventSink.AgentEvent>,
      outcome: RunStore.EndOutcome
    ): Effect.Effect<OutFrame> => {
      // Built only when run: a store's call may start when it is made (the test's slow store does).
      const separately = Effect.suspend(() => Effect.zipRight(append(events), finish(outcome)))
      if (events.length === 0 || missed > 0) return separately
      const frames = events.map(frameOf)
      return runs.end(did, runId, outcome, frames).pipe(
        Effect.map((done) => {
          const first = done.id - frames.length
          sink(frames.map((frame, i) => ({ id: first + i, ...frame })))
          return done
        }),
        Effect.orElse(() => separately)
      )
    }
    const finish = (outcome: RunStore.EndOutcome): Effect.Effect<OutFrame> => {
      if (missed === 0) {
        return runs.end(did, runId, outcome).pipe(Effect.orElseSucceed(() => unnumberedDone(outcome)))
      }
      // The live client saw every frame: its `done` says how the turn ended. The log says it has
      // a hole, in the background, tried again while the store comes back.
      return endWithGap.pipe(
        Effect.retry({
          schedule: Schedule.exponential(Duration.millis(500)),
          times: GAP_REPAIR_TRIES,
          while: (e) => e.reason === "unavailable"
        }),
        Effect.catchAllCause((cause) => Effect.sync(() => report.onRepairFailed?.(failureText(cause)))),
        Effect.forkIn(options.background),
        Effect.as(unnumberedDone(outcome))
      )
    }
    // Everything recorded since the last call goes in the next one, in order; one call at a time.
    let pending: Array<EventSink.AgentEvent> = []
    let timer: ReturnType<typeof setImmediate> | undefined
    let writing = false
    let ending:
      | { readonly outcome: RunStore.EndOutcome; readonly done: Deferred.Deferred<OutFrame> }
      | undefined
    const pump = (): void => {
      if (timer !== undefined) clearImmediate(timer)
      timer = undefined
      if (writing) return
      const events = pending
      pending = []
      if (ending !== undefined) {
        // The events not yet handed over travel with the end: committed with `done`.
        const { outcome, done } = ending
        writing = true
        runFork(Effect.asVoid(Effect.intoDeferred(finishWith(events, outcome), done)))
        return
      }
      if (events.length === 0) return
      writing = true
      runFork(
        Effect.ensuring(
          append(events),
          Effect.sync(() => {
            writing = false
            pump()
          })
        )
      )
    }
    return {
      record: (event) => {
        pending.push(event)
        // The events of one turn of the event loop go together (`setImmediate`).
        timer ??= setImmediate(pump)
      },
      end: (outcome) =>
        Effect.flatMap(Deferred.make<OutFrame>(), (done) =>
          Effect.zipRight(
            Effect.sync(() => {
              ending = { outcome, done }
              pump()
            }),
            Deferred.await(done)
          )
        )
    }
  })
