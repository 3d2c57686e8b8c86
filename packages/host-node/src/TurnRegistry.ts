/**
 * The turns running in this process, by user and session: what `POST /messages/abort`, a
 * session's deletion and graceful shutdown reach (across hosts through `TurnStops.ts`), and who
 * posts to which thread. Its own module so that the routes that only stop turns need not import
 * the message path.
 */
import { ThreadClaims } from "./SessionAccess.js"
import type { TurnOutcome } from "./Turns.js"

/**
 * Why a turn's signal was aborted: the user asked (`POST /messages/abort`), or something else cut
 * the turn short (a newer message to the session, the session deleted, the server shutting down,
 * or the turn's wall clock, `TURN_TIMEOUT_MS`, ran out while a call was still running).
 */
export type AbortReason = "user" | "replaced" | "deleted" | "shutdown" | "wall-clock"

/** A turn of the registry: running, or waiting for the session's turn lock. */
interface Running {
  readonly controller: AbortController
  /** The turn's outcome (it never rejects); it has ended, and saved, once this resolves. */
  readonly done: Promise<TurnOutcome>
}

/**
 * Running turns by user and session: what abort, delete and shutdown reach, and who posts to
 * which thread (`claims`, see SessionAccess). Not a lock: the turns of one session run one after
 * another because each holds the session's `TurnLock` (taken by the adapter's turn, see
 * `Turns.ts`). A new turn aborts the session's running ones (as QiForge does); it starts once
 * they have ended and saved, so it loads the checkpoint the aborted turn wrote instead of the one
 * both began from (which would erase the aborted turn from the thread).
 */
export class TurnRegistry {
  private readonly bySession = new Map<string, Set<Running>>()
  private readonly all = new Set<Running>()
  /** Who is posting to which thread (SessionAccess): held by a post until its turn has ended. */
  readonly claims = new ThreadClaims()

  private static key(did: string, sessionId: string): string {
    return `${did}\u0000${sessionId}`
  }

  /** Starts a turn: the session's running (or waiting) turns are aborted, and `run` is called. */
  start(did: string, sessionId: string, run: (signal: AbortSignal) => Promise<TurnOutcome>): Running {
    const key = TurnRegistry.key(did, sessionId)
    const turns = this.bySession.get(key) ?? new Set<Running>()
    for (const previous of turns) previous.controller.abort("replaced" satisfies AbortReason)
    const controller = new AbortController()
    const running: Running = { controller, done: run(controller.signal) }
    turns.add(running)
    this.bySession.set(key, turns)
    this.all.add(running)
    void running.done.finally(() => {
      this.all.delete(running)
      turns.delete(running)
      if (turns.size === 0 && this.bySession.get(key) === turns) this.bySession.delete(key)
    })
    return running
  }

  /** Whether the user has a turn on the session here (running, or waiting to). */
  has(did: string, sessionId: string): boolean {
    return (this.bySession.get(TurnRegistry.key(did, sessionId))?.size ?? 0) > 0
  }

  /** Aborts the user's running turn on the session; `true` when there was one. */
  abort(did: string, sessionId: string): boolean {
    let aborted = false
    for (const running of this.bySession.get(TurnRegistry.key(did, sessionId)) ?? []) {
      if (running.controller.signal.aborted) continue
      running.controller.abort("user" satisfies AbortReason)
      aborted = true
    }
    return aborted
  }

  /**
   * Aborts the user's turns on the session and waits until they have ended (saved), at most
   * `ms`; `true` when none is left running (or there was none).
   */
  async stop(did: string, sessionId: string, ms: number): Promise<boolean> {
    const turns = [...(this.bySession.get(TurnRegistry.key(did, sessionId)) ?? [])]
    for (const running of turns) running.controller.abort("deleted" satisfies AbortReason)
    return settleWithin(
      turns.map((r) => r.done),
      ms
    )
  }

  /** How many turns are running (or waiting to). */
  get size(): number {
    return this.all.size
  }

  /** Resolves when every running turn has ended, or after `ms` (whichever first); `true` if all ended. */
  settle(ms: number): Promise<boolean> {
    return settleWithin(
      [...this.all].map((r) => r.done),
      ms
    )
  }

  /** Aborts every running turn. */
  abortAll(): void {
    for (const r of this.all) r.controller.abort("shutdown" satisfies AbortReason)
  }
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
