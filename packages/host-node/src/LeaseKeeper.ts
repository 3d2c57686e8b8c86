/**
 * Keeps `TurnLock` leases alive while their holders work: one fiber per keeper refreshes every
 * lease it keeps once per period (a third of the leases' length), instead of a fiber, a schedule
 * and a timer per lease. A turn holds two leases (its session's and its run's,
 * docs/architecture.md#one-exclusion-mechanism); forking, scheduling and interrupting a refresher
 * for each cost about a hundred Effect operations a lease, where keeping one costs a map entry.
 *
 * A lease kept at any moment is refreshed at the keeper's next tick, at most one period later, and
 * every period after that until it is let go: the guarantee each lease's own refresher gave. A
 * refresh that fails is ignored, as it was: the lease is tried again at the next tick, and a lost
 * lease shows when its holder releases it or another host takes it.
 */
import type { TurnLock } from "@plugboard/core"
import { Effect, type Scope } from "effect"

/** A keeper of leases of one length; see the module doc. */
export interface LeaseKeeper {
  /** How long the leases it keeps last without a refresh (what `acquire` should be given). */
  readonly ttlMs: number
  /** Refreshes the lease until the returned function is called (once or more: idempotent). */
  readonly keep: (key: string, token: number) => () => void
}

/** Starts a keeper in the current scope: its fiber stops, and nothing more is refreshed, when the scope closes. */
export const make = (
  lock: TurnLock.TurnLockService,
  ttlMs: number
): Effect.Effect<LeaseKeeper, never, Scope.Scope> =>
  Effect.gen(function* () {
    const kept = new Map<symbol, { readonly key: string; readonly token: number }>()
    const period = Math.max(1, Math.floor(ttlMs / 3))
    const refreshAll = Effect.suspend(() =>
      kept.size === 0
        ? Effect.void
        : Effect.forEach(
            [...kept.values()],
            ({ key, token }) => Effect.ignore(lock.refresh(key, token, ttlMs)),
            { concurrency: "unbounded", discard: true }
          )
    )
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(period), refreshAll)))
    return {
      ttlMs,
      keep: (key, token) => {
        const id = Symbol(key)
        kept.set(id, { key, token })
        return () => {
          kept.delete(id)
        }
      }
    }
  })
