/**
 * The HTTP door of waits (issue 40, docs/waiting.md, docs/http-api.md#waits):
 *
 * - `POST /runs/:runId/resume` `{decision: "approve" | "deny", note?}` answers the wait of the
 *   user's run that stopped for them. The answer the store records starts the resumed run, whose
 *   frames this response streams (SSE, `X-Run-Id` the resumed run's); a wait answered already
 *   (a double click, another tab, another host) gets `200` JSON with the first answer and starts
 *   nothing. Another user's run, or a run that does not wait, is `404`; an answer after the
 *   deadline is `409` (`expired`), and the host answers the wait `timed-out` itself.
 * - `GET /runs/:runId/waits` reads the run's wait and how it was answered (who, when, what): the
 *   audit record, for its own user only.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import { type RunStore, type Wait, WaitStore } from "@plugboard/core"
import { Data, Effect, Option as O, Schema } from "effect"
import { decodeBody, HttpFailure, json, readJson, unavailable } from "./Http.js"
import { refusedAnswer, streamedTurn } from "./Messages.js"
import { RequestUser } from "./Routes.js"
import type { TurnService } from "./TurnService.js"
import { resumedRunIdOf, waitIdOf } from "./TurnWaits.js"

/** What the wait routes use. */
export interface ResumeServices {
  readonly turns: TurnService
  readonly runs: RunStore.RunStoreService
  readonly store: WaitStore.WaitStoreService | undefined
  readonly maxBodyBytes: number
  readonly heartbeatMs: number
}

/** Longest note a user gives with a decision, in characters (the model sees at most 500 of it). */
export const MAX_NOTE_LENGTH = 2_000

const ResumeBody = Schema.Struct({
  decision: Schema.Literal("approve", "deny"),
  note: Schema.optional(Schema.String.pipe(Schema.maxLength(MAX_NOTE_LENGTH)))
})

const iso = (ms: number) => new Date(ms).toISOString()

/** A wait as the client reads it: what it asked, its times, and how it was answered. */
export const waitView = (w: WaitStore.WaitRecord) => ({
  waitId: w.waitId,
  runId: w.runId,
  sessionId: w.sessionId,
  request: w.request,
  createdAt: iso(w.createdAtMs),
  deadline: iso(w.deadlineMs),
  answered:
    w.answered === undefined
      ? null
      : { answer: w.answered.answer, by: w.answered.by, at: iso(w.answered.atMs) },
  /** The run that continues the turn once the wait is answered. */
  resumedRunId: resumedRunIdOf(w.waitId)
})

const noWait = (runId: string) =>
  new HttpFailure({
    status: 404,
    message: `No run '${runId.slice(0, 200)}' waiting for you (unknown, expired, or not waiting).`,
    error: "wait-not-found"
  })

const storeFailure = (error: WaitStore.WaitStoreError): HttpFailure =>
  error.reason === "unavailable"
    ? unavailable("The wait could not be read", "the wait store", "waits-unavailable", error)
    : error.reason === "not-found"
      ? new HttpFailure({ status: 404, message: error.message, error: "wait-not-found" })
      : new HttpFailure({ status: 400, message: error.message, error: `wait-${error.reason}` })

/** `POST /runs/:runId/resume` and `GET /runs/:runId/waits`. */
export const resumeRoutes = (s: ResumeServices) => {
  /** The user's run and its wait, or 404 (another user's run reads as unknown). */
  const waitOf = (did: string, runId: string) =>
    Effect.gen(function* () {
      const store = s.store
      if (store === undefined) return yield* noWait(runId)
      const run = yield* s.runs
        .get(did, runId)
        .pipe(
          Effect.mapError((e) =>
            e.reason === "invalid"
              ? noWait(runId)
              : unavailable("The run could not be read", "the run store", "runs-unavailable", e)
          )
        )
      if (O.isNone(run)) return yield* noWait(runId)
      const wait = yield* store.get(did, waitIdOf(runId)).pipe(Effect.mapError(storeFailure))
      return { store, wait }
    })

  const resume = Effect.gen(function* () {
    const { did, capabilities, credits } = yield* RequestUser
    const runId = (yield* HttpRouter.params).runId ?? ""
    const body = yield* decodeBody(ResumeBody, yield* readJson(s.maxBodyBytes))
    const { wait } = yield* waitOf(did, runId)
    const waits = s.turns.waits
    if (wait === undefined || waits === undefined) return yield* noWait(runId)
    const answer: Wait.WaitAnswer = {
      _tag: "decision",
      approved: body.decision === "approve",
      ...(body.note === undefined ? {} : { note: body.note })
    }
    const requestId = `resume-${wait.waitId}`
    const answered = yield* Effect.either(
      streamedTurn(s.heartbeatMs, requestId, (sink) =>
        waits.answer(did, wait.waitId, answer, did, { capabilities, credits, sink }).pipe(
          Effect.mapError((e) => (e._tag === "TurnRefused" ? refusedAnswer(e) : e)),
          Effect.flatMap((result) =>
            result.started === undefined
              ? Effect.fail(new AlreadyAnswered({ record: result.outcome.record }))
              : Effect.succeed(result.started)
          )
        )
      )
    )
    if (answered._tag === "Right") return answered.right
    const failure = answered.left
    if (failure instanceof AlreadyAnswered) return json({ already: true, wait: waitView(failure.record) })
    if (failure instanceof WaitStore.WaitStoreError && failure.reason === "expired") {
      // Past its deadline: the host answers it now, as its timer would have (no user's credits).
      const ended = yield* Effect.either(
        waits.answer(did, wait.waitId, { _tag: "timed-out" }, WaitStore.HOST, { capabilities })
      )
      const record = ended._tag === "Right" ? ended.right.outcome.record : wait
      return json({ error: "expired", message: failure.message, wait: waitView(record) }, 409)
    }
    if (failure instanceof WaitStore.WaitStoreError) return yield* storeFailure(failure)
    return yield* failure
  })

  const list = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const runId = (yield* HttpRouter.params).runId ?? ""
    const { wait } = yield* waitOf(did, runId)
    return json({ waits: wait === undefined ? [] : [waitView(wait)] })
  })

  return { resume, list }
}

/** A wait answered before this answer: the first answer goes back, nothing starts. */
class AlreadyAnswered extends Data.TaggedError("AlreadyAnswered")<{
  readonly record: WaitStore.WaitRecord
}> {}
