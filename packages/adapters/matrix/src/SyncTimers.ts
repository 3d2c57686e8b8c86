/**
 * The time source of the sync engine: its clock and its timers (debounce, retry backoff, the
 * periodic tick, flush deadlines). Injectable so tests drive time by advancing a manual clock
 * rather than by sleeping (docs/testing.md, "Time in tests").
 */

/** Cancels a timer; a no-op once it has run or was cancelled. */
export type CancelTimer = () => void

/** Clock and timers of `MatrixSyncEngine`; `systemTimers` by default. */
export interface SyncTimers {
  /** Milliseconds since the epoch. */
  readonly now: () => number
  /**
   * Runs `fn` once after `ms`. `background` timers do not keep the process alive (a pending
   * debounce must not hold up exit); the others (a flush's deadline and backoff) do.
   */
  readonly after: (ms: number, fn: () => void, options?: { readonly background?: boolean }) => CancelTimer
  /** Runs `fn` every `ms` until cancelled; never keeps the process alive. */
  readonly every: (ms: number, fn: () => void) => CancelTimer
}

/** `Date.now` and the global timers. */
export const systemTimers: SyncTimers = {
  now: () => Date.now(),
  after: (ms, fn, options) => {
    const timer = setTimeout(fn, ms)
    if (options?.background === true) timer.unref()
    return () => clearTimeout(timer)
  },
  every: (ms, fn) => {
    const timer = setInterval(fn, ms)
    timer.unref()
    return () => clearInterval(timer)
  }
}

/** Resolves after `ms` on `timers`. */
export const sleepOn = (timers: SyncTimers, ms: number): Promise<void> =>
  new Promise((resolve) => {
    timers.after(ms, resolve)
  })

/** Settles with `p`'s outcome, or `"timeout"` once `timers.now()` reaches `deadline`. */
export const withDeadline = async <A>(
  timers: SyncTimers,
  p: Promise<A>,
  deadline: number
): Promise<{ ok: true; value: A } | { ok: false; error: unknown } | "timeout"> => {
  let cancel: CancelTimer | undefined
  const timeout = new Promise<"timeout">((r) => {
    cancel = timers.after(Math.max(0, deadline - timers.now()), () => r("timeout"))
  })
  try {
    return await Promise.race([
      p.then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error })
      ),
      timeout
    ])
  } finally {
    cancel?.()
  }
}
