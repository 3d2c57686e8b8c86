/**
 * The waits of the turn service (issue 40, docs/waiting.md): a turn that stops for its user opens
 * its wait here, and every answer goes through `answer`, the one place a wait is answered and its
 * run resumed, for the HTTP door (`Resume.ts`) and for the host's own timeout alike.
 *
 * - A waiting run's wait id and the id of the run that resumes it are derived from the run's id,
 *   so every host names them alike: a second resume finds the first, and the resumed run cannot be
 *   created twice.
 * - The `WaitStore` records an answer at most once: only the answer it records (`answered`)
 *   starts the resumed turn; every later one (`already`) gets the first back and starts nothing.
 * - Times are Effect's `Clock` (a test's `TestClock`).
 * - At the wait's deadline (`WAIT_TIMEOUT_MS`) the host answers it `timed-out`: a timer fiber of
 *   the service's scope for the waits this process opened, and a sweep of the store's due waits
 *   (at boot and then every `sweepEveryMs`) for those whose host died or restarted.
 * - An `input` wait (an MCP elicitation) stays on the live call: `ask` opens it, emits the
 *   `waiting` frame and waits in this process for `answer` (or the deadline: `timed-out`) to hand
 *   it the answer; the run does not end. It cannot outlive the process: a wait whose host died is
 *   answered `timed-out` by the sweep, and starts nothing.
 */
import { createHash, randomUUID } from "node:crypto"
import type { EventSink, RuntimeLogger, Wait } from "@plugboard/core"
import { describe, MetaTools, WaitStore } from "@plugboard/core"
import { Clock, Deferred, Effect, Exit, Fiber, Runtime, Schedule, type Scope } from "effect"
import type { TurnOutcome } from "./Turns.js"

/** The wait of the run `runId` (one wait per run: a run ends when it waits). */
export const waitIdOf = (runId: string): string =>
  `wait_${createHash("sha256").update(runId).digest("hex").slice(0, 32)}`

/** A fresh id for an input wait of the run `runId` (a run may ask several questions). */
export const inputWaitIdOf = (runId: string): string =>
  `wait_${createHash("sha256").update(`${runId}\u0000input\u0000${randomUUID()}`).digest("hex").slice(0, 32)}`

/** What a call in flight asks its user (`TurnWaits.ask`). */
export interface AskInput {
  readonly did: string
  readonly runId: string
  readonly sessionId: string
  readonly plugin: string
  readonly tool: string
  readonly args: Record<string, unknown>
  readonly question: Wait.InputQuestion
  /** The turn's signal: its abort ends the wait (the call is cancelled anyway). */
  readonly signal: AbortSignal
  /** Records a frame of the run (the `waiting` frame). */
  readonly record: (event: EventSink.AgentEvent) => void
  /** The wait's deadline is at the latest this (epoch ms): before the turn's own wall clock. */
  readonly notAfterMs?: number | undefined
}

/** The run that resumes the wait `waitId`. */
export const resumedRunIdOf = (waitId: string): string =>
  `run_${createHash("sha256").update(`resume\u0000${waitId}`).digest("hex").slice(0, 32)}`

/** What a turn that resumes a wait carries in its request (`TurnRequest.resume`). */
export interface TurnResume {
  readonly waitId: string
  /** The resumed run's id (`resumedRunIdOf`). */
  readonly runId: string
  readonly request: Wait.RunWaitRequest
  readonly answer: Wait.WaitAnswer
}

/** What starting a resumed turn needs from the service: its `start`, bound by the caller. */
export type StartResume<S, T, E> = (resume: {
  readonly did: string
  readonly sessionId: string
  readonly resume: TurnResume
  readonly context: S
}) => Effect.Effect<T, E>

/** The waits' options (`WAIT_TIMEOUT_MS`, the store). */
export interface TurnWaitsOptions {
  readonly store: WaitStore.WaitStoreService
  /** How long a wait stays open (`WAIT_TIMEOUT_MS`). */
  readonly timeoutMs: number
  /** How often the store's due waits are swept (default: the timeout, between 1 s and 1 min). */
  readonly sweepEveryMs?: number | undefined
}

/** The answer that was recorded (or found), and the resumed turn when this answer started one. */
export interface Answered<T> {
  readonly outcome: WaitStore.AnswerOutcome
  readonly started?: T | undefined
}

/** The waits, bound to the service's start. */
export interface TurnWaits<S, T, E> {
  /** Opens the wait of a run that stopped for its user; its timeout runs in the service's scope. */
  readonly open: (wait: {
    readonly did: string
    readonly runId: string
    readonly sessionId: string
    readonly request: Wait.RunWaitRequest
    /** Given to the resumed turn when the host answers the wait at its deadline. */
    readonly context: S
  }) => Effect.Effect<WaitStore.WaitRecord, WaitStore.WaitStoreError>
  /** Answers the user's wait; starts the resumed turn (with `context`) when this answer is the one recorded. */
  readonly answer: (
    did: string,
    waitId: string,
    answer: Wait.WaitAnswer,
    by: string,
    context: S
  ) => Effect.Effect<Answered<T>, WaitStore.WaitStoreError | E>
  /** Answers every due wait `timed-out` (the boot sweep, and the periodic one). */
  readonly sweep: Effect.Effect<number>
  /**
   * Opens an `input` wait for a call in flight, emits its `waiting` frame, and resolves with its
   * answer (`answer` hands it over, or the host's timeout). Rejects when the wait cannot be
   * recorded, or the turn is aborted.
   */
  readonly ask: (asked: AskInput) => Promise<Wait.InputAnswer>
  /**
   * The input wait of the user's run `runId` that a call in flight in this process waits on
   * (`waitId` when given, else the oldest), or undefined.
   */
  readonly liveInput: (did: string, runId: string, waitId?: string) => string | undefined
  /**
   * The user's connection to `plugin`'s server was made: answers each of their open `connect`
   * waits for it `connected` (by the host), which resumes its run. Resolves with how many it
   * answered; never fails (a failure is logged, the waits then end at their deadline).
   */
  readonly connected: (did: string, plugin: string) => Effect.Effect<number>
}

/**
 * Builds the waits in the current scope (the turn service's), and starts the sweep of due waits
 * there: at once (what a previous process left), then every `sweepEveryMs`. `hostContext` is what
 * a resumed turn the host starts itself gets (no user's request behind it).
 */
export const make = <S, T, E>(
  options: TurnWaitsOptions,
  start: StartResume<S, T, E>,
  logger: RuntimeLogger,
  hostContext: S
): Effect.Effect<TurnWaits<S, T, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const runtime = yield* Effect.runtime<never>()
    const { store } = options
    /** The input waits of calls in flight in this process, by wait id (in the order they were opened). */
    const live = new Map<
      string,
      { readonly did: string; readonly runId: string; readonly deliver: (answer: Wait.InputAnswer) => void }
    >()

    const answer: TurnWaits<S, T, E>["answer"] = (did, waitId, given, by, context) =>
      Effect.gen(function* () {
        const outcome = yield* store.answer(did, waitId, given, by, yield* Clock.currentTimeMillis)
        if (outcome._tag === "already") return { outcome }
        const { record } = outcome
        // An input wait's answer goes to the call in flight that asked; no turn starts.
        if (record.request._tag === "input") {
          if (given._tag === "values" || given._tag === "declined" || given._tag === "timed-out")
            live.get(waitId)?.deliver(given)
          return { outcome }
        }
        const started = yield* start({
          did,
          sessionId: record.sessionId,
          resume: { waitId, runId: resumedRunIdOf(waitId), request: record.request, answer: given },
          context
        })
        return { outcome, started }
      })

    const expire = (did: string, waitId: string, context: S) =>
      answer(did, waitId, { _tag: "timed-out" }, WaitStore.HOST, context).pipe(
        Effect.catchAll((error) =>
          Effect.sync(() =>
            logger.error("a wait could not be answered at its deadline", {
              waitId,
              error: describe(error)
            })
          )
        )
      )

    const connected: TurnWaits<S, T, E>["connected"] = (did, plugin) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const open = (yield* store.unanswered(did, WaitStore.MAX_LIMIT)).filter(
          (w) => w.request._tag === "connect" && w.request.plugin === plugin && w.deadlineMs > now
        )
        // Each wait on its own: one that cannot be resumed leaves the others resumed.
        yield* Effect.forEach(
          open,
          (w) =>
            answer(did, w.waitId, { _tag: "connected" }, WaitStore.HOST, hostContext).pipe(
              Effect.catchAll((error) =>
                Effect.sync(() =>
                  logger.error("a connect wait could not be answered", {
                    waitId: w.waitId,
                    error: describe(error)
                  })
                )
              )
            ),
          { discard: true }
        )
        return open.length
      }).pipe(
        Effect.catchAll((error) =>
          Effect.sync(() => {
            logger.error("the connect waits could not be answered", { plugin, error: describe(error) })
            return 0
          })
        )
      )

    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) => store.due(now)).pipe(
      Effect.flatMap((due) =>
        Effect.as(
          Effect.forEach(due, (w) => expire(w.did, w.waitId, hostContext), { discard: true }),
          due.length
        )
      ),
      Effect.catchAll((error) =>
        Effect.sync(() => {
          logger.error("the due waits could not be read", { error: error.message })
          return 0
        })
      )
    )

    const open: TurnWaits<S, T, E>["open"] = (wait) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const record: WaitStore.WaitRecord = {
          waitId: waitIdOf(wait.runId),
          did: wait.did,
          runId: wait.runId,
          sessionId: wait.sessionId,
          request: wait.request,
          createdAtMs: now,
          deadlineMs: now + options.timeoutMs
        }
        yield* store.open(record)
        yield* Effect.forkIn(
          Effect.delay(expire(wait.did, record.waitId, wait.context), options.timeoutMs),
          scope
        )
        return record
      })

    const ask: TurnWaits<S, T, E>["ask"] = (asked) => {
      const waitId = inputWaitIdOf(asked.runId)
      const asking = Effect.gen(function* () {
        const answered = yield* Deferred.make<Wait.InputAnswer>()
        live.set(waitId, {
          did: asked.did,
          runId: asked.runId,
          deliver: (a) => Deferred.unsafeDone(answered, Exit.succeed(a))
        })
        const now = yield* Clock.currentTimeMillis
        const deadlineMs = Math.max(
          now + 1,
          Math.min(now + options.timeoutMs, asked.notAfterMs ?? Number.POSITIVE_INFINITY)
        )
        const request: typeof Wait.InputRequest.Type = {
          _tag: "input",
          plugin: asked.plugin,
          message: asked.question.message,
          schema: { ...asked.question.schema }
        }
        yield* store.open({
          waitId,
          did: asked.did,
          runId: asked.runId,
          sessionId: asked.sessionId,
          request,
          createdAtMs: now,
          deadlineMs
        })
        const timer = yield* Effect.forkIn(
          Effect.delay(expire(asked.did, waitId, hostContext), Math.max(0, deadlineMs - now)),
          scope
        )
        asked.record({
          _tag: "waiting",
          waitId,
          runId: asked.runId,
          kind: "input",
          plugin: asked.plugin,
          tool: asked.tool,
          args: asked.args,
          reason: `the tool '${asked.tool}' of '${asked.plugin}' asks a question while it runs`,
          message: request.message,
          schema: request.schema,
          deadline: new Date(deadlineMs).toISOString()
        })
        return yield* Deferred.await(answered).pipe(
          Effect.ensuring(Fiber.interrupt(timer)),
          // The turn was aborted while its user was asked: the host closes the record now
          // (`timed-out`), rather than leaving it open for the next sweep.
          Effect.onInterrupt(() => expire(asked.did, waitId, hostContext))
        )
      }).pipe(Effect.ensuring(Effect.sync(() => live.delete(waitId))))
      return Runtime.runPromise(runtime)(asking, { signal: asked.signal })
    }

    const liveInput: TurnWaits<S, T, E>["liveInput"] = (did, runId, waitId) => {
      for (const [id, w] of live)
        if (w.did === did && w.runId === runId && (waitId === undefined || waitId === id)) return id
      return undefined
    }

    yield* Effect.forkIn(
      Effect.repeat(sweep, Schedule.spaced(options.sweepEveryMs ?? sweepInterval(options.timeoutMs))),
      scope
    )
    return { open, answer, sweep, ask, liveInput, connected }
  })

/** How often the due waits are swept for a timeout of `timeoutMs`. */
export const sweepInterval = (timeoutMs: number): number => Math.min(60_000, Math.max(1_000, timeoutMs))

/** A request id for a turn the host starts itself (a timeout's). */
export const hostRequestId = (): string => `wait-${randomUUID()}`

/** What a turn that stops for its user says when it cannot wait. */
const CANNOT_WAIT =
  "This turn needs the user's approval, which only a streamed turn (a run) on a host with a wait store can wait for."

/**
 * The end of a turn that stopped for its user (`outcome.status` `waiting`): its wait opened and
 * announced with a `waiting` frame, the outcome kept; or the turn failed, when it cannot wait (no
 * run: a JSON turn; no wait store) or the wait could not be recorded.
 */
export const announce = <S, T, E>(
  waits: TurnWaits<S, T, E> | undefined,
  outcome: TurnOutcome,
  turn: {
    readonly did: string
    readonly runId: string | undefined
    readonly sessionId: string
    /** What the resumed turn gets when the host answers the wait at its deadline. */
    readonly context: S
    readonly record: (event: EventSink.AgentEvent) => void
    readonly logger: RuntimeLogger
  }
): Effect.Effect<TurnOutcome> => {
  const failed = (message: string, reason: string, unavailable?: boolean): TurnOutcome => ({
    status: "failed",
    error: { message, reason, ...(unavailable === true ? { unavailable } : {}) },
    timings: outcome.timings
  })
  const { runId } = turn
  if (waits === undefined || runId === undefined || outcome.wait === undefined)
    return Effect.succeed(failed(CANNOT_WAIT, "cannot-wait"))
  const request = outcome.wait
  return waits.open({ did: turn.did, runId, sessionId: turn.sessionId, request, context: turn.context }).pipe(
    Effect.map((opened) => {
      const deadline = new Date(opened.deadlineMs).toISOString()
      const { waitId } = opened
      turn.record(
        request._tag === "approval"
          ? {
              _tag: "waiting",
              waitId,
              runId,
              kind: "approval",
              plugin: request.plugin,
              tool: request.tool,
              args: request.args,
              reason: request.reason,
              deadline
            }
          : {
              _tag: "waiting",
              waitId,
              runId,
              kind: "connect",
              plugin: request.plugin,
              tool: MetaTools.LOAD_CAPABILITY,
              args: { names: [request.plugin] },
              reason:
                request.reason ?? `the plugin '${request.plugin}' needs the user to connect their account`,
              url: request.url,
              deadline
            }
      )
      return outcome
    }),
    Effect.catchAll((error) =>
      Effect.sync(() => {
        turn.logger.error("a wait could not be opened", { runId, error: error.message })
        const what =
          request._tag === "approval" ? "The approval this turn needs" : "The connection this turn waits for"
        return failed(`${what} could not be recorded.`, "turn-failed", true)
      })
    )
  )
}
