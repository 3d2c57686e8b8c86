/**
 * How turns ended, counted since boot: by status, and for a turn cut short by its reason (a turn
 * bound such as `max-tool-calls`, `model-idle-timeout`, an abort's `user` or `shutdown`, an error
 * code). `/health` shows the counts, so an operator sees how often the bounds fire.
 */
import type { RunStore } from "@plugboard/core"

/** The counts: `{ finished: n, failed: { "max-tool-calls": n, ... }, ... }`. */
export type TurnEndCounts = Readonly<Record<string, number | Readonly<Record<string, number>>>>

/** Counts turn ends; see the module doc. */
export class TurnEnds {
  private finished = 0
  private readonly cut = new Map<string, Map<string, number>>()

  /** Counts one ended turn. */
  record(end: RunStore.EndOutcome): void {
    if (end.status === "finished") {
      this.finished += 1
      return
    }
    const reasons = this.cut.get(end.status) ?? new Map<string, number>()
    const reason = end.reason ?? "unknown"
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
    this.cut.set(end.status, reasons)
  }

  /** The counts so far. */
  snapshot(): TurnEndCounts {
    const out: Record<string, number | Record<string, number>> = { finished: this.finished }
    for (const [status, reasons] of this.cut) out[status] = Object.fromEntries(reasons)
    return out
  }
}
