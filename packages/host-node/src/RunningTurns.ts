/**
 * The abort map: this process's turns, by the session's key in the `TurnLock` (docs/architecture.md
 * "One exclusion mechanism"). With the lock it is the only exclusion on a session:
 *
 * - the lock orders a session's turns, across hosts when its engine is shared;
 * - this map finds a session's turns to abort (a newer message, `POST /messages/abort`, a
 *   deleted session, shutdown) and says whose a thread is while its first turn has not saved yet:
 *   a turn is entered here before its session is opened, under the key the lock uses, so on a
 *   saver users share (one key per thread) a second user's post to a thread a turn of another
 *   user holds is refused before anything is read or written.
 *
 * Across hosts, aborts reach a session's turns through the `TurnControl` port, whose handler on
 * each host is this map (`TurnService.ts`).
 */

/**
 * Why a turn's signal was aborted: the user asked (`POST /messages/abort`), or something else cut
 * the turn short (a newer message to the session, the session deleted, the server shutting down,
 * the turn's wall clock, `TURN_TIMEOUT_MS`, ran out while a call was still running, or the client
 * of a JSON turn went away).
 */
export type AbortReason = "user" | "replaced" | "deleted" | "shutdown" | "wall-clock" | "disconnected"

/** A turn of the map, from before its session is opened until it has ended (and saved). */
export interface RunningTurn {
  readonly did: string
  readonly sessionId: string
  readonly controller: AbortController
  /** Resolves once the turn has ended and its writes have landed; `leave` resolves it. */
  readonly ended: Promise<void>
  /** Takes the turn out of the map (idempotent). */
  readonly leave: () => void
}

/** Whether every promise settled within `ms`. */
const settleWithin = async (promises: ReadonlyArray<Promise<unknown>>, ms: number): Promise<boolean> => {
  if (promises.length === 0) return true
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  const ended = Promise.allSettled(promises).then(() => true as const)
  try {
    return await Promise.race([ended, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** The abort map; see the module doc. `keyOf` is the session's key in the turn lock. */
export class RunningTurns {
  private readonly byKey = new Map<string, Set<RunningTurn>>()
  private readonly all = new Set<RunningTurn>()

  constructor(private readonly keyOf: (did: string, sessionId: string) => string) {}

  /**
   * Enters a turn of `did` on the session; `undefined` when a turn of another DID holds the
   * session's key (a thread users share, whose first turn has not saved yet).
   */
  enter(did: string, sessionId: string): RunningTurn | undefined {
    const key = this.keyOf(did, sessionId)
    const turns = this.byKey.get(key) ?? new Set<RunningTurn>()
    for (const other of turns) if (other.did !== did) return undefined
    let leave!: () => void
    const ended = new Promise<void>((resolve) => {
      leave = resolve
    })
    const turn: RunningTurn = {
      did,
      sessionId,
      controller: new AbortController(),
      ended,
      leave: () => {
        if (!this.all.delete(turn)) return
        turns.delete(turn)
        if (turns.size === 0 && this.byKey.get(key) === turns) this.byKey.delete(key)
        leave()
      }
    }
    turns.add(turn)
    this.byKey.set(key, turns)
    this.all.add(turn)
    return turn
  }

  /** Whether a turn of a DID other than `did` holds the session's key here. */
  heldByOther(did: string, sessionId: string): boolean {
    for (const turn of this.byKey.get(this.keyOf(did, sessionId)) ?? []) if (turn.did !== did) return true
    return false
  }

  private of(did: string, sessionId: string): ReadonlyArray<RunningTurn> {
    return [...(this.byKey.get(this.keyOf(did, sessionId)) ?? [])].filter((t) => t.did === did)
  }

  /** Whether the user has a turn on the session here. */
  has(did: string, sessionId: string): boolean {
    return this.of(did, sessionId).length > 0
  }

  /** Aborts the user's turns on the session but `except`; `true` when one was still running. */
  abort(did: string, sessionId: string, reason: AbortReason, except?: RunningTurn): boolean {
    let aborted = false
    for (const turn of this.of(did, sessionId)) {
      if (turn === except || turn.controller.signal.aborted) continue
      turn.controller.abort(reason)
      aborted = true
    }
    return aborted
  }

  /**
   * Aborts the user's turns on the session and waits until they have ended (saved), at most
   * `ms`; `true` when none is left running (or there was none).
   */
  stop(did: string, sessionId: string, reason: AbortReason, ms: number): Promise<boolean> {
    const turns = this.of(did, sessionId)
    for (const turn of turns) turn.controller.abort(reason)
    return settleWithin(
      turns.map((t) => t.ended),
      ms
    )
  }

  /** How many turns are in the map. */
  get size(): number {
    return this.all.size
  }

  /** Resolves when every turn has ended, or after `ms` (whichever first); `true` if all ended. */
  settle(ms: number): Promise<boolean> {
    return settleWithin(
      [...this.all].map((t) => t.ended),
      ms
    )
  }

  /** Aborts every turn (shutdown). */
  abortAll(): void {
    for (const turn of this.all) turn.controller.abort("shutdown" satisfies AbortReason)
  }
}
