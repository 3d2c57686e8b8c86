/**
 * Progress of inspect's long steps (building a catalog of thousands, counting tokens, `--eval`'s
 * ranking), one status line on stderr rewritten in place with `\r`. Written only when stderr is
 * a terminal: piped, redirected or in CI nothing is written, so `--json` and logs stay clean.
 */

/** What a long step reports. */
export interface Progress {
  /** Shows `text` as the status line at once: a new step begins (`counting tokens…`). */
  readonly phase: (text: string) => void
  /**
   * A counted step: `label done/total unit…`, e.g. `evaluating 1,200/10,000 queries…`. May be
   * called as often as the work likes: the line is rewritten at most once per interval.
   */
  readonly step: (label: string, done: number, total: number, unit: string) => void
  /** Erases the status line (before the report is printed, or on failure). */
  readonly clear: () => void
}

/** A reporter that writes nothing. */
export const silent: Progress = { phase: () => {}, step: () => {}, clear: () => {} }

/** Where a progress line goes: a stream, its `isTTY` deciding whether anything is written. */
export interface ProgressStream {
  readonly write: (chunk: string) => unknown
  readonly isTTY?: boolean | undefined
}

/** How often the line may be rewritten: a few times per second, cheap next to the work. */
export const INTERVAL_MS = 200

const fmt = (n: number): string => n.toLocaleString("en-US")

/**
 * A reporter writing to `stream` when `stream.isTTY` is true, else `silent`. `now` (ms) is the
 * clock the throttle reads; tests give their own.
 */
export const forStream = (
  stream: ProgressStream,
  options: { readonly intervalMs?: number; readonly now?: () => number } = {}
): Progress => {
  if (stream.isTTY !== true) return silent
  const interval = options.intervalMs ?? INTERVAL_MS
  const now = options.now ?? (() => performance.now())
  let last = Number.NEGATIVE_INFINITY
  let shown = false
  const show = (text: string, t: number) => {
    last = t
    shown = true
    // \r back to the line's start, the text, then erase what a longer previous line left.
    stream.write(`\r${text}\u001b[K`)
  }
  return {
    phase: (text) => show(text, now()),
    step: (label, done, total, unit) => {
      const t = now()
      if (t - last < interval) return
      show(`${label} ${fmt(done)}/${fmt(total)} ${unit}…`, t)
    },
    clear: () => {
      if (!shown) return
      shown = false
      last = Number.NEGATIVE_INFINITY
      stream.write("\r\u001b[K")
    }
  }
}
