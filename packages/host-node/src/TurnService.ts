/**
 * The turn service: one module owns a turn from the request to `done` (docs/architecture.md).
 * Its input is a request value (`TurnRequest`), its output the turn's frames, pushed to the
 * caller's sink in order, the `done` frame last. Every front door is a thin adapter around it: the
 * HTTP route (`Messages.ts`) writes the frames as SSE or waits for the outcome; the Socket.IO
 * gateway sees the same events through the live hub.
 *
 * A turn, in order:
 * 1. **enter** the abort map (`RunningTurns.ts`) under the session's lock key: refused at once when
 *    another user's turn holds a thread users share;
 * 2. **check** the client's tools against every tool the turn could offer (its request scope,
 *    built here, once);
 * 3. **open** the session (`SessionAccess.ts`: created on first contact, another user's is 404) and
 *    make the turn's saver, here and nowhere else;
 * 4. **record** the run (a streamed turn): its `run` frame carries the user's message, so a
 *    restart can put the question back in the thread (`ThreadRepair.ts`);
 * 5. then, detached from the caller in a fiber of the service's scope: **replace** the session's
 *    earlier turns (aborted), **lock** the session (`TurnLock`, lease refreshed while held),
 *    **run** the agent (`Turns.ts`, the one hop that leaves Effect), **settle** the credits,
 *    **end** the run with `done` and **leave** the map.
 *
 * The lock and the abort map are the only exclusion on a session. Aborts reach the session's
 * turns on any host through the `TurnControl` port, whose handler here is the abort map.
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import {
  type Access,
  type Checkpointer,
  ClientTools,
  describe,
  type EventSink,
  type RunStore,
  type SessionStore,
  type TurnControl,
  type TurnLock
} from "@plugboard/core"
import { makeRequestScope } from "@plugboard/langgraph"
import { Cause, Clock, Deferred, Effect, Scope } from "effect"
import * as TurnCredits from "./credits/TurnCredits.js"
import { jsonSchemaCheck } from "./JsonSchemaCheck.js"
import * as LeaseKeeper from "./LeaseKeeper.js"
import * as RunLog from "./RunLog.js"
import { type AbortReason, RunningTurns } from "./RunningTurns.js"
import { openSession, ownerOf } from "./SessionAccess.js"
import * as SessionLock from "./SessionLock.js"
import type { LiveHub } from "./socket/LiveHub.js"
import * as TurnDeadlines from "./TurnDeadlines.js"
import type { TurnEnds } from "./TurnEnds.js"
import { TurnRefused } from "./TurnRefused.js"
import * as TurnStops from "./TurnStops.js"
import { type AgentDeps, type AgentRun, failureOf, runAgent, type TurnOutcome } from "./Turns.js"
import * as TurnWaits from "./TurnWaits.js"

/** One turn to run: the request value every front door builds. */
export interface TurnRequest {
  readonly did: string
  /** What the user's credentials grant: the turn offers what the catalog's `requires` allow. */
  readonly capabilities?: ReadonlyArray<Access.Capability> | undefined
  readonly sessionId: string
  readonly requestId: string
  readonly message: string
  /** What the client sent with the message and the thread keeps on it. */
  readonly extras?: Readonly<Record<string, unknown>> | undefined
  /** The client's tools of this turn (browser tools, AG-UI actions), unchecked. */
  readonly tools?: ReadonlyArray<unknown> | undefined
  readonly agActions?: ReadonlyArray<unknown> | undefined
  /** The credits the pipeline reserved for this turn; the turn settles them. */
  readonly credits?: TurnCredits.TurnCredits | undefined
  /** A run: its frames are numbered and stored, a dropped client rejoins (`GET /runs/:id`). */
  readonly run: boolean
  /** The wait this turn resumes (`TurnWaits.ts`): no message is added, the run is the resumed one. */
  readonly resume?: TurnWaits.TurnResume | undefined
}

/** What a resumed turn gets from whoever answered its wait (the user's request, or the host's timeout). */
export interface ResumeContext {
  readonly capabilities?: ReadonlyArray<Access.Capability> | undefined
  readonly credits?: TurnCredits.TurnCredits | undefined
  readonly sink?: FrameSink | undefined
}

/** How a turn ended: its outcome, the run's end, and why it was aborted (when it was). */
export interface TurnEnd {
  readonly outcome: TurnOutcome
  readonly end: RunStore.EndOutcome
  readonly abortReason: AbortReason | undefined
}

/** A started turn. */
export interface StartedTurn {
  /** The run's id (a streamed turn's), also the `run` frame's. */
  readonly runId: string | undefined
  /** Succeeds once the turn has ended and its `done` went to the sink. */
  readonly ended: Effect.Effect<TurnEnd>
  /** Aborts the turn (a JSON client that went away). */
  readonly abort: (reason: AbortReason) => void
}

/** Where a turn's frames go: its door writes them (SSE, a socket) in the order they come. */
export interface FrameSink {
  /** Frames in order, stored together (numbered, unless the run's store failed). */
  readonly frames: (frames: ReadonlyArray<RunLog.OutFrame>) => void
  /** The run's `done`, its last frame, with how the turn ended. */
  readonly done: (frame: RunLog.OutFrame, end: TurnEnd) => void
}

/** What the service composes (built once at boot). */
export interface TurnServiceOptions extends AgentDeps {
  readonly shared: Readonly<Record<string, unknown>>
  readonly oracleDid: string
  readonly oracleName: string
  readonly ports: {
    readonly sessions: SessionStore.SessionStoreService
    readonly runs: RunStore.RunStoreService
    readonly turnLock: TurnLock.TurnLockService
    readonly turnControl: TurnControl.TurnControlService
    /** The user's saver (the `Checkpointer` port, with the host's `checkpointerForUser`). */
    readonly saverFor: (did: string) => Effect.Effect<BaseCheckpointSaver, Checkpointer.CheckpointerError>
  }
  /** Lease of the session's lock (`TURN_LOCK_TTL_MS`): how long a dead host can keep the session. */
  readonly turnLockTtlMs: number
  /** The turn's wall clock (`TURN_TIMEOUT_MS`): at this time the turn is aborted even inside a call. */
  readonly turnTimeoutMs?: number | undefined
  /** Whether users' threads share one saver: then a thread's key is its session id alone. */
  readonly threadsShared?: boolean | undefined
  /** Tool lists that MCP servers announced as changed, while they are being read (`Sources.toolsSettled`). */
  readonly toolsSettled?: (() => Promise<void> | undefined) | undefined
  /** The live gateway's hub: the session's sockets see the turn's events and run its client tools. */
  readonly live?: LiveHub | undefined
  /** Counts how turns ended (`/health`). */
  readonly turnEnds: TurnEnds
  /** Where turns that stop for their user wait (docs/waiting.md); such a turn fails when absent. */
  readonly waits?: TurnWaits.TurnWaitsOptions | undefined
}

/** The session's key in the turn lock: one namespace per user, or one for all when threads are shared. */
export const turnLockKey = (threadsShared: boolean | undefined, did: string, sessionId: string): string =>
  threadsShared === true ? `thread\u0000${sessionId}` : `${did}\u0000${sessionId}`

/**
 * How a turn's outcome ends its run: only the user's own abort is `aborted`, other cuts are
 * `interrupted`; a run cut short says why (`reason`: the abort's, or the failure's).
 */
export const endOf = (outcome: TurnOutcome, abortReason: AbortReason | undefined): RunStore.EndOutcome => {
  if (outcome.status === "answered") return { status: "finished" }
  // The run is over; the resumed one continues the thread (`TurnWaits.ts`).
  if (outcome.status === "waiting") return { status: "interrupted", reason: WAITING }
  if (outcome.status === "failed") return { status: "failed", reason: outcome.error?.reason ?? "turn-failed" }
  // A bound, like the ones the agent loop checks between calls: the turn failed, it was not cut.
  if (abortReason === "wall-clock") return { status: "failed", reason: "wall-clock" }
  return {
    status: abortReason === "user" ? "aborted" : "interrupted",
    ...(abortReason === undefined ? {} : { reason: abortReason })
  }
}

const now = () => new Date().toISOString()

/** The `done` reason of a run that stopped for its user. */
export const WAITING = "waiting"

/** How long before the turn's wall clock a question a call asks is answered at the latest (the model still answers). */
const ASK_MARGIN_MS = 15_000

/** The service; see the module doc. */
export interface TurnService {
  /** Starts a turn; its frames go to `sink` (nothing for a JSON turn), `done` last. */
  readonly start: (request: TurnRequest, sink?: FrameSink) => Effect.Effect<StartedTurn, TurnRefused>
  /** Aborts the user's turn on the session, on any host; `true` when one was running. */
  readonly abort: (did: string, sessionId: string) => Effect.Effect<boolean>
  /** Stops the user's turns on the session on every host, waiting at most `ms` for them to end. */
  readonly stop: (did: string, sessionId: string, ms: number) => Effect.Effect<boolean>
  /** Whether a turn of another user holds the session's thread here (its first turn not saved yet). */
  readonly heldByOther: (did: string, sessionId: string) => boolean
  /** Shutdown: waits for the turns to end within `ms`, aborts the rest, stops serving other hosts. */
  readonly drain: (ms: number) => Effect.Effect<void>
  /** The waits (answer one, and the resumed turn starts): absent without a wait store. */
  readonly waits: TurnWaits.TurnWaits<ResumeContext, StartedTurn, TurnRefused> | undefined
}

/** Builds the turn service in the current scope (the app's): its turns are fibers of that scope. */
export const make = (options: TurnServiceOptions): Effect.Effect<TurnService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { ports, logger } = options
    const scope = yield* Effect.scope
    const keyOf = (did: string, sessionId: string) => turnLockKey(options.threadsShared, did, sessionId)
    const running = new RunningTurns(keyOf)
    // The sessions' leases, refreshed by one fiber of the service's scope.
    const leases = yield* LeaseKeeper.make(ports.turnLock, options.turnLockTtlMs)
    // The turns' wall-clock limit, watched by one fiber of the service's scope.
    const deadlines =
      options.turnTimeoutMs === undefined ? undefined : yield* TurnDeadlines.make(options.turnTimeoutMs)

    const { abort, stop } = yield* TurnStops.connect(running, ports.turnControl, logger)

    // The waits start resumed turns through `start` (bound once it exists, below).
    let startResumed: TurnWaits.StartResume<ResumeContext, StartedTurn, TurnRefused> = () =>
      Effect.die(new Error("the turn service is not built yet"))
    const waits =
      options.waits === undefined
        ? undefined
        : yield* TurnWaits.make<ResumeContext, StartedTurn, TurnRefused>(
            options.waits,
            (r) => startResumed(r),
            logger,
            {}
          )

    const start: TurnService["start"] = (request, sink) =>
      Effect.gen(function* () {
        const { did, sessionId, requestId } = request
        // 1. Entered before anything is read, under the lock's key: of two users' first contacts
        // with one shared thread in this process exactly one passes.
        const turn = running.enter(did, sessionId)
        if (turn === undefined) {
          return yield* new TurnRefused({
            reason: "session-not-found",
            message: `Session '${sessionId}' not found`
          })
        }
        // The turn's catalog, kept to its end: a rebuild replaces it for later turns only.
        const turnCatalog = options.current?.()
        const deps: AgentDeps =
          turnCatalog === undefined
            ? options
            : { ...options, catalog: turnCatalog.catalog, ranking: turnCatalog.ranking }
        const opened = yield* Effect.gen(function* () {
          // 2. The request's scope, built once: the client's tool names are checked against it.
          const settling = options.toolsSettled?.()
          if (settling !== undefined) yield* Effect.promise(() => settling)
          const scope = yield* Effect.promise(() =>
            makeRequestScope({
              catalog: deps.catalog,
              request: { userDid: did, sessionId, shared: options.shared },
              logger
            })
          )
          const checked = ClientTools.validate(
            deps.catalog,
            { tools: request.tools, agActions: request.agActions },
            { checkSchema: jsonSchemaCheck.check, requestTools: scope.tools }
          )
          if (checked._tag === "Left") {
            return yield* new TurnRefused({
              reason: "client-tool",
              message: checked.left.message,
              detail: checked.left.reason
            })
          }
          // 3. The session, and the turn's saver.
          const { saver } = yield* openSession(
            { ...options, ...ports, saverFor: ports.saverFor },
            did,
            sessionId,
            request.resume === undefined ? request.message : undefined
          )
          // 4. The run, whose first frame carries the user's message.
          const run = request.run
            ? yield* ports.runs
                .create({ runId: request.resume?.runId, did, sessionId, requestId, status: "running" })
                .pipe(
                  Effect.mapError(
                    (e) =>
                      new TurnRefused({
                        reason: "runs-unavailable",
                        message: "The run could not be recorded",
                        cause: e
                      })
                  )
                )
            : undefined
          return { scope, clientTools: checked.right, saver, run }
        }).pipe(Effect.onError(() => Effect.sync(turn.leave)))
        // The hold is this turn's from now: the pipeline no longer releases it (`Server.ts`).
        request.credits?.attach()

        const ended = yield* Deferred.make<TurnEnd>()
        const { signal } = turn.controller
        const live = options.live
        const key = { did, sessionId, requestId }
        const clientTools = opened.clientTools
        const credits = request.credits

        const body = Effect.gen(function* () {
          const log =
            opened.run === undefined
              ? undefined
              : yield* RunLog.make({
                  runs: ports.runs,
                  did,
                  runId: opened.run.runId,
                  sink: sink?.frames ?? (() => {}),
                  background: scope,
                  report: {
                    onGap: (missed, error) =>
                      logger.error(
                        "the run store failed mid-run: later frames go out without ids, and the run ends with a gap",
                        { runId: opened.run?.runId, missed, error }
                      ),
                    onRepairFailed: (error) =>
                      logger.error("a run with a gap could not be ended: the store is still down", {
                        runId: opened.run?.runId,
                        error
                      })
                  }
                })
          const record = (event: EventSink.AgentEvent) => log?.record(event)
          if (opened.run !== undefined) {
            record({
              _tag: "run",
              runId: opened.run.runId,
              requestId,
              resumed: false,
              ...(request.resume === undefined ? { message: request.message } : {})
            })
          }
          // The turn's wall clock reaches into a call that hangs (a tool), not only between calls.
          // A question a call asks is answered (declined) before it, so the turn can still finish.
          const askBefore =
            options.turnTimeoutMs === undefined
              ? undefined
              : (yield* Clock.currentTimeMillis) + Math.max(1_000, options.turnTimeoutMs - ASK_MARGIN_MS)
          if (deadlines !== undefined) {
            const unwatch = deadlines.watch(() => turn.controller.abort("wall-clock" satisfies AbortReason))
            yield* Scope.addFinalizer(yield* Effect.scope, Effect.sync(unwatch))
          }
          // 5. The session's earlier turns give way; the lock orders this one after them.
          running.abort(did, sessionId, "replaced", turn)
          const locked = yield* Effect.either(
            SessionLock.hold(ports.turnLock, leases, keyOf(did, sessionId), signal)
          )
          let outcome: TurnOutcome
          if (locked._tag === "Left") {
            outcome =
              locked.left.reason === "aborted" || signal.aborted
                ? { status: "aborted", timings: { load: 0, save: 0, agent: 0 } }
                : {
                    // The lock's engine down is `unavailable` (a 503 naming no host); the log has why.
                    status: "failed",
                    error: failureOf(locked.left),
                    timings: { load: 0, save: 0, agent: 0 }
                  }
            if (outcome.status === "failed") {
              logger.error("the session's lock could not be taken", { sessionId, error: locked.left.message })
            }
          } else {
            // A read made while opening is the thread's state only if no turn ran meanwhile; on a
            // saver users share, the thread is checked again under the lock.
            if (locked.right.waited) opened.saver.dropPrefetch()
            const taken =
              options.threadsShared === true && locked.right.waited
                ? yield* Effect.promise(() =>
                    opened.saver.inner.getTuple({ configurable: { thread_id: sessionId } }).then(
                      (t) => {
                        const owner = ownerOf(t?.checkpoint.channel_values)
                        return owner !== undefined && owner !== did
                      },
                      () => false
                    )
                  )
                : false
            let answerStreamed = false
            outcome = taken
              ? {
                  status: "failed",
                  error: { message: `Session '${sessionId}' not found`, reason: "session-not-found" },
                  timings: { load: 0, save: 0, agent: 0 }
                }
              : yield* Effect.promise(() =>
                  runAgent(
                    deps,
                    {
                      saver: opened.saver,
                      scope: opened.scope,
                      shared: TurnCredits.sharedWith(options.shared, credits),
                      did,
                      capabilities: request.capabilities,
                      sessionId,
                      requestId,
                      ...(request.resume === undefined
                        ? {
                            message: request.message,
                            messageId: opened.run === undefined ? undefined : `user-${opened.run.runId}`
                          }
                        : { resume: { request: request.resume.request, answer: request.resume.answer } }),
                      extras: request.extras,
                      signal,
                      // A call in flight asks its user (an MCP elicitation): an input wait on the live run.
                      ...(waits === undefined || opened.run === undefined
                        ? {}
                        : {
                            ask: (asked: Parameters<NonNullable<AgentRun["ask"]>>[0]) =>
                              waits.ask({
                                ...asked,
                                did,
                                runId: opened.run!.runId,
                                sessionId,
                                record,
                                notAfterMs: askBefore
                              })
                          }),
                      ...(live === undefined
                        ? {}
                        : {
                            // The session's sockets see the turn as the stream does (same events, same order).
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
                                  ? Promise.reject(
                                      new Error("this server has no live gateway to reach the client.")
                                    )
                                  : live.callClient(key, call, signal)
                            }
                          })
                    },
                    log === undefined
                      ? undefined
                      : (event) => {
                          if (event._tag === "message") answerStreamed = true
                          record(event)
                        }
                  )
                )
            // The answer went out as chunks; an answer the stream carried no text for still gets its event.
            if (outcome.status === "answered" && !answerStreamed) {
              record({ _tag: "message", content: outcome.answer ?? "", timestamp: now() })
            }
          }
          if (credits !== undefined) yield* credits.settle(`turn in session ${sessionId}`)
          // A turn that stops for its user: its wait is opened and announced, then the run ends.
          if (outcome.status === "waiting") {
            outcome = yield* TurnWaits.announce(waits, outcome, {
              did,
              runId: opened.run?.runId,
              sessionId,
              context: { capabilities: request.capabilities },
              record,
              logger
            })
          }
          if (outcome.status === "failed") {
            record({
              _tag: "error",
              error: outcome.error?.message ?? "The turn failed.",
              code: outcome.error?.reason ?? "turn-failed",
              details: { sessionId, requestId }
            })
          }
          const abortReason = signal.aborted ? (signal.reason as AbortReason) : undefined
          const end = endOf(outcome, abortReason)
          options.turnEnds.record(end)
          // The run's `done` says how it ended, with the answer as far as it went when cut short.
          const turnEnd: TurnEnd = { outcome, end, abortReason }
          // Ended whether or not anyone listens (a resume the host starts has no sink): `sink?.done(
          // yield* …)` would skip the end with the sink, and the run would never end.
          if (log !== undefined) {
            const done = yield* log.end(end)
            sink?.done(done, turnEnd)
          }
          yield* Deferred.succeed(ended, turnEnd)
        })
        yield* body.pipe(
          Effect.scoped,
          Effect.catchAllCause((cause) => {
            // A bug here, not the agent's failure (that is an outcome): the caller still gets an end.
            logger.error("a turn ended in a defect", { sessionId, error: describe(Cause.squash(cause)) })
            const outcome: TurnOutcome = {
              status: "failed",
              error: { message: "The turn failed.", reason: "turn-failed" },
              timings: { load: 0, save: 0, agent: 0 }
            }
            return Deferred.succeed(ended, {
              outcome,
              end: endOf(outcome, undefined),
              abortReason: undefined
            })
          }),
          Effect.ensuring(Effect.sync(turn.leave)),
          Effect.forkIn(scope)
        )
        return {
          runId: opened.run?.runId,
          ended: Deferred.await(ended),
          abort: (reason) => turn.controller.abort(reason)
        }
      })

    const drain = (ms: number) =>
      Effect.gen(function* () {
        if (!(yield* Effect.promise(() => running.settle(ms)))) {
          logger.warn("shutdown deadline reached; aborting running turns", { running: running.size })
          running.abortAll()
          yield* Effect.promise(() => running.settle(10_000))
        }
      })

    startResumed = ({ did, sessionId, resume, context }) =>
      start(
        {
          did,
          capabilities: context.capabilities,
          sessionId,
          requestId: TurnWaits.hostRequestId(),
          message: "",
          credits: context.credits,
          run: true,
          resume
        },
        context.sink
      )

    return {
      start,
      abort,
      stop,
      heldByOther: (did, sessionId) => running.heldByOther(did, sessionId),
      drain,
      waits
    }
  })
