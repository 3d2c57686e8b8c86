/**
 * A session's `TurnLock`, held for one turn (docs/architecture.md "One exclusion mechanism"): taken
 * at once when free, else waited for (until the turn's signal aborts the wait), its lease
 * refreshed every third of its length by a fiber of the current scope, released when the scope
 * closes. Whether the turn waited tells it that a read made before the lock may be stale.
 */
import type { TurnLock } from "@plugboard/core"
import { Effect, Schedule, type Scope } from "effect"

/** Holds the session's lock under `key` until the current scope closes; `waited` when another turn had it. */
export const hold = (
  lock: TurnLock.TurnLockService,
  key: string,
  ttlMs: number,
  signal: AbortSignal
): Effect.Effect<{ readonly waited: boolean }, TurnLock.TurnLockError, Scope.Scope> =>
  Effect.gen(function* () {
    const first = yield* Effect.either(lock.acquire(key, { ttlMs, waitMs: 0, signal }))
    const waited = first._tag === "Left"
    const lease =
      first._tag === "Right"
        ? first.right
        : first.left.reason === "busy"
          ? yield* lock.acquire(key, { ttlMs, signal })
          : yield* Effect.fail(first.left)
    yield* Effect.addFinalizer(() => Effect.ignore(lease.release))
    yield* lock
      .refresh(key, lease.token, ttlMs)
      .pipe(
        Effect.ignore,
        Effect.repeat(Schedule.spaced(Math.max(1, Math.floor(ttlMs / 3)))),
        Effect.delay(Math.max(1, Math.floor(ttlMs / 3))),
        Effect.forkScoped
      )
    return { waited }
  })
