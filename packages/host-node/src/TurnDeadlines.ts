/**
 * Cuts turns at their wall-clock limit (`TURN_TIMEOUT_MS`): one fiber per turn service sleeps
 * until the earliest deadline of the turns it watches and aborts those past theirs, instead of a
 * fiber and a timer forked per turn and interrupted at its end (about 45 Effect operations a
 * turn, measured with `pnpm bench server`; watching one costs a map entry).
 *
 * A watched turn is aborted at the first wake-up at or after its deadline: when the fiber's sleep
 * ends, which is at the earliest deadline watched when it went to sleep. Deadlines are the
 * clock's time plus one limit, so a turn watched later never has an earlier deadline than one
 * already watched, and no sleep needs cutting short; a wall clock set back delays the cut by as
 * much, never skips it. When nothing is watched the fiber waits for the next turn.
 */
import { Effect, type Scope } from "effect"

/** Deadlines of the turns of one service; see the module doc. */
export interface TurnDeadlines {
  /** Calls `abort` once the turn outlives the limit, unless the returned function was called first (idempotent). */
  readonly watch: (abort: () => void) => () => void
}

/** Starts the deadlines of a limit of `limitMs` in the current scope: nothing is cut once the scope closed. */
export const make = (limitMs: number): Effect.Effect<TurnDeadlines, never, Scope.Scope> => {
  if (!(limitMs > 0)) throw new RangeError(`a turn's limit must be positive, got ${limitMs}`)
  return Effect.gen(function* () {
    const clock = yield* Effect.clock
    // Insertion order is deadline order (see the module doc).
    const watched = new Map<symbol, { readonly deadline: number; readonly abort: () => void }>()
    const anything = yield* Effect.makeLatch(false)
    const reopenIfWatched = Effect.sync(() => {
      if (watched.size > 0) anything.unsafeOpen()
    })
    const cutDue = Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      let next: number | undefined
      for (const [id, turn] of watched) {
        if (turn.deadline <= now) {
          watched.delete(id)
          turn.abort()
        } else next = next === undefined ? turn.deadline : Math.min(next, turn.deadline)
      }
      // Closed, then opened again if a turn came meanwhile (the fiber may yield between the two).
      return next === undefined ? Effect.zipRight(anything.close, reopenIfWatched) : Effect.sleep(next - now)
    })
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(anything.await, cutDue)))
    return {
      watch: (abort) => {
        const id = Symbol("turn")
        watched.set(id, { deadline: clock.unsafeCurrentTimeMillis() + limitMs, abort })
        if (watched.size === 1) anything.unsafeOpen()
        return () => {
          watched.delete(id)
        }
      }
    }
  })
}
