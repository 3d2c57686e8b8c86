/**
 * The `WaitStore` port: the waits of runs that wait for their user (`Wait.ts`), and the record of
 * how each was answered (issue 40, docs/waiting.md).
 *
 * A wait is opened when a turn stops for its user, and answered once: by its user (an approval's
 * decision, a form's values, a finished connect) or by the host at its deadline (`timed-out`).
 * The store owns the rule that makes a resume safe from any host and any number of clicks: **an
 * answer is recorded at most once**; every later answer, from the same client, another tab or
 * another host, gets the first one back (`already`) and must not run the tool again. A wait is
 * only ever visible to its own user: another user's wait id reads as unknown. The answered
 * record (who, when, what) stays readable by that user as the wait's audit.
 *
 * Every implementation (the in-memory one here, SQLite in `@plugboard/sqlite`, Postgres in
 * `@plugboard/postgres`) passes `WaitStoreConformance` (`@plugboard/testing`).
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as Wait from "./Wait.js"

/** Why an operation failed. */
export type WaitStoreErrorReason = "invalid" | "not-found" | "expired" | "conflict" | "unavailable"

/**
 * The one error of the port. `invalid`: an id, a time, a request or an answer that breaks the
 * rules (nothing is written); `not-found`: no such wait for this user; `expired`: a client's
 * answer after the wait's deadline; `conflict`: a wait id opened twice; `unavailable`: the file or
 * engine failed.
 */
export class WaitStoreError extends Schema.TaggedError<WaitStoreError>()("WaitStoreError", {
  reason: Schema.Literal("invalid", "not-found", "expired", "conflict", "unavailable"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** A wait as it is opened. Times are epoch milliseconds from the `Clock` port. */
export interface NewWait {
  readonly waitId: string
  readonly did: string
  readonly runId: string
  readonly sessionId: string
  readonly request: Wait.WaitRequest
  readonly createdAtMs: number
  /** When the host answers it `timed-out`; a client's answer from then on is `expired`. */
  readonly deadlineMs: number
}

/** How a wait was answered: what, by whom (the user's DID, or `host` for a timeout), when. */
export interface Answered {
  readonly answer: Wait.WaitAnswer
  readonly by: string
  readonly atMs: number
}

/** A stored wait, answered or not. */
export interface WaitRecord extends NewWait {
  readonly answered?: Answered | undefined
}

/** What `answer` did: recorded this answer, or found the wait answered already (by the first). */
export type AnswerOutcome =
  | { readonly _tag: "answered"; readonly record: WaitRecord }
  | { readonly _tag: "already"; readonly record: WaitRecord }

/** Who records a timeout, or a connection made. */
export const HOST = "host"

/** The operations of the port. */
export interface WaitStoreService {
  /** Opens a wait; `conflict` when its id exists (for any user). */
  readonly open: (wait: NewWait) => Effect.Effect<void, WaitStoreError>
  /** The user's wait, or undefined (an unknown id, or another user's). */
  readonly get: (did: string, waitId: string) => Effect.Effect<WaitRecord | undefined, WaitStoreError>
  /**
   * Answers the user's wait at `atMs`, once. `by` is the user's DID for a client's answer and
   * `HOST` for `timed-out` or `connected`. A misfit answer is `invalid`; a client's answer at or after the
   * deadline of a wait still open is `expired`; an answered wait gives `already` with the first.
   */
  readonly answer: (
    did: string,
    waitId: string,
    answer: Wait.WaitAnswer,
    by: string,
    atMs: number
  ) => Effect.Effect<AnswerOutcome, WaitStoreError>
  /** The user's waits, answered or not, oldest first (at most `limit`, default 100). */
  readonly list: (did: string, limit?: number) => Effect.Effect<ReadonlyArray<WaitRecord>, WaitStoreError>
  /** The user's waits not answered yet, oldest first (at most `limit`, default 100). */
  readonly unanswered: (
    did: string,
    limit?: number
  ) => Effect.Effect<ReadonlyArray<WaitRecord>, WaitStoreError>
  /** Every user's open waits whose deadline is at or before `nowMs`, oldest deadline first. */
  readonly due: (
    nowMs: number,
    limit?: number
  ) => Effect.Effect<ReadonlyArray<{ readonly did: string; readonly waitId: string }>, WaitStoreError>
}

/** The WaitStore port. */
export class WaitStore extends Context.Tag("@plugboard/core/WaitStore")<WaitStore, WaitStoreService>() {}

/** Longest id (wait, run, session) the store accepts. */
export const MAX_ID_LENGTH = 200
/** Longest user DID. */
export const MAX_DID_LENGTH = 2_048
/** Longest request or answer, as JSON. */
export const MAX_JSON_LENGTH = 64 * 1024
/** Most records `list` and `due` return at once. */
export const MAX_LIMIT = 1_000

const ID = /^[A-Za-z0-9_.:-]+$/

const invalid = (message: string) => new WaitStoreError({ reason: "invalid", message })

const checkId = (what: string, id: unknown): string | undefined =>
  typeof id === "string" && id.length > 0 && id.length <= MAX_ID_LENGTH && ID.test(id)
    ? undefined
    : `${what} must be 1 to ${MAX_ID_LENGTH} characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'`

const checkDid = (did: unknown): string | undefined =>
  typeof did === "string" && did.length > 0 && did.length <= MAX_DID_LENGTH
    ? undefined
    : `a user must be a DID of 1 to ${MAX_DID_LENGTH} characters`

const checkTime = (what: string, ms: unknown): string | undefined =>
  typeof ms === "number" && Number.isSafeInteger(ms) && ms >= 0
    ? undefined
    : `${what} must be a non-negative integer of epoch milliseconds, got ${String(ms)}`

const jsonLength = (value: unknown): number => {
  try {
    return JSON.stringify(value)?.length ?? Number.POSITIVE_INFINITY
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

const decodeRequest = Schema.decodeUnknownEither(Wait.WaitRequest)
const decodeAnswer = Schema.decodeUnknownEither(Wait.WaitAnswer)

/** Checks a wait about to be opened; every implementation calls it before writing. */
export const validateNew = (wait: NewWait): Effect.Effect<NewWait, WaitStoreError> => {
  const problem =
    checkId("a wait id", wait.waitId) ??
    checkDid(wait.did) ??
    checkId("a run id", wait.runId) ??
    checkId("a session id", wait.sessionId) ??
    checkTime("createdAtMs", wait.createdAtMs) ??
    checkTime("deadlineMs", wait.deadlineMs) ??
    (wait.deadlineMs <= wait.createdAtMs ? "a wait's deadline must come after its creation" : undefined) ??
    (decodeRequest(wait.request)._tag === "Left"
      ? "the request is not an approval, input or connect request"
      : undefined) ??
    (jsonLength(wait.request) > MAX_JSON_LENGTH
      ? `the request is over ${MAX_JSON_LENGTH} characters of JSON`
      : undefined)
  return problem === undefined ? Effect.succeed(wait) : Effect.fail(invalid(problem))
}

/** Checks a (user, wait id) pair. */
export const validateKey = (did: unknown, waitId: unknown): Effect.Effect<void, WaitStoreError> => {
  const problem = checkDid(did) ?? checkId("a wait id", waitId)
  return problem === undefined ? Effect.void : Effect.fail(invalid(problem))
}

/** Checks an answer's shape, its author and time, before the stored wait is read. */
export const validateAnswer = (
  answer: unknown,
  by: unknown,
  atMs: unknown
): Effect.Effect<Wait.WaitAnswer, WaitStoreError> => {
  const decoded = decodeAnswer(answer)
  const problem =
    (decoded._tag === "Left" ? "the answer is not a decision, values, connected or timed-out" : undefined) ??
    (jsonLength(answer) > MAX_JSON_LENGTH
      ? `the answer is over ${MAX_JSON_LENGTH} characters of JSON`
      : undefined) ??
    (by !== HOST ? checkDid(by) : undefined) ??
    checkTime("atMs", atMs)
  return problem === undefined && decoded._tag === "Right"
    ? Effect.succeed(decoded.right)
    : Effect.fail(invalid(problem ?? "the answer is invalid"))
}

/** Checks a `limit` argument (default 100, at most `MAX_LIMIT`). */
export const validateLimit = (limit: unknown): Effect.Effect<number, WaitStoreError> =>
  limit === undefined
    ? Effect.succeed(100)
    : typeof limit === "number" && Number.isSafeInteger(limit) && limit > 0 && limit <= MAX_LIMIT
      ? Effect.succeed(limit)
      : Effect.fail(invalid(`limit must be an integer from 1 to ${MAX_LIMIT}, got ${String(limit)}`))

/**
 * The rule every implementation applies to an answer for a stored, still-open wait: the answer
 * fits the request, a client's comes before the deadline, a timeout comes from the host. Returns
 * the refusal, or undefined when the answer is admitted (a plain function, so a store can apply it
 * inside its own transaction).
 */
export const admit = (
  stored: WaitRecord,
  answer: Wait.WaitAnswer,
  by: string,
  atMs: number
): WaitStoreError | undefined => {
  const fromClient = by !== HOST
  // The host records what only it can see: the deadline passed, or the user's connection was made.
  if (!fromClient && answer._tag !== "timed-out" && answer._tag !== "connected")
    return invalid("only a 'timed-out' or 'connected' answer is recorded by the host")
  const misfit = Wait.misfit(stored.request, answer, fromClient)
  if (misfit !== undefined) return invalid(misfit)
  if (fromClient && by !== stored.did) return invalid("a wait is answered by its own user")
  if (fromClient && atMs >= stored.deadlineMs)
    return new WaitStoreError({
      reason: "expired",
      message: `wait ${stored.waitId} passed its deadline; it is answered 'timed-out'`
    })
  return undefined
}

/** A store in this process's memory: every wait is lost with it. */
export const makeMemory = (): WaitStoreService => {
  const waits = new Map<string, WaitRecord>()
  const own = (did: string, waitId: string): WaitRecord | undefined => {
    const found = waits.get(waitId)
    return found?.did === did ? found : undefined
  }
  return {
    open: (wait) =>
      Effect.flatMap(validateNew(wait), (valid) =>
        waits.has(valid.waitId)
          ? Effect.fail(new WaitStoreError({ reason: "conflict", message: `wait ${valid.waitId} exists` }))
          : Effect.sync(() => {
              waits.set(valid.waitId, { ...valid })
            })
      ),
    get: (did, waitId) => Effect.map(validateKey(did, waitId), () => own(did, waitId)),
    answer: (did, waitId, answer, by, atMs) =>
      Effect.gen(function* () {
        yield* validateKey(did, waitId)
        const valid = yield* validateAnswer(answer, by, atMs)
        const stored = own(did, waitId)
        if (stored === undefined)
          return yield* Effect.fail(new WaitStoreError({ reason: "not-found", message: `no wait ${waitId}` }))
        if (stored.answered !== undefined) return { _tag: "already", record: stored } as const
        const refused = admit(stored, valid, by, atMs)
        if (refused !== undefined) return yield* Effect.fail(refused)
        const record: WaitRecord = { ...stored, answered: { answer: valid, by, atMs } }
        waits.set(waitId, record)
        return { _tag: "answered", record } as const
      }),
    list: (did, limit) =>
      Effect.gen(function* () {
        yield* validateKey(did, "x")
        const n = yield* validateLimit(limit)
        return [...waits.values()]
          .filter((w) => w.did === did)
          .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.waitId < b.waitId ? -1 : 1))
          .slice(0, n)
      }),
    unanswered: (did, limit) =>
      Effect.gen(function* () {
        yield* validateKey(did, "x")
        const n = yield* validateLimit(limit)
        return [...waits.values()]
          .filter((w) => w.did === did && w.answered === undefined)
          .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.waitId < b.waitId ? -1 : 1))
          .slice(0, n)
      }),
    due: (nowMs, limit) =>
      Effect.gen(function* () {
        const problem = checkTime("nowMs", nowMs)
        if (problem !== undefined) return yield* Effect.fail(invalid(problem))
        const n = yield* validateLimit(limit)
        return [...waits.values()]
          .filter((w) => w.answered === undefined && w.deadlineMs <= nowMs)
          .sort((a, b) => a.deadlineMs - b.deadlineMs || (a.waitId < b.waitId ? -1 : 1))
          .slice(0, n)
          .map((w) => ({ did: w.did, waitId: w.waitId }))
      })
  }
}

/** The in-memory store as a layer (a fresh store per layer build). */
export const layerMemory: Layer.Layer<WaitStore> = Layer.sync(WaitStore, makeMemory)
