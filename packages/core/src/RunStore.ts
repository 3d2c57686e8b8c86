/**
 * The `RunStore` port: durable, resumable turns.
 *
 * A turn is a **Run**: an id, its session and user, the request id the client keys its
 * streamed message by, a status, and an append-only log of numbered frames — every SSE event
 * the turn emits, numbered 1, 2, 3, … with no gap. The log is what makes a turn outlive the
 * HTTP request that started it:
 *
 * - the POST stream is one follower of the log, and a client whose connection dropped rejoins
 *   as another, from the last frame it applied (`GET /runs/:runId?after=N` replays the frames
 *   numbered above N, then follows live until the final `done`);
 * - a page reload asks which run of the session is still active and replays it from 0;
 * - a run cut short (aborted, failed, or in flight when the process died) ends with a `done`
 *   frame `{status, partialText}` carrying the text the user already saw, which QiForge
 *   clients put in place of what they had; a run that finished says `{status: "finished"}`.
 *
 * The store owns those invariants so that every implementation keeps them alike: frame ids are
 * dense and ordered, `done` is always the last frame and written exactly once, `partialText` is
 * the concatenation of the `content` of the run's `message` frames, and nothing is appended
 * after the end. Every operation is scoped by the user's DID: a run is only ever visible to its
 * own user, and another user's run id reads as unknown.
 *
 * Time comes from the `Clock` port (epoch milliseconds), so tests move it instead of sleeping.
 * The in-memory store here and the SQLite store in adapters pass the same `RunStoreConformance`.
 */
import {
  Chunk,
  Context,
  Deferred,
  Effect,
  Exit,
  FiberId,
  Layer,
  Option,
  Schema,
  type Scope,
  Stream
} from "effect"
import { Clock } from "./Clock.js"
import { parseJsonObject } from "./internal/json.js"

/** Where a run is in its life. `queued` and `running` are active; the other four are ended. */
export type RunStatus = "queued" | "running" | "finished" | "interrupted" | "aborted" | "failed"

/** How a run can end. */
export type EndStatus = "finished" | "interrupted" | "aborted" | "failed"

/** The statuses of a run still in progress. */
export const ACTIVE_STATUSES: ReadonlyArray<RunStatus> = ["queued", "running"]

/** The statuses a run can end with. */
export const END_STATUSES: ReadonlyArray<EndStatus> = ["finished", "interrupted", "aborted", "failed"]

/** Which run: its user and its id (what the boot sweep hands back, for the host to repair). */
export interface RunRef {
  readonly did: string
  readonly runId: string
}

/** One turn of one user in one session. Times are epoch milliseconds from the `Clock` port. */
export interface Run {
  readonly runId: string
  readonly sessionId: string
  readonly did: string
  /** The turn's request id (`X-Request-Id`): the id of the AI message the client streams into. */
  readonly requestId: string
  readonly status: RunStatus
  readonly createdAt: number
  /** Time of the last change: creation, start, an appended frame, the end. */
  readonly updatedAt: number
  /** When the run ended; absent while it is active. */
  readonly endedAt?: number | undefined
  /** Id of the last frame of the log; 0 before the first. */
  readonly lastFrameId: number
  /** The concatenated `content` of the run's `message` frames: the answer as streamed so far. */
  readonly partialText: string
}

/** One numbered frame of a run's log: an SSE event with its JSON object payload. */
export interface Frame {
  /** 1 for the first frame of a run, then +1 per frame, without gaps. */
  readonly id: number
  readonly event: string
  readonly data: Readonly<Record<string, unknown>>
}

/** What `append` takes: the event and its payload (a JSON object; the store keeps a JSON copy). */
export interface FrameInput {
  readonly event: string
  readonly data: Readonly<Record<string, unknown>>
}

/**
 * What `create` takes. `runId` is minted (`run_…`) when absent. `status` is `queued` unless the
 * run starts as it is created (`running`: one write instead of `create` then `start`).
 */
export interface NewRun {
  readonly runId?: string | undefined
  readonly sessionId: string
  readonly did: string
  readonly requestId: string
  readonly status?: "queued" | "running" | undefined
}

/** The event name of the final frame, written only by `end`. */
export const DONE_EVENT = "done"
/** The event whose `content` string accumulates into `partialText`. */
export const MESSAGE_EVENT = "message"

/**
 * The event that marks a hole in a run's log (docs/spec/pipeline.md#runs): frames the live client
 * was sent while the store could not take them. Its data is `{ missed, reason }`; a run with one
 * ends `interrupted` with reason `LOG_GAP`, so that a rejoin is told, never handed a log that
 * silently skips.
 */
export const GAP_EVENT = "gap"

/** The `reason` of a run ended because its log has a gap (`GAP_EVENT`). */
export const LOG_GAP = "log-gap"
/** Longest accepted run, session or request id. */
export const MAX_ID_LENGTH = 256

/** Why a run operation failed. */
export type RunStoreErrorReason = "not-found" | "ended" | "invalid" | "unavailable"

/**
 * The one error of the port. `not-found`: the user has no such run (the host answers 404).
 * `ended`: the run has ended, so it takes no more frames, start or end. `invalid`: a bad
 * argument. `unavailable`: the storage could not be used.
 */
export class RunStoreError extends Schema.TaggedError<RunStoreError>()("RunStoreError", {
  reason: Schema.Literal("not-found", "ended", "invalid", "unavailable"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** The operations of the RunStore port; each is scoped by the user's DID. */
export interface RunStoreService {
  /**
   * Creates a run, `queued` (or `running` when `input.status` says so); fails `invalid` when the
   * user already has a run with that id.
   */
  readonly create: (input: NewRun) => Effect.Effect<Run, RunStoreError>
  /** Moves a `queued` run to `running`; `ended` once it ended, `invalid` when already running. */
  readonly start: (did: string, runId: string) => Effect.Effect<Run, RunStoreError>
  /**
   * Appends a frame with the next id. A `message` frame's `content` (which must be a string)
   * joins `partialText`. Refused `ended` once the run ended, `invalid` for the `done` event
   * (only `end` writes it).
   */
  readonly append: (did: string, runId: string, frame: FrameInput) => Effect.Effect<Frame, RunStoreError>
  /**
   * Appends `frames` in order, with consecutive ids: `append` for each, in one call, which a store
   * may commit at once (a stream hands over the events of one turn of the event loop together).
   * All or none: a frame `append` would refuse refuses the call, and nothing is appended. No
   * frames: nothing is read or written, and the answer is empty.
   */
  readonly appendAll: (
    did: string,
    runId: string,
    frames: ReadonlyArray<FrameInput>
  ) => Effect.Effect<ReadonlyArray<Frame>, RunStoreError>
  /**
   * Ends the run: appends the final `done` frame `{status}` — with `partialText` unless the
   * run finished, and `reason` when given (why it was cut short: `user`, `shutdown`, a turn
   * bound such as `max-tool-calls`) — and records the status and `endedAt`. Ending twice is
   * refused `ended`; there is never a second `done`. Returns the `done` frame.
   */
  readonly end: (did: string, runId: string, outcome: EndOutcome) => Effect.Effect<Frame, RunStoreError>
  /** The run, or none when the user has no run with that id. */
  readonly get: (did: string, runId: string) => Effect.Effect<Option.Option<Run>, RunStoreError>
  /** The stored frames with id above `after`, in order; `not-found` when the run is unknown. */
  readonly frames: (
    did: string,
    runId: string,
    after: number
  ) => Effect.Effect<ReadonlyArray<Frame>, RunStoreError>
  /**
   * The frames with id above `after`: first those stored, then each one as it is appended,
   * ending after `done`. None is skipped or repeated, however appends race the subscription.
   * Fails `not-found` for an unknown run, `invalid` for an `after` beyond the run's last frame.
   */
  readonly follow: (did: string, runId: string, after: number) => Stream.Stream<Frame, RunStoreError>
  /** The session's active (queued or running) run, the newest if there were several. */
  readonly activeForSession: (
    did: string,
    sessionId: string
  ) => Effect.Effect<Option.Option<Run>, RunStoreError>
  /**
   * Ends every run still queued or running — what a crashed process left behind — as
   * `interrupted`, with its partial text in the `done` frame. Returns which (the host puts their
   * questions back in their threads). A host calls it
   * at boot, while no turn of its own is in flight on this store.
   */
  readonly interruptUnfinished: () => Effect.Effect<ReadonlyArray<RunRef>, RunStoreError>
  /** Deletes the runs (and frames) that ended more than `olderThanMs` ago; returns how many. */
  readonly prune: (olderThanMs: number) => Effect.Effect<number, RunStoreError>
  /**
   * Deletes every run of the user's session, ended or not, with its frames; returns how many. What
   * `DELETE /sessions/:id` does to the session's runs (docs/spec/wire.md#deleting-a-session): a
   * deleted conversation is not replayed. A follower of a deleted run ends `not-found`.
   */
  readonly deleteSession: (did: string, sessionId: string) => Effect.Effect<number, RunStoreError>
}

/** The RunStore port. */
export class RunStore extends Context.Tag("@plugboard/core/RunStore")<RunStore, RunStoreService>() {}

// ---------------------------------------------------------------------------------------------
// Validation shared by every implementation, so they refuse exactly the same inputs.

const invalid = (message: string) => new RunStoreError({ reason: "invalid", message })

/** The failure for a run the user does not have. */
export const notFound = (runId: string): RunStoreError =>
  new RunStoreError({ reason: "not-found", message: `Run '${runId}' not found` })

/** The failure for a change to a run that already ended. */
export const ended = (runId: string, status: RunStatus): RunStoreError =>
  new RunStoreError({ reason: "ended", message: `Run '${runId}' has already ended (${status})` })

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/
// SSE event names travel on an `event:` line; the SDK's names include dots (`router.update`).
const EVENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/

/** Checks a user DID: any non-empty string (it is only ever a key). */
export const validateDid = (did: unknown): Effect.Effect<string, RunStoreError> =>
  typeof did === "string" && did.length > 0
    ? Effect.succeed(did)
    : Effect.fail(invalid("did must be a non-empty string"))

/** Checks a run, session or request id: 1..MAX_ID_LENGTH characters, no control characters. */
export const validateId = (field: string, value: unknown): Effect.Effect<string, RunStoreError> =>
  typeof value === "string" && value.length > 0 && value.length <= MAX_ID_LENGTH && !CONTROL.test(value)
    ? Effect.succeed(value)
    : Effect.fail(invalid(`${field} must be 1..${MAX_ID_LENGTH} characters without control characters`))

/** Checks a frame cursor: a non-negative safe integer. */
export const validateAfter = (after: unknown): Effect.Effect<number, RunStoreError> =>
  typeof after === "number" && Number.isSafeInteger(after) && after >= 0
    ? Effect.succeed(after)
    : Effect.fail(invalid("after must be a non-negative integer"))

/** A new run's fields, checked, with its id (the caller's, or minted from `nowMs`). */
export const validateNewRun = (
  input: NewRun,
  nowMs: number
): Effect.Effect<
  {
    readonly did: string
    readonly sessionId: string
    readonly requestId: string
    readonly runId: string
    readonly status: "queued" | "running"
  },
  RunStoreError
> =>
  Effect.all({
    did: validateDid(input?.did),
    sessionId: validateId("sessionId", input?.sessionId),
    requestId: validateId("requestId", input?.requestId),
    runId: input?.runId === undefined ? Effect.succeed(mintRunId(nowMs)) : validateId("runId", input.runId),
    status:
      input?.status === undefined || input.status === "queued" || input.status === "running"
        ? Effect.succeed(input?.status ?? ("queued" as const))
        : Effect.fail(invalid("a new run's status is queued or running"))
  })

/**
 * A stored frame's payload, decoded. A payload that cannot be decoded (a damaged store) is not an
 * error that would end a rejoin: the frame keeps its id and event, and its data says so
 * (`{undecodable: true}`) without echoing the stored bytes.
 */
export const decodeFrameData = (json: string): Readonly<Record<string, unknown>> =>
  parseJsonObject(json) ?? { undecodable: true }

/** How a run ended: its status, and why when it was cut short. */
export interface EndOutcome {
  readonly status: EndStatus
  /** A short slug (letters, digits, `.`, `_`, `:`, `-`; at most 64). */
  readonly reason?: string | undefined
}

const REASON = /^[A-Za-z0-9][\w.:-]{0,63}$/

/** Whether `reason` may stand as a `done` reason: a short slug (see `EndOutcome.reason`). */
export const isReason = (reason: unknown): reason is string =>
  typeof reason === "string" && REASON.test(reason)

/** Checks an end outcome: a known status, and a reason that is absent or a short slug. */
export const validateEndOutcome = (outcome: EndOutcome): Effect.Effect<EndOutcome, RunStoreError> =>
  Effect.flatMap(validateEndStatus(outcome?.status), (status) => {
    const reason = outcome.reason
    if (reason === undefined) return Effect.succeed({ status })
    return isReason(reason)
      ? Effect.succeed({ status, reason })
      : Effect.fail(invalid("reason must be 1..64 letters, digits, '.', '_', ':' or '-'"))
  })

/** Checks an end status. */
export const validateEndStatus = (status: unknown): Effect.Effect<EndStatus, RunStoreError> =>
  END_STATUSES.includes(status as EndStatus)
    ? Effect.succeed(status as EndStatus)
    : Effect.fail(invalid(`status must be one of ${END_STATUSES.join(", ")}`))

/** Checks a retention: a non-negative safe integer of milliseconds. */
export const validateRetention = (olderThanMs: unknown): Effect.Effect<number, RunStoreError> =>
  typeof olderThanMs === "number" && Number.isSafeInteger(olderThanMs) && olderThanMs >= 0
    ? Effect.succeed(olderThanMs)
    : Effect.fail(invalid("olderThanMs must be a non-negative integer"))

/** A validated frame: its payload as a JSON copy and as JSON text, and the text it adds. */
export interface NormalizedFrame {
  readonly event: string
  readonly data: Readonly<Record<string, unknown>>
  readonly json: string
  /** What the frame adds to `partialText` (the `content` of a `message` frame, else ""). */
  readonly text: string
}

/**
 * Checks a frame to append and copies its payload through JSON, as a durable store must, so
 * every implementation hands back the same value (no shared mutable object, no `undefined`).
 */
export const normalizeFrame = (input: FrameInput): Effect.Effect<NormalizedFrame, RunStoreError> => {
  const event = input?.event
  if (typeof event !== "string" || !EVENT_NAME.test(event)) {
    return Effect.fail(invalid("event must be 1..64 letters, digits, '_', '.' or '-'"))
  }
  if (event === DONE_EVENT) return Effect.fail(invalid("the done frame is written by end(), not append()"))
  const data = input.data
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return Effect.fail(invalid("frame data must be a JSON object"))
  }
  return Effect.flatMap(
    Effect.try({
      try: () => {
        const json = JSON.stringify(data)
        return { json, data: JSON.parse(json) as Record<string, unknown> }
      },
      catch: (cause) => new RunStoreError({ reason: "invalid", message: "frame data is not JSON", cause })
    }),
    ({ json, data: copy }) => {
      if (event !== MESSAGE_EVENT) return Effect.succeed({ event, data: copy, json, text: "" })
      const content = copy.content
      return typeof content === "string"
        ? Effect.succeed({ event, data: copy, json, text: content })
        : Effect.fail(invalid("a message frame's content must be a string"))
    }
  )
}

/**
 * An `appendAll` call's arguments, checked: the user, the run id and the frames, each normalised
 * as `normalizeFrame` does (the first bad one fails the call).
 */
export const validateAppend = (
  did: string,
  runId: string,
  inputs: ReadonlyArray<FrameInput>
): Effect.Effect<
  { readonly did: string; readonly runId: string; readonly frames: ReadonlyArray<NormalizedFrame> },
  RunStoreError
> =>
  Effect.map(
    Effect.all([
      validateDid(did),
      validateId("runId", runId),
      Array.isArray(inputs)
        ? Effect.forEach(inputs, normalizeFrame)
        : Effect.fail(invalid("frames must be an array"))
    ]),
    ([d, id, frames]) => ({ did: d, runId: id, frames })
  )

/**
 * `append` as a store's `appendAll` of one frame: a store implements appending once, for any
 * number of frames, and takes its `append` from here.
 */
export const appendOne =
  (appendAll: RunStoreService["appendAll"]): RunStoreService["append"] =>
  (did, runId, frame) =>
    Effect.map(appendAll(did, runId, [frame]), (frames) => frames[0]!)

/** The payload of the final frame: `partialText` is reported unless the run finished, `reason` when known. */
export const doneData = (outcome: EndOutcome, partialText: string): Readonly<Record<string, unknown>> => ({
  status: outcome.status,
  ...(outcome.status === "finished" ? {} : { partialText }),
  ...(outcome.reason === undefined ? {} : { reason: outcome.reason })
})

/**
 * A fresh run id, `run_` + time + randomness. Ids are scoped by user, and a duplicate is
 * refused rather than overwritten, so this needs uniqueness, not secrecy.
 */
export const mintRunId = (nowMs: number): string => {
  let random = ""
  for (let i = 0; i < 4; i++)
    random += Math.floor(Math.random() * 2 ** 32)
      .toString(36)
      .padStart(7, "0")
  return `run_${nowMs.toString(36)}${random}`
}

/** True for `queued` and `running`. */
export const isActive = (status: RunStatus): boolean => status === "queued" || status === "running"

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// The in-memory store.

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

  const endEntry = (entry: MemoryRun, outcome: EndOutcome, now: number): Frame => {
    const status = outcome.status
    const run = entry.run
    const done: Frame = {
      id: run.lastFrameId + 1,
      event: DONE_EVENT,
      data: doneData(outcome, run.partialText)
    }
    entry.frames.push(done)
    entry.run = { ...run, status, lastFrameId: done.id, updatedAt: now, endedAt: now }
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
        const { did, sessionId, requestId, runId, status } = yield* validateNewRun(input, now)
        return yield* Effect.suspend(() => {
          let runs = users.get(did)
          if (runs === undefined) {
            runs = new Map()
            users.set(did, runs)
          }
          if (runs.has(runId)) return Effect.fail(invalid(`Run '${runId}' already exists`))
          const run: Run = {
            runId,
            sessionId,
            did,
            requestId,
            status,
            createdAt: now,
            updatedAt: now,
            lastFrameId: 0,
            partialText: ""
          }
          runs.set(runId, { run, frames: [] })
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
    end: (did, runId, outcome) =>
      Effect.gen(function* () {
        const [d, id] = yield* ids(did, runId)
        const checked = yield* validateEndOutcome(outcome)
        const now = yield* clock.now()
        const entry = yield* lookup(d, id)
        if (!isActive(entry.run.status)) return yield* Effect.fail(ended(id, entry.run.status))
        return endEntry(entry, checked, now)
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
