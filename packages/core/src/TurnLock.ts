/**
 * The `TurnLock` port: one turn per session at a time, across processes when the engine is
 * shared.
 *
 * Why a lease with a fencing token rather than a plain mutex: a turn's holder can die (a crash,
 * a host that lost its network) without releasing, so a lock lapses `ttlMs` after it was taken
 * or last refreshed; and a holder that was merely slow can wake up after its lease lapsed and
 * someone else took the session. Every acquisition therefore gets a token, strictly greater
 * than any token handed out before for that key, and a writer checks `isCurrent(key, token)`
 * (or passes the token to a store that checks it) so a late writer with an old token is refused
 * instead of corrupting the newer turn.
 *
 * The shape maps onto Redis directly: `acquire` = `INCR` a counter for the token, then
 * `SET key token NX PX ttl` (retried while another holds it); `refresh` and `release` are
 * compare-and-`PEXPIRE` / compare-and-`DEL` scripts; `isCurrent` = `GET key == token`. Time
 * (`ttlMs`, `waitMs`) is measured on the `Clock` port, so tests move it instead of sleeping.
 * The in-memory lock here serves one process; every implementation passes `TurnLockConformance`.
 */
import { Context, Deferred, Effect, Exit, FiberId, Layer, Schema, type Scope } from "effect"
import { Clock } from "./Clock.js"

/** How to acquire. */
export interface AcquireOptions {
  /** How long the lease lasts without a `refresh`, a positive integer of milliseconds. */
  readonly ttlMs: number
  /**
   * How long to wait while another holder has the lock before failing `busy`: 0 tries once;
   * absent waits until acquired (or until the signal aborts, or the fiber is interrupted).
   */
  readonly waitMs?: number | undefined
  /** Stops the wait with `aborted` (noticed within the implementation's poll interval). */
  readonly signal?: AbortSignal | undefined
}

/** A held lock. */
export interface Lease {
  readonly key: string
  /** The fencing token: strictly greater than every token handed out before for this key. */
  readonly token: number
  /** Releases the lock if this lease still holds it; `true` when it did. Idempotent. */
  readonly release: Effect.Effect<boolean, TurnLockError>
}

/** Why a lock operation failed. */
export type TurnLockErrorReason = "busy" | "aborted" | "lost" | "invalid" | "unavailable"

/**
 * The one error of the port. `busy`: not acquired within `waitMs`. `aborted`: the signal
 * aborted the wait. `lost`: `refresh` with a token that no longer holds the lock. `invalid`: a
 * bad argument. `unavailable`: the lock's engine could not be reached.
 */
export class TurnLockError extends Schema.TaggedError<TurnLockError>()("TurnLockError", {
  reason: Schema.Literal("busy", "aborted", "lost", "invalid", "unavailable"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** The operations of the TurnLock port. */
export interface TurnLockService {
  /** Takes the lock for `key`, waiting while another holder has it (see `AcquireOptions`). */
  readonly acquire: (key: string, options: AcquireOptions) => Effect.Effect<Lease, TurnLockError>
  /** Extends the lease of `token` to `ttlMs` from now; fails `lost` when it no longer holds the lock. */
  readonly refresh: (key: string, token: number, ttlMs: number) => Effect.Effect<void, TurnLockError>
  /** True while `token` holds the lock of `key` (neither released, lapsed nor superseded). */
  readonly isCurrent: (key: string, token: number) => Effect.Effect<boolean, TurnLockError>
  /** Releases the lock if `token` holds it; `true` when it did. */
  readonly release: (key: string, token: number) => Effect.Effect<boolean, TurnLockError>
}

/** The TurnLock port. */
export class TurnLock extends Context.Tag("@plugboard/core/TurnLock")<TurnLock, TurnLockService>() {}

/** Longest accepted key (a session key: a DID and a session id). */
export const MAX_KEY_LENGTH = 2048

const invalid = (message: string) => new TurnLockError({ reason: "invalid", message })

// The checks as plain code, each the one rule its `validate*` and the memory lock share: a lock
// is taken and released every turn, and an Effect per field cost more than the lock itself.
const keyProblem = (key: unknown): TurnLockError | undefined =>
  typeof key === "string" && key.length > 0 && key.length <= MAX_KEY_LENGTH
    ? undefined
    : invalid(`key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`)
const ttlProblem = (ttlMs: unknown): TurnLockError | undefined =>
  typeof ttlMs === "number" && Number.isSafeInteger(ttlMs) && ttlMs > 0
    ? undefined
    : invalid("ttlMs must be a positive integer")
const acquireProblem = (options: AcquireOptions): TurnLockError | undefined => {
  const waitMs = options?.waitMs
  return (
    ttlProblem(options?.ttlMs) ??
    (waitMs === undefined || (Number.isSafeInteger(waitMs) && waitMs >= 0)
      ? undefined
      : invalid("waitMs must be a non-negative integer"))
  )
}
const tokenProblem = (token: unknown): TurnLockError | undefined =>
  typeof token === "number" && Number.isSafeInteger(token) && token > 0
    ? undefined
    : invalid("token must be a positive integer")
const checked = <A>(value: A, problem: TurnLockError | undefined): Effect.Effect<A, TurnLockError> =>
  problem === undefined ? Effect.succeed(value) : Effect.fail(problem)

/** Checks a key: a non-empty string of at most `MAX_KEY_LENGTH` characters. */
export const validateKey = (key: unknown): Effect.Effect<string, TurnLockError> =>
  checked(key as string, keyProblem(key))

/** Checks a TTL: a positive safe integer of milliseconds. */
export const validateTtl = (ttlMs: unknown): Effect.Effect<number, TurnLockError> =>
  checked(ttlMs as number, ttlProblem(ttlMs))

/** Checks acquire options; `waitMs` must be absent or a non-negative safe integer. */
export const validateAcquireOptions = (
  options: AcquireOptions
): Effect.Effect<{ readonly ttlMs: number; readonly waitMs: number | undefined }, TurnLockError> =>
  checked({ ttlMs: options?.ttlMs, waitMs: options?.waitMs }, acquireProblem(options))

/** Checks a token: a positive safe integer. */
export const validateToken = (token: unknown): Effect.Effect<number, TurnLockError> =>
  checked(token as number, tokenProblem(token))

/** Acquires for the life of the scope: the lease is released when the scope closes. */
export const acquireScoped = (
  lock: TurnLockService,
  key: string,
  options: AcquireOptions
): Effect.Effect<Lease, TurnLockError, Scope.Scope> =>
  Effect.acquireRelease(lock.acquire(key, options), (lease) => Effect.ignore(lease.release))

/** Options of the in-memory lock. */
export interface MemoryOptions {
  /**
   * How often (real milliseconds) a waiter re-checks for a lapsed lease, its deadline and its
   * abort signal; a release in this process wakes it at once. Default 25.
   */
  readonly pollMs?: number | undefined
}

interface Holder {
  readonly token: number
  expiresAt: number
  /** Completed when this holder releases or is replaced, so waiters re-check at once. */
  readonly gone: Deferred.Deferred<void>
}

/**
 * Builds the in-memory TurnLock (one process). Tokens come from one counter for all keys, so
 * they stay increasing per key even though a released key's entry is dropped.
 */
export const makeMemory = (options: MemoryOptions = {}): Effect.Effect<TurnLockService, never, Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock
    const pollMs = options.pollMs ?? 25
    const holders = new Map<string, Holder>()
    let lastToken = 0

    const drop = (key: string, holder: Holder) => {
      holders.delete(key)
      Deferred.unsafeDone(holder.gone, Exit.void)
    }

    /** The live holder of `key` at `now`, dropping a lapsed one. */
    const liveHolder = (key: string, now: number): Holder | undefined => {
      const holder = holders.get(key)
      if (holder !== undefined && holder.expiresAt <= now) {
        drop(key, holder)
        return undefined
      }
      return holder
    }

    const release = (key: string, token: number): Effect.Effect<boolean, TurnLockError> => {
      const problem = keyProblem(key) ?? tokenProblem(token)
      if (problem !== undefined) return Effect.fail(problem)
      return Effect.map(clock.now(), (now) => {
        const holder = liveHolder(key, now)
        if (holder?.token !== token) return false
        drop(key, holder)
        return true
      })
    }

    /** One attempt: the lease, or the holder to wait for. */
    const tryAcquire = (key: string, ttlMs: number, now: number): Lease | Holder => {
      const holder = liveHolder(key, now)
      if (holder !== undefined) return holder
      const token = ++lastToken
      holders.set(key, { token, expiresAt: now + ttlMs, gone: Deferred.unsafeMake(FiberId.none) })
      return { key, token, release: release(key, token) }
    }

    const aborted = (key: string) =>
      new TurnLockError({ reason: "aborted", message: `waiting for '${key}' was aborted` })

    /** Waits for `key` while `holder` (or a later one) has it, re-checking on its release and every `pollMs`. */
    const waitFor = (
      key: string,
      ttlMs: number,
      waitMs: number | undefined,
      signal: AbortSignal | undefined,
      start: number,
      first: Holder
    ): Effect.Effect<Lease, TurnLockError> =>
      Effect.gen(function* () {
        let holder = first
        let now = start
        for (;;) {
          if (waitMs !== undefined && now - start >= waitMs) {
            return yield* Effect.fail(
              new TurnLockError({
                reason: "busy",
                message: `'${key}' is held by another turn (waited ${now - start} ms)`
              })
            )
          }
          yield* Effect.race(Deferred.await(holder.gone), Effect.sleep(pollMs))
          if (signal?.aborted === true) return yield* Effect.fail(aborted(key))
          now = yield* clock.now()
          const outcome = tryAcquire(key, ttlMs, now)
          if (!("gone" in outcome)) return outcome
          holder = outcome
        }
      })

    const service: TurnLockService = {
      // Taken at once when free (every turn's case) without a generator; else waited for.
      acquire: (key, acquireOptions) => {
        const problem = keyProblem(key) ?? acquireProblem(acquireOptions)
        if (problem !== undefined) return Effect.fail(problem)
        const { ttlMs, waitMs, signal } = acquireOptions
        return Effect.flatMap(clock.now(), (start) => {
          if (signal?.aborted === true) return Effect.fail(aborted(key))
          const outcome = tryAcquire(key, ttlMs, start)
          return "gone" in outcome
            ? waitFor(key, ttlMs, waitMs, signal, start, outcome)
            : Effect.succeed(outcome)
        })
      },
      refresh: (key, token, ttlMs) => {
        const problem = keyProblem(key) ?? tokenProblem(token) ?? ttlProblem(ttlMs)
        if (problem !== undefined) return Effect.fail(problem)
        return Effect.flatMap(clock.now(), (now) => {
          const holder = liveHolder(key, now)
          if (holder?.token !== token) {
            return Effect.fail(
              new TurnLockError({ reason: "lost", message: `token ${token} no longer holds '${key}'` })
            )
          }
          holder.expiresAt = now + ttlMs
          return Effect.void
        })
      },
      isCurrent: (key, token) => {
        const problem = keyProblem(key) ?? tokenProblem(token)
        if (problem !== undefined) return Effect.fail(problem)
        return Effect.map(clock.now(), (now) => liveHolder(key, now)?.token === token)
      },
      release
    }
    return service
  })

/** The in-memory TurnLock as a layer (needs a `Clock`). */
export const layerMemory: Layer.Layer<TurnLock, never, Clock> = Layer.effect(TurnLock, makeMemory())
