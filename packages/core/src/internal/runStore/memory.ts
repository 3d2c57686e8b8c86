/**
 * The in-memory RunStore: the reference implementation, run against the same conformance suite as
 * every store.
 */
import { Effect, Layer, Option, Stream } from "effect"
import { Clock } from "../../Clock.js"
import { followLog, type LogSlice, makeNotifier } from "./follow.js"
import {
  DONE_EVENT,
  type EndOutcome,
  type Frame,
  type FrameInput,
  isActive,
  type Run,
  type RunRef,
  RunStore,
  type RunStoreError,
  type RunStoreService
} from "./port.js"
import {
  appendOne,
  doneData,
  ended,
  invalid,
  type NormalizedFrame,
  notFound,
  validateAfter,
  validateAppend,
  validateDid,
  validateEnd,
  validateId,
  validateNewRun,
  validateRetention
} from "./validation.js"

interface MemoryRun {
  run: Run
  readonly frames: Array<Frame>
}

/**
 * Builds the in-memory RunStore (state lives as long as the returned service). Each operation
 * reads the clock, then does its whole check-and-change in one synchronous step, so concurrent
 * fibers cannot interleave inside it.
 */
export const makeMemory: Effect.Effect<RunStoreService, never, Clock> = Effect.gen(function* () {
  const clock = yield* Clock
  const notifier = makeNotifier()
  // did → runId → run
  const users = new Map<string, Map<string, MemoryRun>>()

  const lookup = (did: string, runId: string): Effect.Effect<MemoryRun, RunStoreError> =>
    Effect.suspend(() => {
      const entry = users.get(did)?.get(runId)
      return entry === undefined ? Effect.fail(notFound(runId)) : Effect.succeed(entry)
    })

  const ids = (did: string, runId: string) => Effect.all([validateDid(did), validateId("runId", runId)])

  /** Appends `frames` (already checked), then the `done` frame, and ends the run. */
  const endEntry = (
    entry: MemoryRun,
    outcome: EndOutcome,
    now: number,
    frames: ReadonlyArray<NormalizedFrame> = []
  ): Frame => {
    const status = outcome.status
    const run = entry.run
    const partialText = run.partialText + frames.map((f) => f.text).join("")
    frames.forEach((frame, i) => {
      entry.frames.push({ id: run.lastFrameId + 1 + i, event: frame.event, data: frame.data })
    })
    const done: Frame = {
      id: run.lastFrameId + frames.length + 1,
      event: DONE_EVENT,
      data: doneData(outcome, partialText)
    }
    entry.frames.push(done)
    entry.run = { ...run, status, lastFrameId: done.id, partialText, updatedAt: now, endedAt: now }
    notifier.publish(run.did, run.runId, done.id)
    return done
  }

  const read = (did: string, runId: string, after: number): Effect.Effect<LogSlice, RunStoreError> =>
    Effect.map(lookup(did, runId), (entry) => ({
      // Ids are dense from 1, so the frames above `after` start at index `after`.
      frames: entry.frames.slice(after),
      ended: !isActive(entry.run.status),
      lastFrameId: entry.run.lastFrameId
    }))

  const appendFrames = (did: string, runId: string, inputs: ReadonlyArray<FrameInput>) =>
    Effect.gen(function* () {
      const { did: d, runId: id, frames } = yield* validateAppend(did, runId, inputs)
      if (frames.length === 0) return []
      const now = yield* clock.now()
      const entry = yield* lookup(d, id)
      const run = entry.run
      if (!isActive(run.status)) return yield* Effect.fail(ended(id, run.status))
      const stored = frames.map(
        (frame, i): Frame => ({ id: run.lastFrameId + 1 + i, event: frame.event, data: frame.data })
      )
      entry.frames.push(...stored)
      entry.run = {
        ...run,
        lastFrameId: run.lastFrameId + stored.length,
        partialText: run.partialText + frames.map((f) => f.text).join(""),
        updatedAt: now
      }
      notifier.publish(d, id, entry.run.lastFrameId)
      return stored
    })

  const service: RunStoreService = {
    create: (input) =>
      Effect.gen(function* () {
        const now = yield* clock.now()
        const run = yield* validateNewRun(input, now)
        return yield* Effect.suspend(() => {
          let runs = users.get(run.did)
          if (runs === undefined) {
            runs = new Map()
            users.set(run.did, runs)
          }
          if (runs.has(run.runId)) return Effect.fail(invalid(`Run '${run.runId}' already exists`))
          runs.set(run.runId, { run, frames: [] })
          return Effect.succeed(run)
        })
      }),
    start: (did, runId) =>
      Effect.gen(function* () {
        const [d, id] = yield* ids(did, runId)
        const now = yield* clock.now()
        const entry = yield* lookup(d, id)
        const status = entry.run.status
        if (!isActive(status)) return yield* Effect.fail(ended(id, status))
        if (status === "running") return yield* Effect.fail(invalid(`Run '${id}' is already running`))
        entry.run = { ...entry.run, status: "running", updatedAt: now }
        return entry.run
      }),
    append: appendOne(appendFrames),
    appendAll: appendFrames,
    end: (did, runId, outcome, frames) =>
      Effect.gen(function* () {
        const checked = yield* validateEnd(did, runId, outcome, frames)
        const now = yield* clock.now()
        const entry = yield* lookup(checked.did, checked.runId)
        if (!isActive(entry.run.status)) return yield* Effect.fail(ended(checked.runId, entry.run.status))
        return endEntry(entry, checked.outcome, now, checked.frames)
      }),
    get: (did, runId) =>
      Effect.map(ids(did, runId), ([d, id]) =>
        Option.map(Option.fromNullable(users.get(d)?.get(id)), (e) => e.run)
      ),
    frames: (did, runId, after) =>
      Effect.flatMap(Effect.all([ids(did, runId), validateAfter(after)]), ([[d, id], a]) =>
        Effect.map(read(d, id, a), (slice) => slice.frames)
      ),
    follow: (did, runId, after) =>
      Stream.unwrap(
        Effect.map(Effect.all([ids(did, runId), validateAfter(after)]), ([[d, id], a]) =>
          followLog(a, { read: (cursor) => read(d, id, cursor), subscribe: notifier.subscribe(d, id) })
        )
      ),
    activeForSession: (did, sessionId) =>
      Effect.map(Effect.all([validateDid(did), validateId("sessionId", sessionId)]), ([d, s]) => {
        let newest: Run | undefined
        for (const { run } of users.get(d)?.values() ?? []) {
          if (
            run.sessionId === s &&
            isActive(run.status) &&
            (newest === undefined || run.createdAt >= newest.createdAt)
          ) {
            newest = run
          }
        }
        return Option.fromNullable(newest)
      }),
    interruptUnfinished: () =>
      Effect.map(clock.now(), (now) => {
        const ended: Array<RunRef> = []
        for (const runs of users.values()) {
          for (const entry of runs.values()) {
            if (isActive(entry.run.status)) {
              endEntry(entry, { status: "interrupted", reason: "restart" }, now)
              ended.push({ did: entry.run.did, runId: entry.run.runId })
            }
          }
        }
        return ended
      }),
    deleteSession: (did, sessionId) =>
      Effect.map(Effect.all([validateDid(did), validateId("sessionId", sessionId)]), ([d, s]) => {
        const runs = users.get(d)
        let count = 0
        for (const [runId, { run }] of runs ?? []) {
          if (run.sessionId !== s) continue
          runs!.delete(runId)
          notifier.publish(d, runId, run.lastFrameId)
          count++
        }
        if (runs?.size === 0) users.delete(d)
        return count
      }),
    prune: (olderThanMs) =>
      Effect.flatMap(validateRetention(olderThanMs), (retention) =>
        Effect.map(clock.now(), (now) => {
          let count = 0
          for (const [did, runs] of users) {
            for (const [runId, { run }] of runs) {
              if (run.endedAt !== undefined && run.endedAt < now - retention) {
                runs.delete(runId)
                count++
              }
            }
            if (runs.size === 0) users.delete(did)
          }
          return count
        })
      )
  }
  return service
})

/** The in-memory RunStore as a layer (needs a `Clock`). */
export const layerMemory: Layer.Layer<RunStore, never, Clock> = Layer.effect(RunStore, makeMemory)
