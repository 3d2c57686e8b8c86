/**
 * The HTTP door of the turn service (`TurnService.ts`): `POST /messages/:sessionId` (SSE or JSON)
 * turns the request into the service's `TurnRequest` and its frames into SSE;
 * `POST /messages/abort`, `GET /runs/:runId` and `GET /sessions/:id/run` read and stop runs.
 *
 * SSE (docs/spec/wire.md#sse): headers first (with `X-Request-Id`, sent at once with a `: ok`
 * comment, as Node sends headers with the first body bytes), then each model call's `reasoning`
 * (the model's own, when its provider exposes it; the scripted router always does), every
 * `tool_call` event as the agent emits it, the answer as `message` chunks as the model produces
 * them (the adapter's `streamTurn`: reasoning, tool calls and tokens in one order), `error` when
 * the turn failed, and always a final `done`; a `: heartbeat` comment every `heartbeatMs`. A
 * streamed turn is a run (`RunStore`): every event is a numbered frame of its log (`id:`), the
 * first is the `run` frame (its id, also in `X-Run-Id`), the last `done` with how the run ended.
 * The run is detached from the response: a client that goes away does not stop it, it rejoins
 * (`GET /runs/:runId?after=N`); only `POST /messages/abort` (or shutdown) aborts it, and the turn
 * still ends cleanly (state saved, dangling calls answered).
 *
 * A message may carry client-side tools (`tools`: browser tools, `agActions`: AG-UI actions),
 * checked by the turn service (core's `ClientTools.validate`, against every tool the turn could
 * offer, and Ajv): a bad one is a 400 naming it, before any work. They are offered for that turn after the server's tools, and run by the
 * session's sockets (`socket/LiveHub.ts`), which also see the turn's `reasoning` and `tool_call`
 * events, in the order the stream has them.
 */
import { PassThrough } from "node:stream"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { RunStore } from "@plugboard/core"
import { Effect, Option, Schema, Stream } from "effect"
import {
  decodeBody,
  endStream,
  HttpFailure,
  json,
  nodeSocket,
  readJson,
  searchParams,
  unavailable
} from "./Http.js"
import { RequestUser, sessionIdParam } from "./Routes.js"
import { frameSse } from "./RunLog.js"
import type { TurnRefused } from "./TurnRefused.js"
import type { FrameSink, StartedTurn, TurnRequest, TurnService } from "./TurnService.js"

/** What the message routes use. */
export interface MessageServices {
  readonly turns: TurnService
  /** The runs: a streamed turn's numbered frames, which a dropped client rejoins. */
  readonly runs: RunStore.RunStoreService
  readonly maxBodyBytes: number
  readonly heartbeatMs: number
}

/** Longest accepted user message, in characters. */
export const MAX_MESSAGE_LENGTH = 100_000

const SendMessage = Schema.Struct({
  message: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_MESSAGE_LENGTH)),
  stream: Schema.optional(Schema.Boolean),
  requestId: Schema.optional(Schema.String.pipe(Schema.pattern(/^[\w.:-]{1,128}$/))),
  /** Browser tools of this turn (`name`, `description`, JSON Schema as `schema` or `parameters`). */
  tools: Schema.optional(Schema.Array(Schema.Unknown)),
  /** AG-UI actions of this turn (`name`, `description`, `schema`). */
  agActions: Schema.optional(Schema.Array(Schema.Unknown)),
  // What the QiForge client SDK 1.4 sends besides: kept with the user's message (see `extrasOf`).
  model: Schema.optional(Schema.String.pipe(Schema.maxLength(256))),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  timezone: Schema.optional(Schema.String.pipe(Schema.maxLength(64))),
  attachments: Schema.optional(Schema.Array(Schema.Unknown))
})

/**
 * The body fields a turn does not act on but keeps, on the user's message in the thread: the
 * client's `model` choice (the server answers with the model it is configured with), its
 * `metadata`, the user's `timezone`, and `attachments` (references the client uploaded).
 */
const extrasOf = (body: typeof SendMessage.Type): Readonly<Record<string, unknown>> | undefined => {
  const extras: Record<string, unknown> = {}
  for (const key of ["model", "metadata", "timezone", "attachments"] as const) {
    if (body[key] !== undefined) extras[key] = body[key]
  }
  return Object.keys(extras).length === 0 ? undefined : extras
}

const AbortRequest = Schema.Struct({ sessionId: Schema.String })

/** The SSE headers of the contract; with the run's id when the stream is a run's. */
export const sseHeaders = (requestId: string, runId?: string): Record<string, string> => ({
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
  "x-request-id": requestId,
  ...(runId === undefined ? {} : { "x-run-id": runId }),
  "access-control-expose-headers": "X-Request-Id, X-Run-Id"
})

/** A refused turn as its HTTP answer. */
export const refusedAnswer = (refused: TurnRefused): HttpFailure => {
  switch (refused.reason) {
    case "session-not-found":
      return new HttpFailure({ status: 404, message: refused.message, error: "session-not-found" })
    case "client-tool":
      return new HttpFailure({
        status: 400,
        message: refused.message,
        error: `client-tool-${refused.detail}`
      })
    case "invalid-input":
      return new HttpFailure({ status: 400, message: refused.message, error: "invalid-input" })
    case "storage-unavailable":
      return unavailable(
        refused.message,
        refused.detail ?? "the user's storage",
        "storage-unavailable",
        refused.cause
      )
    case "runs-unavailable":
      return unavailable(refused.message, "the run store", "runs-unavailable", refused.cause)
  }
}

const HEARTBEAT = ": heartbeat\n\n"
const OPENED = ": ok\n\n"

/**
 * A turn's frames as an SSE response (`POST /messages/:sessionId`, `POST /runs/:runId/resume`):
 * `start` starts the turn with the response's sink. A Node stream as the body: the platform pipes
 * it to the socket. Cheaper per event than an Effect Stream pipeline.
 */
export const streamedTurn = <E>(
  heartbeatMs: number,
  requestId: string,
  start: (sink: FrameSink) => Effect.Effect<StartedTurn, E>
) =>
  Effect.gen(function* () {
    const { timings, streamEnded } = yield* RequestUser
    const socket = nodeSocket(yield* HttpServerRequest.HttpServerRequest)
    const out = new PassThrough()
    const write = (frame: string) => {
      if (!out.destroyed && !out.writableEnded) out.write(frame)
    }
    // A comment at once, so the headers leave now (Node sends them with the first body bytes):
    // the first event may be a slow model call away, or wait for the session's previous turn.
    write(OPENED)
    const heartbeat = setInterval(() => write(HEARTBEAT), heartbeatMs)
    // The client left (a dropped mobile connection, a reload): the run goes on. Only
    // `POST /messages/abort` stops a run.
    out.on("close", () => clearInterval(heartbeat))
    const turn = yield* start({
      frames: (frames) => {
        let sse = ""
        for (const frame of frames) sse += frameSse(frame)
        write(sse)
      },
      done: (frame, end) => {
        clearInterval(heartbeat)
        Object.assign(timings, end.outcome.timings)
        endStream(socket, out, frameSse(frame))
        streamEnded()
      }
    }).pipe(
      Effect.tapError(() =>
        Effect.sync(() => {
          clearInterval(heartbeat)
          out.destroy()
        })
      )
    )
    return HttpServerResponse.raw(out, {
      contentType: "text/event-stream",
      headers: sseHeaders(requestId, turn.runId)
    })
  })

/** `POST /messages/:sessionId` and `POST /messages/abort`. */
export const messageRoutes = (s: MessageServices) => {
  const send = Effect.gen(function* () {
    const { did, capabilities, timings, credits } = yield* RequestUser
    const sessionId = yield* sessionIdParam
    const body = yield* decodeBody(SendMessage, yield* readJson(s.maxBodyBytes))
    const requestId = body.requestId ?? crypto.randomUUID()
    const request: TurnRequest = {
      did,
      capabilities,
      sessionId,
      requestId,
      message: body.message,
      extras: extrasOf(body),
      tools: body.tools,
      agActions: body.agActions,
      credits,
      run: body.stream === true
    }
    if (body.stream !== true) {
      const turn = yield* Effect.mapError(s.turns.start(request), refusedAnswer)
      const { outcome, abortReason } = yield* turn.ended.pipe(
        Effect.onInterrupt(() => Effect.sync(() => turn.abort("disconnected")))
      )
      Object.assign(timings, outcome.timings)
      if (outcome.status === "aborted" && abortReason === "wall-clock") {
        return yield* new HttpFailure({
          status: 504,
          message: "The turn ran past TURN_TIMEOUT_MS.",
          error: "wall-clock"
        })
      }
      if (outcome.status === "aborted") {
        return yield* new HttpFailure({ status: 409, message: "The turn was aborted.", error: "aborted" })
      }
      if (outcome.status === "failed") {
        return yield* new HttpFailure({
          status: outcome.error?.unavailable === true ? 503 : 502,
          message: outcome.error?.message ?? "The turn failed.",
          error: outcome.error?.reason ?? "turn-failed"
        })
      }
      return json({
        message: { type: "ai", content: outcome.answer ?? "", id: outcome.messageId ?? requestId },
        sessionId
      })
    }

    // A streamed turn is a run: the response writes its frames as they are stored, and a dropped
    // client rejoins (`GET /runs/:runId?after=N`).
    return yield* streamedTurn(s.heartbeatMs, requestId, (sink) =>
      Effect.mapError(s.turns.start(request, sink), refusedAnswer)
    )
  })

  /**
   * `GET /runs/:runId?after=N`: the run's frames after N, then the live ones until its `done`
   * (a client whose stream dropped rejoins; one that reloaded resumes from 0). 404 once the run
   * is unknown to this user, or pruned.
   */
  const rejoin = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const runId = (yield* HttpRouter.params).runId ?? ""
    const raw = (yield* searchParams).get("after")
    const after = raw === null || raw === "" ? 0 : /^\d{1,15}$/.test(raw) ? Number(raw) : Number.NaN
    if (Number.isNaN(after)) {
      return yield* new HttpFailure({ status: 400, message: "after must be a whole number of frames." })
    }
    const found = yield* s.runs.get(did, runId).pipe(Effect.orElseSucceed(() => Option.none()))
    if (Option.isNone(found)) {
      return yield* new HttpFailure({
        status: 404,
        message: `No run '${runId.slice(0, 200)}' (unknown, or expired).`
      })
    }
    const run = found.value
    const socket = nodeSocket(yield* HttpServerRequest.HttpServerRequest)
    const out = new PassThrough()
    const write = (frame: string) => {
      if (!out.destroyed && !out.writableEnded) out.write(frame)
    }
    write(OPENED)
    const heartbeat = setInterval(() => write(HEARTBEAT), s.heartbeatMs)
    // The follower outlives this handler (the response is returned at once): a daemon fiber of
    // the app's runtime, stopped when the client leaves.
    const follower = yield* Effect.forkDaemon(
      Stream.runForEach(s.runs.follow(did, runId, Math.min(after, run.lastFrameId)), (frame) =>
        Effect.sync(() =>
          // The `done` frame leaves with the response's end, as on the turn's own stream.
          frame.event === RunStore.DONE_EVENT
            ? endStream(socket, out, frameSse(frame))
            : write(frameSse(frame))
        )
      )
    )
    follower.addObserver(() => {
      clearInterval(heartbeat)
      if (!out.writableEnded) out.end()
    })
    // The client left: stop following (the run goes on).
    out.on("close", () => {
      clearInterval(heartbeat)
      follower.unsafeInterruptAsFork(follower.id())
    })
    return HttpServerResponse.raw(out, {
      contentType: "text/event-stream",
      headers: sseHeaders(run.requestId, run.runId)
    })
  })

  /** `GET /sessions/:id/run`: the session's run still going (`{run: {runId, status}}`), or `{run: null}`. */
  const sessionRun = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const sessionId = yield* sessionIdParam
    const active = yield* s.runs
      .activeForSession(did, sessionId)
      .pipe(
        Effect.mapError(
          (e) => new HttpFailure({ status: 503, message: `The runs could not be read: ${e.message}` })
        )
      )
    return json({
      run: Option.match(active, {
        onNone: () => null,
        onSome: (r) => ({ runId: r.runId, status: r.status, requestId: r.requestId })
      })
    })
  })

  const abort = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const body = yield* decodeBody(AbortRequest, yield* readJson(s.maxBodyBytes))
    return json({ success: yield* s.turns.abort(did, body.sessionId) })
  })

  return { send, abort, rejoin, sessionRun }
}
