/**
 * The RunStore port itself (`RunStore.ts` is its public face and says what it is for): a run, its
 * frames, the failure type, the service's operations and its tag.
 */
import { Context, type Effect, type Option, Schema, type Stream } from "effect"

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
   *
   * `frames`, when given, are the run's last frames before `done`: appended as `appendAll` would,
   * then `done`, in one change (one transaction), so a run's log takes its last frames and its end
   * in one write (the run log hands over the events that came with the turn's end together). Their
   * ids are consecutive and end just before `done`'s (`done.id - frames.length` for the first);
   * their text is in `done`'s `partialText`. All or none: a frame `appendAll` would refuse refuses
   * the end too, and nothing is written. A follower sees them in order, then `done`.
   */
  readonly end: (
    did: string,
    runId: string,
    outcome: EndOutcome,
    frames?: ReadonlyArray<FrameInput> | undefined
  ) => Effect.Effect<Frame, RunStoreError>
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

/** True for `queued` and `running`. */
export const isActive = (status: RunStatus): boolean => status === "queued" || status === "running"

/** How a run ended: its status, and why when it was cut short. */
export interface EndOutcome {
  readonly status: EndStatus
  /** A short slug (letters, digits, `.`, `_`, `:`, `-`; at most 64). */
  readonly reason?: string | undefined
}
