/**
 * `POST /messages/:sessionId` (SSE or JSON) and `POST /messages/abort`; the running turns they
 * start and stop are in `TurnRegistry.ts`.
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
 * checked by core's `ClientTools.validate` against every tool the turn could offer (the request's
 * own per-request tools included) and by Ajv (`JsonSchemaCheck.ts`): a bad one is a 400 naming it,
 * before any work. They are offered for that turn after the server's tools, and run by the
 * session's sockets (`socket/LiveHub.ts`), which also see the turn's `reasoning` and `tool_call`
 * events, in the order the stream has them.
 */
import { PassThrough } from "node:stream"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { ClientTools, type EventSink, RunStore, type RuntimeLogger, type SessionStore } from "@plugboard/core"
import { Effect, Either, Fiber, Option, Schema, Stream } from "effect"
import * as TurnCredits from "./credits/TurnCredits.js"
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
import { jsonSchemaCheck } from "./JsonSchemaCheck.js"
import { RequestUser, sessionIdParam } from "./Routes.js"
import { frameSse, makeRunLog } from "./RunLog.js"
import { openSession } from "./SessionAccess.js"
import type { LiveHub } from "./socket/LiveHub.js"
import type { TurnEnds } from "./TurnEnds.js"
import type { AbortReason, TurnRegistry } from "./TurnRegistry.js"
import type { TurnStops } from "./TurnStops.js"
import { prepareScope, runOne, type TurnDeps, type TurnOutcome, type TurnRequest } from "./Turns.js"

/** What the message routes use. */
export interface MessageServices {
  readonly turns: TurnDeps
  readonly registry: TurnRegistry
  readonly sessions: SessionStore.SessionStoreService
  /** The runs: a streamed turn's numbered frames, which a dropped client rejoins. */
  readonly runs: RunStore.RunStoreService
  readonly oracleDid: string
  readonly oracleName: string
  readonly maxBodyBytes: number
  readonly heartbeatMs: number
  /** The live gateway's hub: the session's sockets see the turn's events and run its client tools. */
  readonly live?: LiveHub | undefined
  /** Whether users' threads can share a saver (see `SessionAccessServices.threadsShared`). */
  readonly threadsShared?: boolean | undefined
  readonly logger: RuntimeLogger
  /**
   * The turn's wall clock (`TURN_TIMEOUT_MS`): the agent loop checks it before each call, and at
   * this time the turn is aborted even inside one (a tool that hangs). None when absent.
   */
  readonly turnTimeoutMs?: number | undefined
  /** Counts how turns ended (`/health`); none when absent. */
  readonly turnEnds?: TurnEnds | undefined
  /** Aborts reach the session's turn on any host (`TurnStops.ts`); this registry's alone when absent. */
  readonly stops?: Pick<TurnStops, "abort"> | undefined
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

const now = () => new Date().toISOString()

/** The SSE headers of the contract; with the run's id when the stream is a run's. */
export const sseHeaders = (requestId: string, runId?: string): Record<string, string> => ({
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
  "x-request-id": requestId,
  ...(runId === undefined ? {} : { "x-run-id": runId }),
  "access-control-expose-headers": "X-Request-Id, X-Run-Id"
})

/** Why a failed turn failed, as a `done` reason: the bound it hit, else its error code. */
const failureReason = (code: string): string => {
  const [tag, detail] = code.split(":", 2)
  if (tag === "TurnBoundExceeded" && detail !== undefined) return detail
  if (tag === "ModelCallTimeout" && detail !== undefined) return `model-${detail}-timeout`
  return RunStore.isReason(code) ? code : "turn-failed"
}

/**
 * How a turn's outcome ends its run: only the user's own abort is `aborted`, other cuts are
 * `interrupted`; a run cut short says why (`reason`: the abort's, or the failure's).
 */
const endOf = (outcome: TurnOutcome, abortReason: unknown): RunStore.EndOutcome => {
  if (outcome.status === "answered") return { status: "finished" }
  if (outcome.status === "failed") return { status: "failed", reason: failureReason(outcome.error!.code) }
  // A bound, like the ones the agent loop checks between calls: the turn failed, it was not cut.
  if (abortReason === "wall-clock") return { status: "failed", reason: "wall-clock" }
  return {
    status: abortReason === "user" ? "aborted" : "interrupted",
    ...(typeof abortReason === "string" ? { reason: abortReason } : {})
  }
}

const HEARTBEAT = ": heartbeat\n\n"
const OPENED = ": ok\n\n"

/** `POST /messages/:sessionId` and `POST /messages/abort`. */
export const messageRoutes = (s: MessageServices) => {
  const send = Effect.gen(function* () {
    const { did, capabilities, timings, streamEnded, credits } = yield* RequestUser
    const sessionId = yield* sessionIdParam
    const body = yield* decodeBody(SendMessage, yield* readJson(s.maxBodyBytes))
    // With client tools, the request's own tools are built first (the turn reuses them), so a name
    // any tool of this turn has is refused here: before the session, the turn or any event.
    const hasClientTools = (body.tools?.length ?? 0) + (body.agActions?.length ?? 0) > 0
    const scope = hasClientTools
      ? yield* Effect.promise(() => prepareScope(s.turns, { did, sessionId }))
      : undefined
    const checked = ClientTools.validate(
      s.turns.catalog,
      { tools: body.tools, agActions: body.agActions },
      { checkSchema: jsonSchemaCheck.check, requestTools: scope?.tools }
    )
    if (Either.isLeft(checked)) {
      return yield* Effect.fail(
        new HttpFailure({
          status: 400,
          message: checked.left.message,
          error: `client-tool-${checked.left.reason}`
        })
      )
    }
    const clientTools = checked.right
    // The user's own session, or created on first contact (docs/spec/pipeline.md#sessions);
    // another user's is a 404.
    // The claim on the thread is held until the turn has ended (and saved); see SessionAccess.
    const { saver, release } = yield* openSession(
      { ...s, saverFor: s.turns.saverFor, claims: s.registry.claims },
      did,
      sessionId
    )
    const requestId = body.requestId ?? crypto.randomUUID()
    const live = s.live
    const key = { did, sessionId, requestId }
    const turnRequest = (signal: AbortSignal): TurnRequest => ({
      saver,
      did,
      capabilities,
      sessionId,
      requestId,
      message: body.message,
      extras: extrasOf(body),
      signal,
      scope,
      ...(live === undefined
        ? {}
        : {
            // The session's sockets see the turn as the SSE stream does (same events, same order).
            observe: (event: EventSink.AgentEvent) => {
              if (event._tag === "tool_call" || event._tag === "reasoning") {
                const { _tag, ...payload } = event
                live.publish(key, _tag, { ...payload, sessionId, requestId })
              }
            }
          }),
      clientState: {
        browserTools: clientTools.filter((t) => t.kind === "browser").map(ClientTools.toDto),
        agActions: clientTools.filter((t) => t.kind === "action").map(ClientTools.toDto)
      },
      ...(clientTools.length === 0
        ? {}
        : {
            clientTools: {
              tools: clientTools,
              call: (call) =>
                live === undefined
                  ? Promise.reject(new Error("this server has no live gateway to reach the client."))
                  : live.callClient(key, call, signal)
            }
          })
    })
    const start = (emit?: (event: EventSink.AgentEvent) => void) => {
      const running = s.registry.start(did, sessionId, async (signal) => {
        // The turn's credits (credits/TurnCredits.ts): its plugins charge the hold, settled before `done`.
        const turns = { ...s.turns, shared: TurnCredits.sharedWith(s.turns.shared, credits) }
        const outcome = await runOne(turns, turnRequest(signal), emit)
        await credits?.settle(`turn in session ${sessionId}`)
        Object.assign(timings, outcome.timings)
        return outcome
      })
      const wallClock =
        s.turnTimeoutMs === undefined
          ? undefined
          : setTimeout(() => running.controller.abort("wall-clock" satisfies AbortReason), s.turnTimeoutMs)
      wallClock?.unref()
      void running.done.finally(() => {
        clearTimeout(wallClock)
        release()
      })
      return running
    }
    if (body.stream !== true) {
      const running = start()
      const outcome = yield* Effect.promise(() => running.done).pipe(
        Effect.onInterrupt(() => Effect.sync(() => running.controller.abort()))
      )
      s.turnEnds?.record(endOf(outcome, running.controller.signal.reason))
      if (outcome.status === "aborted" && running.controller.signal.reason === "wall-clock") {
        return yield* Effect.fail(
          new HttpFailure({ status: 504, message: "The turn ran past TURN_TIMEOUT_MS.", error: "wall-clock" })
        )
      }
      if (outcome.status === "aborted") {
        return yield* Effect.fail(
          new HttpFailure({ status: 409, message: "The turn was aborted.", error: "aborted" })
        )
      }
      if (outcome.status === "failed") {
        return yield* Effect.fail(
          new HttpFailure({
            status: outcome.error!.unavailable === true ? 503 : 502,
            message: outcome.error!.message,
            error: outcome.error!.code
          })
        )
      }
      return json({
        message: { type: "ai", content: outcome.answer ?? "", id: outcome.messageId ?? requestId },
        sessionId
      })
    }

    // A streamed turn is a run: every event is a numbered frame of its log, which the response
    // writes as it is appended and a dropped client rejoins (`GET /runs/:runId?after=N`).
    const runs = s.runs
    const socket = nodeSocket(yield* HttpServerRequest.HttpServerRequest)
    const run = yield* runs
      .create({ did, sessionId, requestId, status: "running" })
      .pipe(
        Effect.mapError((e) =>
          unavailable("The run could not be recorded", "the run store", "runs-unavailable", e)
        )
      )
    // A Node stream as the body: the platform pipes it to the socket, and destroys it when the
    // client goes away (which aborts the turn). Cheaper per event than an Effect Stream pipeline.
    const out = new PassThrough()
    const write = (frame: string) => {
      if (!out.destroyed && !out.writableEnded) out.write(frame)
    }
    const log = makeRunLog(runs, did, run.runId, write, {
      onGap: (missed, error) =>
        s.logger.error(
          "the run store failed mid-run: later frames go out without ids, and the run ends with a gap",
          {
            runId: run.runId,
            missed,
            error
          }
        ),
      onRepairFailed: (error) =>
        s.logger.error("a run with a gap could not be ended: the store is still down", {
          runId: run.runId,
          error
        })
    })
    const record = log.record
    // A comment at once, so the headers leave now (Node sends them with the first body bytes):
    // the first event may be a slow model call away, or wait for the session's previous turn.
    write(OPENED)
    record({ _tag: "run", runId: run.runId, requestId, resumed: false })
    let answerStreamed = false
    const running = start((event) => {
      if (event._tag === "message") answerStreamed = true
      record(event)
    })
    const heartbeat = setInterval(() => write(HEARTBEAT), s.heartbeatMs)
    // The client left (a dropped mobile connection, a reload): the run goes on, and the client
    // rejoins it (`GET /runs/:runId?after=N`). Only `POST /messages/abort` stops a run.
    out.on("close", () => clearInterval(heartbeat))
    void running.done.then(async (outcome) => {
      // The answer went out as chunks; an answer the stream carried no text for still gets its event.
      if (outcome.status === "answered" && !answerStreamed) {
        record({ _tag: "message", content: outcome.answer ?? "", timestamp: now() })
      } else if (outcome.status === "failed") {
        record({
          _tag: "error",
          error: outcome.error!.message,
          code: outcome.error!.code,
          details: { sessionId, requestId }
        })
      }
      // The run's `done` says how it ended, with the answer as far as it went when cut short.
      const end = endOf(outcome, running.controller.signal.reason)
      s.turnEnds?.record(end)
      const done = await log.end(end)
      clearInterval(heartbeat)
      endStream(socket, out, done)
      streamEnded()
    })
    return HttpServerResponse.raw(out, {
      contentType: "text/event-stream",
      headers: sseHeaders(requestId, run.runId)
    })
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
      return yield* Effect.fail(
        new HttpFailure({ status: 400, message: "after must be a whole number of frames." })
      )
    }
    const found = yield* s.runs.get(did, runId).pipe(Effect.orElseSucceed(() => Option.none()))
    if (Option.isNone(found)) {
      return yield* Effect.fail(
        new HttpFailure({ status: 404, message: `No run '${runId.slice(0, 200)}' (unknown, or expired).` })
      )
    }
    const run = found.value
    const socket = nodeSocket(yield* HttpServerRequest.HttpServerRequest)
    const out = new PassThrough()
    const write = (frame: string) => {
      if (!out.destroyed && !out.writableEnded) out.write(frame)
    }
    write(OPENED)
    const heartbeat = setInterval(() => write(HEARTBEAT), s.heartbeatMs)
    const follower = Effect.runFork(
      Stream.runForEach(s.runs.follow(did, runId, Math.min(after, run.lastFrameId)), (frame) =>
        Effect.sync(() =>
          // The `done` frame leaves with the response's end, as on the turn's own stream.
          frame.event === RunStore.DONE_EVENT
            ? endStream(socket, out, frameSse(frame))
            : write(frameSse(frame))
        )
      )
    )
    void Effect.runPromise(Fiber.await(follower)).then(() => {
      clearInterval(heartbeat)
      if (!out.writableEnded) out.end()
    })
    // The client left: stop following (the run goes on).
    out.on("close", () => {
      clearInterval(heartbeat)
      void Effect.runPromise(Fiber.interrupt(follower))
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
        Effect.mapError((e) =>
          unavailable("The runs could not be read", "the run store", "runs-unavailable", e)
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
    const stops = s.stops
    const success =
      stops === undefined
        ? s.registry.abort(did, body.sessionId)
        : yield* Effect.promise(() => stops.abort(did, body.sessionId))
    return json({ success })
  })

  return { send, abort, rejoin, sessionRun }
}
