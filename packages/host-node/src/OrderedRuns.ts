/**
 * A run's appends reach a networked run store (`DATABASE_URL`) in the order the turn made them.
 * The stream (`RunLog.ts`) starts each append as its event comes, without waiting for the last
 * one; on a pool of connections, two appends in flight take their frame ids in whatever order
 * their statements get the run's row, so a rejoin (which reads by id) could replay an answer's
 * chunks shuffled. Here each append (and the `done`) of a run starts once the previous one
 * settled; runs do not wait for each other.
 */
import type { RunStore } from "@plugboard/core"
import { Effect } from "effect"

/** `runs` with each run's `append`, `appendAll` and `end` calls applied one after the other, in call order. */
export const appendsInCallOrder = (runs: RunStore.RunStoreService): RunStore.RunStoreService => {
  const tails = new Map<string, Promise<void>>()
  // Evaluated when the caller runs the effect (`RunLog` runs each at once, in event order).
  const inTurn = <A, E>(did: string, runId: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.suspend(() => {
      const key = JSON.stringify([did, runId])
      const previous = tails.get(key)
      let settled!: () => void
      const mine = new Promise<void>((resolve) => {
        settled = resolve
      })
      tails.set(key, mine)
      const after =
        previous === undefined
          ? effect
          : Effect.zipRight(
              Effect.promise(() => previous),
              effect
            )
      return Effect.ensuring(
        after,
        Effect.sync(() => {
          settled()
          if (tails.get(key) === mine) tails.delete(key)
        })
      )
    })
  return {
    ...runs,
    append: (did, runId, frame) => inTurn(did, runId, runs.append(did, runId, frame)),
    appendAll: (did, runId, frames) => inTurn(did, runId, runs.appendAll(did, runId, frames)),
    end: (did, runId, outcome, frames) => inTurn(did, runId, runs.end(did, runId, outcome, frames))
  }
}
