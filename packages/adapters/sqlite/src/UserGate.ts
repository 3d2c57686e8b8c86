/**
 * A per-user readers–writer gate between the user's turns and whoever needs the user's
 * database quiet (the Matrix sync taking a backup or restoring a file).
 *
 * Shared holders: turns (`withTurn`, held for a whole agent run) and single storage
 * operations (held for one saver/session call). The exclusive holder waits until no shared
 * holder is left and keeps new turns out until it is done (writer preference, so a busy user
 * cannot starve the sync). An operation is still let in while a turn is active even if the
 * exclusive holder is queued: that operation most likely belongs to the running turn, and
 * holding it back would deadlock the turn against the exclusive waiter that waits for it.
 */

type Kind = "op" | "turn"

interface Waiter {
  readonly kind: Kind | "exclusive"
  readonly resolve: () => void
}

/** The gate of one user. */
export class UserGate {
  private turns = 0
  private ops = 0
  private exclusive = false
  private readonly waiters: Array<Waiter> = []

  /** True when nobody holds or waits for the gate (the registry may drop it). */
  get idle(): boolean {
    return this.turns === 0 && this.ops === 0 && !this.exclusive && this.waiters.length === 0
  }

  /** True when a turn or an operation is in progress, or the exclusive holder is active. */
  get busy(): boolean {
    return this.turns > 0 || this.ops > 0 || this.exclusive
  }

  /** True while at least one turn holds the gate. */
  get turnRunning(): boolean {
    return this.turns > 0
  }

  /** Enters as a shared holder; synchronous (`undefined`) when nothing stands in the way. */
  enter(kind: Kind): Promise<void> | undefined {
    if (this.canShare(kind)) {
      this.take(kind)
      return undefined
    }
    return new Promise((resolve) => this.waiters.push({ kind, resolve }))
  }

  /** Leaves a shared hold taken with `enter(kind)`. */
  leave(kind: Kind): void {
    if (kind === "turn") this.turns--
    else this.ops--
    this.wake()
  }

  /** Enters as the exclusive holder once no turn or operation is in progress. */
  enterExclusive(): Promise<void> | undefined {
    if (
      !this.exclusive &&
      this.turns === 0 &&
      this.ops === 0 &&
      !this.waiters.some((w) => w.kind === "exclusive")
    ) {
      this.exclusive = true
      return undefined
    }
    return new Promise((resolve) => this.waiters.push({ kind: "exclusive", resolve }))
  }

  /** Leaves the exclusive hold. */
  leaveExclusive(): void {
    this.exclusive = false
    this.wake()
  }

  private canShare(kind: Kind): boolean {
    if (this.exclusive) return false
    const exclusiveWaiting = this.waiters.some((w) => w.kind === "exclusive")
    return !exclusiveWaiting || (kind === "op" && this.turns > 0)
  }

  private take(kind: Kind) {
    if (kind === "turn") this.turns++
    else this.ops++
  }

  private wake() {
    if (this.exclusive) return
    if (this.turns === 0 && this.ops === 0) {
      const i = this.waiters.findIndex((w) => w.kind === "exclusive")
      if (i >= 0) {
        const [w] = this.waiters.splice(i, 1)
        this.exclusive = true
        w!.resolve()
        return
      }
    }
    for (let i = 0; i < this.waiters.length; ) {
      const w = this.waiters[i]!
      if (w.kind !== "exclusive" && this.canShare(w.kind)) {
        this.waiters.splice(i, 1)
        this.take(w.kind)
        w.resolve()
      } else {
        i++
      }
    }
  }
}
