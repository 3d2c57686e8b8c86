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
import { type RunStore, Wait, WaitStore } from "@plugboard/core"
import { Data, Effect, Option as O, Schema } from "effect"
import { decodeBody, HttpFailure, json, readJson, unavailable } from "./Http.js"
import { misfitValues } from "./InputValues.js"
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

const DecisionBody = Schema.Struct({
  decision: Schema.Literal("approve", "deny"),
  note: Schema.optional(Schema.String.pipe(Schema.maxLength(MAX_NOTE_LENGTH))),
  waitId: Schema.optional(Schema.String)
})

/** An input wait's answer: the form's values, or a decline. */
const InputBody = Schema.Union(
  Schema.Struct({
    values: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
    waitId: Schema.optional(Schema.String)
  }),
  Schema.Struct({ decline: Schema.Literal(true), waitId: Schema.optional(Schema.String) })
)

const ResumeBody = Schema.Union(DecisionBody, InputBody)

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
  /** The run that continues the turn once an approval or connect is answered (an input wait's run goes on). */
  resumedRunId: w.request._tag === "input" ? null : resumedRunIdOf(w.waitId)
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
    const waits = s.turns.waits
    // A call in flight that asks (an input wait) is answered on its live run; else the run's approval.
    const liveId = waits?.liveInput(did, runId, body.waitId)
    if (liveId !== undefined && waits !== undefined) return yield* answerInput(did, runId, liveId, body)
    const { wait } = yield* waitOf(did, runId)
    if (wait === undefined || waits === undefined) return yield* noWait(runId)
    if (!("decision" in body))
      return yield* new HttpFailure({
        status: 400,
        message: `${Wait.misfit(wait.request, "values" in body ? { _tag: "values", values: body.values } : { _tag: "declined" }, true) ?? "this wait is not answered with values"}.`,
        error: "wait-invalid"
      })
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

  /**
   * Answers the input wait `waitId` of a call in flight on the user's run: the values must fit the
   * request's schema (400 with why), a decision does not fit (400); the answer recorded is handed
   * to the call, and the run, still streaming, goes on. `200` JSON either way (`already` when it
   * was answered first).
   */
  const answerInput = (did: string, runId: string, waitId: string, body: typeof ResumeBody.Type) =>
    Effect.gen(function* () {
      const waits = s.turns.waits!
      const store = s.store
      if (store === undefined) return yield* noWait(runId)
      const wait = yield* store.get(did, waitId).pipe(Effect.mapError(storeFailure))
      if (wait === undefined || wait.request._tag !== "input") return yield* noWait(runId)
      const answer: Wait.WaitAnswer =
        "values" in body
          ? { _tag: "values", values: body.values }
          : "decline" in body
            ? { _tag: "declined" }
            : { _tag: "decision", approved: body.decision === "approve" }
      const misfit =
        Wait.misfit(wait.request, answer, true) ??
        (answer._tag === "values" && wait.answered === undefined
          ? misfitValues(wait.request.schema, answer.values)
          : undefined)
      if (misfit !== undefined)
        return yield* new HttpFailure({ status: 400, message: `${misfit}.`, error: "wait-invalid" })
      const answered = yield* Effect.either(waits.answer(did, waitId, answer, did, {}))
      if (answered._tag === "Right") {
        const { outcome } = answered.right
        return json(
          outcome._tag === "already"
            ? { already: true, wait: waitView(outcome.record) }
            : { answered: true, wait: waitView(outcome.record) }
        )
      }
      const failure = answered.left
      if (failure instanceof WaitStore.WaitStoreError && failure.reason === "expired") {
        const ended = yield* Effect.either(
          waits.answer(did, waitId, { _tag: "timed-out" }, WaitStore.HOST, {})
        )
        const record = ended._tag === "Right" ? ended.right.outcome.record : wait
        return json({ error: "expired", message: failure.message, wait: waitView(record) }, 409)
      }
      if (failure instanceof WaitStore.WaitStoreError) return yield* storeFailure(failure)
      return yield* Effect.die(failure)
    })

  const list = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const runId = (yield* HttpRouter.params).runId ?? ""
    const { store, wait } = yield* waitOf(did, runId)
    // The questions the run's calls asked (input waits), beside its approval: found among the
    // user's oldest `MAX_LIMIT` waits (their ids are not derived from the run's).
    const asked = (yield* store.list(did, WaitStore.MAX_LIMIT).pipe(Effect.mapError(storeFailure))).filter(
      (w) => w.runId === runId && w.request._tag === "input"
    )
    return json({ waits: [...(wait === undefined ? [] : [wait]), ...asked].map(waitView) })
  })

  return { resume, list }
}

/** A wait answered before this answer: the first answer goes back, nothing starts. */
class AlreadyAnswered extends Data.TaggedError("AlreadyAnswered")<{
  readonly record: WaitStore.WaitRecord
}> {}
