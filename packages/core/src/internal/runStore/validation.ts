/**
 * Validation shared by every RunStore implementation, so they refuse exactly the same inputs, and
 * the few pure helpers they all build frames with (`appendOne`, `doneData`, `mintRunId`).
 */
import { Effect } from "effect"
import { parseJsonObject } from "../json.js"
import {
  DONE_EVENT,
  END_STATUSES,
  type EndOutcome,
  type EndStatus,
  type FrameInput,
  MAX_ID_LENGTH,
  MESSAGE_EVENT,
  type NewRun,
  type Run,
  type RunStatus,
  RunStoreError,
  type RunStoreService
} from "./port.js"

/** The failure for an input the store refuses (the same message from every implementation). */
export const invalid = (message: string): RunStoreError => new RunStoreError({ reason: "invalid", message })

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
  isDid(did) ? Effect.succeed(did) : Effect.fail(badDid())

/** Checks a run, session or request id: 1..MAX_ID_LENGTH characters, no control characters. */
export const validateId = (field: string, value: unknown): Effect.Effect<string, RunStoreError> =>
  isId(value) ? Effect.succeed(value) : Effect.fail(badId(field))

const isDid = (did: unknown): did is string => typeof did === "string" && did.length > 0
const badDid = () => invalid("did must be a non-empty string")
const isId = (value: unknown): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= MAX_ID_LENGTH && !CONTROL.test(value)
const badId = (field: string) =>
  invalid(`${field} must be 1..${MAX_ID_LENGTH} characters without control characters`)

/** The first thing wrong with a call's user and run id, if any (plain code: every call checks them). */
const badRunRef = (did: unknown, runId: unknown): RunStoreError | undefined =>
  !isDid(did) ? badDid() : !isId(runId) ? badId("runId") : undefined

/** Checks a frame cursor: a non-negative safe integer. */
export const validateAfter = (after: unknown): Effect.Effect<number, RunStoreError> =>
  typeof after === "number" && Number.isSafeInteger(after) && after >= 0
    ? Effect.succeed(after)
    : Effect.fail(invalid("after must be a non-negative integer"))

/** A new run, checked, as a store creates it at `nowMs`: its id (the caller's, or minted from `nowMs`), no frame yet. */
export const validateNewRun = (input: NewRun, nowMs: number): Effect.Effect<Run, RunStoreError> => {
  // Plain code, in the order the fields are named: every turn creates a run.
  const status = input?.status
  const problem = !isDid(input?.did)
    ? badDid()
    : !isId(input.sessionId)
      ? badId("sessionId")
      : !isId(input.requestId)
        ? badId("requestId")
        : input.runId !== undefined && !isId(input.runId)
          ? badId("runId")
          : status !== undefined && status !== "queued" && status !== "running"
            ? invalid("a new run's status is queued or running")
            : undefined
  if (problem !== undefined) return Effect.fail(problem)
  // The run as a store creates it: no frame yet, no text.
  return Effect.succeed({
    did: input.did,
    sessionId: input.sessionId,
    requestId: input.requestId,
    runId: input.runId ?? mintRunId(nowMs),
    status: status ?? "queued",
    createdAt: nowMs,
    updatedAt: nowMs,
    lastFrameId: 0,
    partialText: ""
  })
}

/**
 * A stored frame's payload, decoded. A payload that cannot be decoded (a damaged store) is not an
 * error that would end a rejoin: the frame keeps its id and event, and its data says so
 * (`{undecodable: true}`) without echoing the stored bytes.
 */
export const decodeFrameData = (json: string): Readonly<Record<string, unknown>> =>
  parseJsonObject(json) ?? { undecodable: true }

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
  const checked = checkFrame(input)
  return checked instanceof RunStoreError ? Effect.fail(checked) : Effect.succeed(checked)
}

// Plain code, one Effect per call rather than per frame: a turn's every batch goes through here.
const checkFrame = (input: FrameInput): NormalizedFrame | RunStoreError => {
  const event = input?.event
  if (typeof event !== "string" || !EVENT_NAME.test(event)) {
    return invalid("event must be 1..64 letters, digits, '_', '.' or '-'")
  }
  if (event === DONE_EVENT) return invalid("the done frame is written by end(), not append()")
  const data = input.data
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return invalid("frame data must be a JSON object")
  }
  let json: string
  let copy: Record<string, unknown>
  try {
    json = JSON.stringify(data)
    copy = JSON.parse(json) as Record<string, unknown>
  } catch (cause) {
    return new RunStoreError({ reason: "invalid", message: "frame data is not JSON", cause })
  }
  if (event !== MESSAGE_EVENT) return { event, data: copy, json, text: "" }
  const content = copy.content
  return typeof content === "string"
    ? { event, data: copy, json, text: content }
    : invalid("a message frame's content must be a string")
}

const normalizeFrames = (
  inputs: ReadonlyArray<FrameInput>
): Effect.Effect<ReadonlyArray<NormalizedFrame>, RunStoreError> => {
  if (!Array.isArray(inputs)) return Effect.fail(invalid("frames must be an array"))
  const frames: Array<NormalizedFrame> = []
  for (const input of inputs) {
    const checked = checkFrame(input)
    if (checked instanceof RunStoreError) return Effect.fail(checked)
    frames.push(checked)
  }
  return Effect.succeed(frames)
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
  Effect.suspend(() => {
    const bad = badRunRef(did, runId)
    if (bad !== undefined) return Effect.fail(bad)
    return Effect.map(normalizeFrames(inputs), (frames) => ({ did, runId, frames }))
  })

/**
 * An `end` call's arguments, checked: the user, the run id, the outcome, and the frames to append
 * before `done` (none when absent), each normalised as `normalizeFrame` does.
 */
export const validateEnd = (
  did: string,
  runId: string,
  outcome: EndOutcome,
  frames: ReadonlyArray<FrameInput> | undefined
): Effect.Effect<
  {
    readonly did: string
    readonly runId: string
    readonly outcome: EndOutcome
    readonly frames: ReadonlyArray<NormalizedFrame>
  },
  RunStoreError
> =>
  Effect.suspend(() => {
    const bad = badRunRef(did, runId)
    if (bad !== undefined) return Effect.fail(bad)
    return Effect.zipWith(validateEndOutcome(outcome), normalizeFrames(frames ?? []), (o, normalized) => ({
      did,
      runId,
      outcome: o,
      frames: normalized
    }))
  })

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
