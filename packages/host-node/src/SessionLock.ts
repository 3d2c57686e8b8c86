/**
 * A session's `TurnLock`, held for one turn (docs/architecture.md "One exclusion mechanism"): taken
 * at once when free, else waited for (until the turn's signal aborts the wait), its lease
 * refreshed by the turn service's keeper (`LeaseKeeper.ts`) and released when the scope closes. Whether the turn waited tells it that a read made before the lock may be stale.
 */
import type { TurnLock } from "@plugboard/core"
import { Effect, Scope } from "effect"
import type { LeaseKeeper } from "./LeaseKeeper.js"

/** Holds the session's lock under `key` until the current scope closes; `waited` when another turn had it. */
export const hold = (
  lock: TurnLock.TurnLockService,
  keeper: LeaseKeeper,
  key: string,
  signal: AbortSignal
): Effect.Effect<{ readonly waited: boolean }, TurnLock.TurnLockError, Scope.Scope> =>
  Effect.gen(function* () {
    const { ttlMs } = keeper
    const first = yield* Effect.either(lock.acquire(key, { ttlMs, waitMs: 0, signal }))
    const waited = first._tag === "Left"
    const lease =
      first._tag === "Right"
        ? first.right
        : first.left.reason === "busy"
          ? yield* lock.acquire(key, { ttlMs, signal })
          : yield* Effect.fail(first.left)
    const letGo = keeper.keep(key, lease.token)
    // On the scope itself, not `Effect.addFinalizer`: that one runs its finalizer under the
    // acquiring fiber's refs, diffing and patching them twice per turn; the release needs none.
    yield* Scope.addFinalizer(
      yield* Effect.scope,
      Effect.zipRight(Effect.sync(letGo), Effect.ignore(lease.release))
    )
    return { waited }
  })
