/**
 * Following a run's log, shared by every RunStore implementation, so the no-skip/no-duplicate
 * argument is made once (the comment below makes it).
 */
import { Chunk, Deferred, Effect, Exit, FiberId, Option, type Scope, Stream } from "effect"
import { DONE_EVENT, type Frame, type RunStoreError } from "./port.js"
import { invalid } from "./validation.js"

// Following a log: shared by every implementation, so the no-skip/no-duplicate argument is
// made once. A follower subscribes to wake-ups *before* its first read; it then reads from its
// cursor whenever it is woken. An append committed before the subscription is found by a read,
// one committed after it wakes the follower, and a read always asks for ids above the cursor,
// so no frame can be missed or emitted twice.

/** What a follower reads each time: the frames above its cursor and whether the run ended. */
export interface LogSlice {
  readonly frames: ReadonlyArray<Frame>
  readonly ended: boolean
  readonly lastFrameId: number
}

/** A follower's registration with a `FrameNotifier`. */
export interface FrameSubscription {
  /** Completes once a frame above `after` was published (at once if one already was). */
  readonly awaitBeyond: (after: number) => Effect.Effect<void>
}

/**
 * In-process wake-ups for followers. An implementation calls `publish` after a frame (or the
 * end) is committed; a follower `subscribe`s for the life of its stream. Only runs with a
 * follower take memory. A store shared by several processes also needs a cross-process signal.
 */
export interface FrameNotifier {
  readonly publish: (did: string, runId: string, lastFrameId: number) => void
  readonly subscribe: (did: string, runId: string) => Effect.Effect<FrameSubscription, never, Scope.Scope>
}

/**
 * Wake-ups across processes, for a run store shared by several hosts: the host that commits a
 * frame (or the end) `publish`es it, and a host with a follower of that run `subscribe`s for the
 * life of the follow (docs/deployment.md: Redis pub/sub when `REDIS_URL` is set).
 * `key` is whatever the store keys runs by. A wake-up only makes a follower re-read the store,
 * which stays the source of truth, so a lost message delays a follower (until its poll) but
 * never skips or repeats a frame. `publish` also wakes this process's followers, and never fails.
 */
export interface FrameFanout {
  readonly publish: (key: string, runId: string, lastFrameId: number) => Effect.Effect<void>
  readonly subscribe: (key: string, runId: string) => Effect.Effect<FrameSubscription, never, Scope.Scope>
}

interface Watch {
  latest: number
  followers: number
  wake: Deferred.Deferred<void>
}

/** Builds an in-process `FrameNotifier`. */
export const makeNotifier = (): FrameNotifier => {
  const watches = new Map<string, Watch>()
  const keyOf = (did: string, runId: string) => JSON.stringify([did, runId])
  return {
    publish: (did, runId, lastFrameId) => {
      const watch = watches.get(keyOf(did, runId))
      if (watch === undefined || lastFrameId <= watch.latest) return
      watch.latest = lastFrameId
      const woken = watch.wake
      watch.wake = Deferred.unsafeMake(FiberId.none)
      Deferred.unsafeDone(woken, Exit.void)
    },
    subscribe: (did, runId) => {
      const key = keyOf(did, runId)
      return Effect.acquireRelease(
        Effect.sync(() => {
          let watch = watches.get(key)
          if (watch === undefined) {
            watch = { latest: 0, followers: 0, wake: Deferred.unsafeMake(FiberId.none) }
            watches.set(key, watch)
          }
          watch.followers++
          const w = watch
          const awaitBeyond = (after: number): Effect.Effect<void> =>
            Effect.suspend(() =>
              w.latest > after ? Effect.void : Effect.zipRight(Deferred.await(w.wake), awaitBeyond(after))
            )
          return { awaitBeyond }
        }),
        () =>
          Effect.sync(() => {
            const watch = watches.get(key)
            if (watch !== undefined && --watch.followers === 0) watches.delete(key)
          })
      )
    }
  }
}

/** What `followLog` needs from an implementation. */
export interface FollowOptions {
  /** Reads the log above a cursor (fails `not-found` for an unknown run). */
  readonly read: (after: number) => Effect.Effect<LogSlice, RunStoreError>
  /** Registers for wake-ups; taken before the first read. */
  readonly subscribe: Effect.Effect<FrameSubscription, never, Scope.Scope>
  /**
   * Also re-read every `pollMs` real milliseconds without a wake-up (for writers the notifier
   * cannot see, such as another process on the same file). Absent: wake-ups only.
   */
  readonly pollMs?: number | undefined
}

/** The stream of `follow`: the frames above `after`, stored then live, ending after `done`. */
export const followLog = (after: number, options: FollowOptions): Stream.Stream<Frame, RunStoreError> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const subscription = yield* options.subscribe
      const first = yield* options.read(after)
      if (after > first.lastFrameId) {
        return yield* Effect.fail(
          invalid(`after ${after} is beyond the run's last frame ${first.lastFrameId}`)
        )
      }
      const wait = (cursor: number) =>
        options.pollMs === undefined
          ? subscription.awaitBeyond(cursor)
          : Effect.race(subscription.awaitBeyond(cursor), Effect.sleep(options.pollMs))
      // `undefined` state: the stream has emitted `done` (or the run ended before the cursor).
      const step = (state: { cursor: number; slice: LogSlice | undefined }) =>
        Effect.gen(function* () {
          let slice = state.slice ?? (yield* options.read(state.cursor))
          while (slice.frames.length === 0 && !slice.ended) {
            yield* wait(state.cursor)
            slice = yield* options.read(state.cursor)
          }
          const doneAt = slice.frames.findIndex((f) => f.event === DONE_EVENT)
          const frames = doneAt >= 0 ? slice.frames.slice(0, doneAt + 1) : slice.frames
          const last = frames[frames.length - 1]
          const next =
            doneAt >= 0 || last === undefined
              ? Option.none()
              : Option.some({ cursor: last.id, slice: undefined as LogSlice | undefined })
          return [Chunk.unsafeFromArray(frames), next] as const
        })
      return Stream.paginateChunkEffect({ cursor: after, slice: first as LogSlice | undefined }, step)
    })
  )
