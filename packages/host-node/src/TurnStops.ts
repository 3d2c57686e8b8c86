/**
 * Abort and delete reach a session's turns on whichever host runs them (docs/architecture.md
 * "One exclusion mechanism"): this host serves the `TurnControl` port's requests with its abort
 * map (`RunningTurns.ts`), and the turn service's `abort` and `stop` ask every host through it.
 * On one process (the port's in-memory control) that is this host's map alone; when the port's
 * engine cannot be reached, both fall back to this host's turns, with a warning.
 */
import { type RuntimeLogger, TurnControl } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import type { RunningTurns } from "./RunningTurns.js"

/** Aborts and stops on every host. */
export interface TurnStops {
  /** Aborts the user's turn on the session, on any host; `true` when one was running. */
  readonly abort: (did: string, sessionId: string) => Effect.Effect<boolean>
  /** Stops the user's turns on the session on every host, waiting at most `ms` for them to end. */
  readonly stop: (did: string, sessionId: string, ms: number) => Effect.Effect<boolean>
}

/** Serves `control`'s requests with `running`'s turns, for as long as the current scope lasts. */
export const connect = (
  running: RunningTurns,
  control: TurnControl.TurnControlService,
  logger: RuntimeLogger
): Effect.Effect<TurnStops, never, Scope.Scope> =>
  Effect.gen(function* () {
    // Other hosts' aborts and deletes reach this host's turns through the abort map.
    const handler: TurnControl.StopHandler = async (request) => {
      if (request.reason === "user")
        return { found: running.abort(request.did, request.sessionId, "user"), ended: true }
      const found = running.has(request.did, request.sessionId)
      return { found, ended: await running.stop(request.did, request.sessionId, "deleted", request.waitMs) }
    }
    const served = yield* Effect.exit(control.serve(handler))
    // Not served: this host's turns are reached directly, besides the other hosts'.
    const local = Exit.isFailure(served)
    if (local) {
      logger.warn(
        "turn control could not be served: an abort or delete on another host will not reach this one's turns",
        { error: String(served.cause) }
      )
    }
    const fallback = (doing: string, error: TurnControl.TurnControlError) =>
      Effect.sync(() => logger.warn(`${doing} reaches this host's turns only`, { error: error.message }))

    const abort = (did: string, sessionId: string) =>
      control.stop({ did, sessionId, reason: "user", waitMs: 0 }).pipe(
        Effect.map((r) => (local && running.abort(did, sessionId, "user")) || r.found),
        Effect.catchAll((e) => Effect.as(fallback("abort", e), running.abort(did, sessionId, "user")))
      )
    const stop = (did: string, sessionId: string, ms: number) =>
      control.stop({ did, sessionId, reason: "deleted", waitMs: Math.min(ms, TurnControl.MAX_WAIT_MS) }).pipe(
        Effect.flatMap((r) =>
          local
            ? Effect.map(
                Effect.promise(() => running.stop(did, sessionId, "deleted", ms)),
                (ended) => ended && r.ended
              )
            : Effect.succeed(r.ended)
        ),
        Effect.catchAll((e) =>
          Effect.zipRight(
            fallback("delete", e),
            Effect.promise(() => running.stop(did, sessionId, "deleted", ms))
          )
        )
      )
    return { abort, stop }
  })
