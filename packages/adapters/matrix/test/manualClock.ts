/**
 * A manual clock for the sync engine (`SyncTimers`): time moves only when a test calls
 * `advance`, so "no retry after giving up" or "flush waits until its deadline" are proven by
 * moving time, not by sleeping (docs/testing.md, "Time in tests").
 */
import type { SyncTimers } from "../src/index.js"

interface Timer {
  at: number
  readonly every: number | undefined
  readonly fn: () => void
}

/** Lets promise callbacks and already-completed I/O callbacks run. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A manual clock: `timers` for the engine, `advance` for the test. */
export const manualClock = (start = Date.UTC(2026, 0, 1)) => {
  let now = start
  let created = 0
  const live = new Map<number, Timer>()
  const arm = (ms: number, fn: () => void, every: number | undefined) => {
    const id = created++
    live.set(id, { at: now + Math.max(0, ms), every, fn })
    for (const waiter of waiters.splice(0)) waiter()
    return () => {
      live.delete(id)
    }
  }
  const waiters: Array<() => void> = []
  const timers: SyncTimers = {
    now: () => now,
    after: (ms, fn) => arm(ms, fn, undefined),
    every: (ms, fn) => arm(ms, fn, ms)
  }
  return {
    timers,
    now: () => now,
    /** How many timers have been armed so far. */
    created: () => created,
    /** Timers armed and neither run nor cancelled. */
    pending: () => live.size,
    /** Resolves once `count` timers have been armed in all (a fence: "the engine is waiting"). */
    armed: async (count: number): Promise<void> => {
      while (created < count) await new Promise<void>((resolve) => waiters.push(resolve))
    },
    /**
     * Moves time `ms` forward, running every timer that falls due in order of its time (and
     * timers those arm, when due within the window), letting promise callbacks run between.
     */
    advance: async (ms: number): Promise<void> => {
      const until = now + ms
      for (;;) {
        await yieldToEventLoop()
        let next: [number, Timer] | undefined
        for (const entry of live)
          if (entry[1].at <= until && (next === undefined || entry[1].at < next[1].at)) next = entry
        if (next === undefined) break
        const [id, timer] = next
        now = Math.max(now, timer.at)
        if (timer.every === undefined) live.delete(id)
        else timer.at += timer.every
        timer.fn()
      }
      now = until
      await yieldToEventLoop()
    }
  }
}

/**
 * Advances `clock` in `stepMs` steps until `check` holds, giving the engine's real I/O (SQLite,
 * files) 5 ms between steps; a poll with a bound, for work whose steps each arm the next timer.
 */
export const advanceUntil = async (
  clock: ReturnType<typeof manualClock>,
  check: () => boolean,
  stepMs: number,
  steps = 400
): Promise<void> => {
  for (let i = 0; !check(); i++) {
    if (i >= steps) throw new Error("condition not met in time")
    await clock.advance(stepMs)
    if (!check()) await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
