/**
 * The `TurnControl` port: stops a session's turns wherever they run. `POST /messages/abort` and
 * `DELETE /sessions/:id` reach the turn of the session on whichever host runs it (
 * docs/deployment.md), not only the host that answers the request.
 *
 * Every process that runs turns `serve`s requests with a handler that stops its own turns of the
 * session; `stop` asks every serving process (itself included) and combines their answers: a turn
 * was found if any process had one, and all have ended once every process said so within the
 * wait. A process that does not answer in time counts as one whose turn has not ended: a delete
 * must not go on while a turn may still write the thread back.
 *
 * The in-memory implementation here serves one process (the embedded default); a shared engine
 * (Redis pub/sub) carries the requests between hosts. Every implementation passes
 * `TurnControlConformance`.
 */
import { Context, Effect, Layer, Schema, type Scope } from "effect"

/** Why a session's turns are stopped: the user asked (abort), or the session is being deleted. */
export type StopReason = "user" | "deleted"

/** A request to stop a user's turns on a session. */
export interface StopRequest {
  readonly did: string
  readonly sessionId: string
  readonly reason: StopReason
  /** How long to wait for the stopped turns to end (and save), in milliseconds; 0 does not wait. */
  readonly waitMs: number
}

/** What the processes answered, combined. */
export interface StopResult {
  /** Some process had a turn of the session (running or waiting) and aborted it. */
  readonly found: boolean
  /** No turn of the session is left running: every process answered, within `waitMs`. */
  readonly ended: boolean
}

/** What one process does with a request: stops its own turns of the session. */
export type StopHandler = (request: StopRequest) => Promise<StopResult>

/** Why a `stop` failed: a bad argument, or the engine could not be reached. */
export class TurnControlError extends Schema.TaggedError<TurnControlError>()("TurnControlError", {
  reason: Schema.Literal("invalid", "unavailable"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** The operations of the TurnControl port. */
export interface TurnControlService {
  /**
   * Serves requests with `handler` for the life of the scope; completes once requests sent
   * afterwards reach it.
   */
  readonly serve: (handler: StopHandler) => Effect.Effect<void, TurnControlError, Scope.Scope>
  /** Asks every serving process to stop the session's turns; see `StopResult`. */
  readonly stop: (request: StopRequest) => Effect.Effect<StopResult, TurnControlError>
}

/** The TurnControl port. */
export class TurnControl extends Context.Tag("@plugboard/core/TurnControl")<
  TurnControl,
  TurnControlService
>() {}

/** Longest accepted wait: a stop must not hold a request for longer than a minute. */
export const MAX_WAIT_MS = 60_000

/** Checks a request's fields (every implementation calls it before sending anything). */
export const validateRequest = (request: unknown): Effect.Effect<StopRequest, TurnControlError> => {
  const r = request as Partial<StopRequest> | null | undefined
  const problem =
    typeof r !== "object" || r === null
      ? "a stop request must be an object"
      : typeof r.did !== "string" || r.did.length === 0
        ? "did must be a non-empty string"
        : typeof r.sessionId !== "string" || r.sessionId.length === 0
          ? "sessionId must be a non-empty string"
          : r.reason !== "user" && r.reason !== "deleted"
            ? `reason must be "user" or "deleted", got ${JSON.stringify(r.reason)}`
            : !Number.isSafeInteger(r.waitMs) ||
                (r.waitMs as number) < 0 ||
                (r.waitMs as number) > MAX_WAIT_MS
              ? `waitMs must be a whole number from 0 to ${MAX_WAIT_MS}, got ${JSON.stringify(r.waitMs)}`
              : undefined
  return problem === undefined
    ? Effect.succeed({ did: r!.did!, sessionId: r!.sessionId!, reason: r!.reason!, waitMs: r!.waitMs! })
    : Effect.fail(new TurnControlError({ reason: "invalid", message: problem }))
}

/** Combines processes' answers; `answered` false when some process did not answer in time. */
export const combine = (results: ReadonlyArray<StopResult>, answered = true): StopResult => ({
  found: results.some((r) => r.found),
  ended: answered && results.every((r) => r.ended)
})

/**
 * A handler's answer within `waitMs` (plus a grace for its own bookkeeping), or `undefined`; a
 * handler that fails has not answered either. Timed on Effect's clock (core uses no host timers).
 */
const answerOf = (handler: StopHandler, request: StopRequest, graceMs: number) =>
  Effect.tryPromise(() => handler(request)).pipe(
    Effect.orElseSucceed((): StopResult | undefined => undefined),
    Effect.timeoutTo({
      duration: request.waitMs + graceMs,
      onSuccess: (result): StopResult | undefined => result,
      onTimeout: () => undefined
    })
  )

/** The processes' handlers an in-memory control reaches: one per process, or shared in a test. */
export interface Hub {
  readonly handlers: Set<StopHandler>
}

/** A hub for in-memory controls that stand for several processes (tests). */
export const makeHub = (): Hub => ({ handlers: new Set() })

/** How long past `waitMs` an answer may come before its process counts as not answering. */
export const ANSWER_GRACE_MS = 1_000

/** An in-memory control on `hub`: every control on it reaches every handler served on it. */
export const makeMemory = (hub: Hub = makeHub()): TurnControlService => ({
  serve: (handler) =>
    Effect.acquireRelease(
      Effect.sync(() => void hub.handlers.add(handler)),
      () => Effect.sync(() => void hub.handlers.delete(handler))
    ),
  stop: (request) =>
    Effect.flatMap(validateRequest(request), (checked) =>
      Effect.map(
        Effect.forEach([...hub.handlers], (h) => answerOf(h, checked, ANSWER_GRACE_MS), {
          concurrency: "unbounded"
        }),
        (answers) => {
          const given = answers.filter((a): a is StopResult => a !== undefined)
          return combine(given, given.length === answers.length)
        }
      )
    )
})

/** The in-memory control of one process. */
export const layerMemory: Layer.Layer<TurnControl> = Layer.sync(TurnControl, () => makeMemory())
