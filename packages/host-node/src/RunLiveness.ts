/**
 * When a run whose host died is over. On one host with its own run store the answer is "at the
 * next boot" (`RunStore.interruptUnfinished`), but on a shared store (`DATABASE_URL`) a host
 * booting must not end the live runs of the others: a run is ended `interrupted` only once it
 * is known that nobody is running it.
 *
 * The rule: a run is alive while its host holds the run's lease, a key of its own in the
 * `TurnLock` port (taken before the run is created, refreshed every third of `TURN_LOCK_TTL_MS`,
 * released after its `done` is written). An active run whose lease can be taken is orphaned: its
 * host died (or lost the lock's engine for longer than the lease) and nobody will append to it
 * again. Whoever finds it — a rejoin (`GET /runs/:id`), the session's run lookup, the session's
 * next streamed message — takes the lease, ends the run `interrupted` with reason `host-lost` (its
 * `done` carries the partial text, as for any cut run) and lets the lease go. A dead host's lease lapses with its
 * session's turn lock (same TTL, refreshed together), so by the time the session's next turn
 * gets the session, its old run reads interrupted.
 *
 * Why not the session's lock alone: a run exists before its turn takes the session's lock
 * (queued behind another turn of the session, possibly on another host) and for a moment after
 * it lets go (until its `done` is written); in both windows the session is free while the run
 * is alive. The run's own lease covers the run's whole life.
 *
 * It needs a lock every host shares (`REDIS_URL`, or the host's `turnLock`): with a lock of one
 * process, another host would find every run's lease free. `withLiveness` applies the rule as a
 * decorator of the run store, so the routes are unchanged: `create` takes the lease (and reaps
 * the session first), `end` lets it go, `get` and `activeForSession` reap what they find, and a
 * `follow` looks again every half lease while it waits: a rejoin that began while the dead host's
 * lease was still running ends with the `done` instead of waiting for frames that never come.
 */
import { RunStore, type TurnLock } from "@plugboard/core"
import { Duration, Effect, Either, Fiber, Option, Schedule, Stream } from "effect"

/** The `reason` of the `done` of a run whose host died (`restart` is the boot's, on one host). */
export const HOST_LOST = "host-lost"

/** The run's key in the turn lock (a DID never starts with `run`, so no session key collides). */
export const runLeaseKey = (did: string, runId: string): string => `run\u0000${did}\u0000${runId}`

/** A held run lease. */
interface RunLease {
  /** Stops refreshing and frees the lease (after the run's `done` is written). Idempotent. */
  readonly release: Effect.Effect<void>
}

/**
 * Takes the lease of a run about to be created. Fails when the lock's engine cannot be reached:
 * a run nobody can vouch for would be taken for a dead one.
 */
const holdRun = (
  lock: TurnLock.TurnLockService,
  did: string,
  runId: string,
  ttlMs: number
): Effect.Effect<RunLease, TurnLock.TurnLockError> =>
  Effect.gen(function* () {
    const lease = yield* lock.acquire(runLeaseKey(did, runId), { ttlMs, waitMs: 0 })
    // The lease outlives the call that took it (until the run's `done`): a daemon fiber refreshes
    // it, interrupted by `release`.
    const refresh = yield* lock
      .refresh(lease.key, lease.token, ttlMs)
      .pipe(
        Effect.ignore,
        Effect.repeat(Schedule.spaced(Math.max(1, Math.floor(ttlMs / 3)))),
        Effect.delay(Math.max(1, Math.floor(ttlMs / 3))),
        Effect.forkDaemon
      )
    return { release: Effect.zipRight(Fiber.interrupt(refresh), Effect.ignore(lease.release)) }
  })

/**
 * Ends `run` as `interrupted` when it is active and nobody holds its lease; `true` when it did.
 * Never fails: an engine that cannot be asked leaves the run as it is (alive until proven dead).
 */
export const reapIfOrphaned = (
  runs: RunStore.RunStoreService,
  lock: TurnLock.TurnLockService,
  run: RunStore.Run,
  ttlMs: number,
  onReaped: (run: RunStore.Run) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<boolean> =>
  !RunStore.isActive(run.status)
    ? Effect.succeed(false)
    : Effect.flatMap(
        Effect.either(lock.acquire(runLeaseKey(run.did, run.runId), { ttlMs, waitMs: 0 })),
        (taken) =>
          Either.isLeft(taken)
            ? Effect.succeed(false)
            : Effect.ensuring(
                // An end that finds the run already ended (its host wrote `done` between our read
                // and the lease) is refused by the store: nothing is overwritten.
                Effect.flatMap(
                  Effect.either(runs.end(run.did, run.runId, { status: "interrupted", reason: HOST_LOST })),
                  (ended) => (Either.isRight(ended) ? Effect.as(onReaped(run), true) : Effect.succeed(false))
                ),
                Effect.ignore(taken.right.release)
              )
      )

/**
 * Reaps the session's orphaned runs (newest first) until its newest active run is a live one or
 * none is left; bounded, since each pass ends one run.
 */
const reapSession = (
  runs: RunStore.RunStoreService,
  lock: TurnLock.TurnLockService,
  did: string,
  sessionId: string,
  ttlMs: number,
  onReaped: (run: RunStore.Run) => Effect.Effect<void>
): Effect.Effect<void> =>
  Effect.gen(function* () {
    for (let pass = 0; pass < 16; pass++) {
      const active = yield* Effect.orElseSucceed(runs.activeForSession(did, sessionId), () => Option.none())
      if (Option.isNone(active)) return
      if (!(yield* reapIfOrphaned(runs, lock, active.value, ttlMs, onReaped))) return
    }
  })

/**
 * The run store with the liveness rule of the module doc, on `lock` (shared by every host);
 * `onReaped` is told each run it ended (the host puts its question back in its thread).
 */
export const withLiveness = (
  runs: RunStore.RunStoreService,
  lock: TurnLock.TurnLockService,
  ttlMs: number,
  onReaped: (run: RunStore.Run) => Effect.Effect<void> = () => Effect.void
): RunStore.RunStoreService => {
  const held = new Map<string, RunLease>()
  const heldKey = (did: string, runId: string) => JSON.stringify([did, runId])
  const letGo = (did: string, runId: string) =>
    Effect.suspend(() => {
      const lease = held.get(heldKey(did, runId))
      held.delete(heldKey(did, runId))
      return lease === undefined ? Effect.void : lease.release
    })
  return {
    ...runs,
    create: (input) =>
      Effect.gen(function* () {
        // The session's run cut by a dead host ends before the next one begins.
        if (typeof input?.did === "string" && typeof input.sessionId === "string") {
          yield* reapSession(runs, lock, input.did, input.sessionId, ttlMs, onReaped)
        }
        const runId = input?.runId ?? RunStore.mintRunId(Date.now())
        const lease = yield* Effect.mapError(
          holdRun(lock, String(input?.did), runId, ttlMs),
          (e) =>
            new RunStore.RunStoreError({
              reason: e.reason === "invalid" ? "invalid" : "unavailable",
              message: `the run's lease could not be taken: ${e.message}`
            })
        )
        const run = yield* Effect.tapError(runs.create({ ...input, runId }), () => lease.release)
        held.set(heldKey(run.did, run.runId), lease)
        return run
      }),
    end: (did, runId, outcome, frames) =>
      Effect.ensuring(runs.end(did, runId, outcome, frames), letGo(did, runId)),
    get: (did, runId) =>
      Effect.flatMap(runs.get(did, runId), (found) =>
        Option.isSome(found) && RunStore.isActive(found.value.status)
          ? Effect.flatMap(reapIfOrphaned(runs, lock, found.value, ttlMs, onReaped), (reaped) =>
              reaped ? runs.get(did, runId) : Effect.succeed(found)
            )
          : Effect.succeed(found)
      ),
    follow: (did, runId, after) =>
      Stream.merge(
        runs.follow(did, runId, after),
        // Emits nothing: ends the run when it is orphaned, and the follow then reads its `done`.
        Stream.drain(
          Stream.fromEffect(
            Effect.forever(
              Effect.zipRight(
                Effect.sleep(Duration.millis(Math.max(50, Math.floor(ttlMs / 2)))),
                Effect.flatMap(
                  Effect.orElseSucceed(runs.get(did, runId), () => Option.none()),
                  (found) =>
                    Option.isSome(found)
                      ? reapIfOrphaned(runs, lock, found.value, ttlMs, onReaped)
                      : Effect.succeed(false)
                )
              )
            )
          )
        ),
        { haltStrategy: "left" }
      ),
    activeForSession: (did, sessionId) =>
      Effect.zipRight(
        reapSession(runs, lock, did, sessionId, ttlMs, onReaped),
        runs.activeForSession(did, sessionId)
      )
  }
}
