/**
 * Abort and delete reach a session's turn on whichever host runs it (README "Choosing a
 * deployment"): this host serves the `TurnControl` port's requests with its own running turns
 * (the `TurnRegistry`), and `POST /messages/abort` and `DELETE /sessions/:id` ask every host
 * through it. On one process (the port's in-memory control) that is this host's registry alone.
 * When the port's engine cannot be reached, both fall back to this host's turns, as before.
 */
import { type RuntimeLogger, TurnControl } from "@plugboard/core"
import { Effect, Exit, Scope } from "effect"
import type { TurnRegistry } from "./TurnRegistry.js"

/** What the abort and delete routes call. */
export interface TurnStops {
  /** Aborts the user's turn on the session, on any host; `true` when one was running. */
  readonly abort: (did: string, sessionId: string) => Promise<boolean>
  /**
   * Stops the user's turns on the session on every host and waits until they have ended (saved),
   * at most `ms`; `true` when none is left running (or there was none).
   */
  readonly stop: (did: string, sessionId: string, ms: number) => Promise<boolean>
  /** Stops serving other hosts' requests. */
  readonly close: () => Promise<void>
}

/** Serves `control`'s requests with `registry`'s turns; the routes' stops go through `control`. */
export const connect = async (
  registry: TurnRegistry,
  control: TurnControl.TurnControlService,
  logger: RuntimeLogger
): Promise<TurnStops> => {
  const handler: TurnControl.StopHandler = async (request) => {
    if (request.reason === "user")
      return { found: registry.abort(request.did, request.sessionId), ended: true }
    const found = registry.has(request.did, request.sessionId)
    return { found, ended: await registry.stop(request.did, request.sessionId, request.waitMs) }
  }
  const scope = Effect.runSync(Scope.make())
  const served = await Effect.runPromiseExit(Scope.extend(control.serve(handler), scope))
  // Not served: this host's turns are reached directly, besides the other hosts'.
  const local = Exit.isFailure(served)
  if (local) {
    logger.warn(
      "turn control could not be served: an abort or delete on another host will not reach this one's turns",
      {
        error: String(served.cause)
      }
    )
  }
  const fallback = (doing: string, error: TurnControl.TurnControlError) =>
    Effect.sync(() => logger.warn(`${doing} reaches this host's turns only`, { error: error.message }))
  return {
    abort: (did, sessionId) =>
      Effect.runPromise(
        control.stop({ did, sessionId, reason: "user", waitMs: 0 }).pipe(
          Effect.map((r) => (local && registry.abort(did, sessionId)) || r.found),
          Effect.catchAll((e) =>
            Effect.zipRight(
              fallback("abort", e),
              Effect.sync(() => registry.abort(did, sessionId))
            )
          )
        )
      ),
    stop: (did, sessionId, ms) =>
      Effect.runPromise(
        control
          .stop({ did, sessionId, reason: "deleted", waitMs: Math.min(ms, TurnControl.MAX_WAIT_MS) })
          .pipe(
            Effect.flatMap((r) =>
              local
                ? Effect.promise(async () => (await registry.stop(did, sessionId, ms)) && r.ended)
                : Effect.succeed(r.ended)
            ),
            Effect.catchAll((e) =>
              Effect.zipRight(
                fallback("delete", e),
                Effect.promise(() => registry.stop(did, sessionId, ms))
              )
            )
          )
      ),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
