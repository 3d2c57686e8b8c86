/**
 * One turn of a thread at a time. A turn loads the thread's latest checkpoint when it starts and
 * saves a child of it when it ends: two turns started together would both build on the same
 * checkpoint, and the one saved last would become the thread's state without the other's
 * messages (a lost turn). `runTurn` and `streamTurn` hold the thread's lock from before the load
 * until the turn's writes have landed, so each turn starts from what the previous one saved.
 *
 * The lock is core's `TurnLock` port: the host passes its own (the in-memory one in a single
 * process, a shared engine's when several processes serve one thread), with a key that names the
 * thread in that lock's namespace. Without one, turns queue on a lock of this process, per saver
 * object. A host that orders its turns itself (the oracle server's turn service holds the
 * session's `TurnLock` around the whole turn, docs/architecture.md) passes `false`. A lease that is not refreshed lapses (`ttlMs`), so a dead holder cannot keep a thread
 * forever: the turn refreshes it while it runs.
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Clock, TurnLock } from "@plugboard/core"
import { Effect, Either } from "effect"

/** Which lock a turn takes, and under which key. */
export interface ThreadLockOption {
  readonly lock: TurnLock.TurnLockService
  /** The thread's key in that lock (unique per thread across everything sharing the lock). */
  readonly key: string
  /** Lease length, refreshed every third of it while the turn runs. Default 60,000 ms. */
  readonly ttlMs?: number | undefined
}

/** Default lease length: long enough to ride out a stalled event loop, short enough to lapse. */
export const DEFAULT_THREAD_LOCK_TTL_MS = 60_000

// Each saver object gets a lock of its own (threads are one namespace per saver); a saver that
// is dropped takes its lock with it.
const saverLocks = new WeakMap<BaseCheckpointSaver, TurnLock.TurnLockService>()

/** A lock of this process for the saver's threads: what a turn uses when its caller gives none. */
export const defaultThreadLock = (saver: BaseCheckpointSaver, threadId: string): ThreadLockOption => {
  let lock = saverLocks.get(saver)
  if (lock === undefined) {
    lock = Effect.runSync(Effect.provide(TurnLock.makeMemory(), Clock.layer))
    saverLocks.set(saver, lock)
  }
  return { lock, key: threadId }
}

/** A held thread: release it once the turn's writes have landed. */
export interface HeldThread {
  /** Whether the turn had to wait for another turn of the thread first. */
  readonly waited: boolean
  readonly release: () => Promise<void>
}

/**
 * Takes the thread's lock, waiting while another turn holds it; the wait ends with the signal
 * (rejecting with the lock's `aborted` error). While held, the lease is refreshed.
 */
export const holdThread = async (
  option: ThreadLockOption | false,
  signal?: AbortSignal
): Promise<HeldThread> => {
  if (option === false) return { waited: false, release: async () => {} }
  const ttlMs = option.ttlMs ?? DEFAULT_THREAD_LOCK_TTL_MS
  const { lock, key } = option
  const first = await Effect.runPromise(Effect.either(lock.acquire(key, { ttlMs, waitMs: 0, signal })))
  let waited = false
  let lease: TurnLock.Lease
  if (Either.isRight(first)) lease = first.right
  else if (first.left.reason === "busy") {
    waited = true
    lease = await Effect.runPromise(lock.acquire(key, { ttlMs, signal }))
  } else throw first.left
  const refresh = setInterval(
    () => void Effect.runPromise(Effect.ignore(lock.refresh(key, lease.token, ttlMs))),
    Math.max(1, Math.floor(ttlMs / 3))
  )
  refresh.unref()
  let released = false
  return {
    waited,
    release: async () => {
      if (released) return
      released = true
      clearInterval(refresh)
      await Effect.runPromise(Effect.ignore(lease.release))
    }
  }
}
