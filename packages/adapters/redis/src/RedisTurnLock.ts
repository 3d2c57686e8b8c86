/**
 * The `TurnLock` port on Redis, as core's `TurnLock` doc sketches it: a fencing token from one
 * `INCR` counter, the lease set only when free (the `SET NX` of one script), and
 * compare-and-`PEXPIRE` / compare-and-`DEL` scripts for refresh and release, so a late holder
 * whose lease lapsed can neither extend nor free the next holder's lock, and `isCurrent` tells
 * it that its token is stale ("a late write from it is refused").
 *
 * The lease's value is `<token>:<expiresAt>`. Expiry is judged on the `Clock` port's time, as
 * the port says (tests move it), passed to every script; or on Redis's clock with
 * `serverTime`, which no host's clock skew can move. The key's own `PX` is the TTL plus a slack:
 * only garbage collection, never earlier than the lease's end.
 *
 * One counter serves every key, as in core's memory lock: tokens rise per key, and no
 * per-session counter outlives its session.
 */
import { Clock, TurnLock } from "@plugboard/core"
import { Duration, Effect, Layer } from "effect"
import { RedisConnection, type RedisConnectionService } from "./RedisConnection.js"

/** Options of the Redis turn lock. */
export interface RedisTurnLockOptions {
  /** Use Redis's clock instead of the `Clock` port (default false). */
  readonly serverTime?: boolean | undefined
  /** How often (real ms) a waiter retries, and notices its deadline or abort (default 25). */
  readonly pollMs?: number | undefined
  /** Extra lifetime of a lease's key beyond its TTL, in ms (default 60000). */
  readonly expirySlackMs?: number | undefined
}

// Every script starts by reading the time (ARGV[1], or Redis's clock when empty) and the
// current lease; a lease whose expiry is not after now is no lease.
const PRELUDE = `
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local held, expires = nil, nil
local v = redis.call('GET', KEYS[1])
if v then
  local sep = string.find(v, ':', 1, true)
  local e = tonumber(string.sub(v, sep + 1))
  if e > now then
    held = tonumber(string.sub(v, 1, sep - 1))
    expires = e
  end
end
`

// KEYS: lease, counter. ARGV: now, ttl, slack. Returns {1, token} or {0, holder's token}.
const ACQUIRE = `${PRELUDE}
if held then return {0, held} end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ':' .. (now + tonumber(ARGV[2])), 'PX', tonumber(ARGV[2]) + tonumber(ARGV[3]))
return {1, token}
`

// KEYS: lease. ARGV: now, token, ttl, slack. 1 when extended, 0 when the token no longer holds.
const REFRESH = `${PRELUDE}
if held ~= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], held .. ':' .. (now + tonumber(ARGV[3])), 'PX', tonumber(ARGV[3]) + tonumber(ARGV[4]))
return 1
`

// KEYS: lease. ARGV: now, token. 1 when this token held the lock and it is now free.
const RELEASE = `${PRELUDE}
if held ~= tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
`

// KEYS: lease. ARGV: now, token. 1 while this token holds the lock.
const CURRENT = `${PRELUDE}
if held == tonumber(ARGV[2]) then return 1 end
return 0
`

/** Builds the Redis turn lock on a connection. */
export const makeTurnLock = (
  redis: RedisConnectionService,
  options: RedisTurnLockOptions = {}
): Effect.Effect<TurnLock.TurnLockService, never, Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const pollMs = options.pollMs ?? 25
    const slack = options.expirySlackMs ?? 60_000
    const [acquireScript, refreshScript, releaseScript, currentScript] = [
      ACQUIRE,
      REFRESH,
      RELEASE,
      CURRENT
    ].map((lua) => redis.script(lua)) as [
      ReturnType<typeof redis.script>,
      ReturnType<typeof redis.script>,
      ReturnType<typeof redis.script>,
      ReturnType<typeof redis.script>
    ]
    const leaseKey = (key: string) => `${redis.prefix}lock:${key}`
    const counterKey = `${redis.prefix}lock-token`
    const now: Effect.Effect<string | number> = options.serverTime === true ? Effect.succeed("") : clock.now()
    const call = (script: typeof acquireScript, keys: Array<string>, args: Array<string | number>) =>
      Effect.flatMap(now, (t) =>
        Effect.mapError(
          script(keys, [t, ...args]),
          (failure) =>
            new TurnLock.TurnLockError({
              reason: "unavailable",
              message: `turn lock unavailable: ${failure.message}`
            })
        )
      )

    const release = (key: string, token: number): Effect.Effect<boolean, TurnLock.TurnLockError> =>
      Effect.flatMap(Effect.all([TurnLock.validateKey(key), TurnLock.validateToken(token)]), ([k, t]) =>
        Effect.map(call(releaseScript, [leaseKey(k)], [t]), (reply) => reply === 1)
      )

    return {
      acquire: (key, acquireOptions) =>
        Effect.gen(function* () {
          const k = yield* TurnLock.validateKey(key)
          const { ttlMs, waitMs } = yield* TurnLock.validateAcquireOptions(acquireOptions)
          const signal = acquireOptions.signal
          const start = yield* clock.now()
          for (;;) {
            if (signal?.aborted === true) {
              return yield* Effect.fail(
                new TurnLock.TurnLockError({ reason: "aborted", message: `waiting for '${k}' was aborted` })
              )
            }
            // Uninterruptible: a fiber interrupted while the script runs must not leave a lease
            // nobody knows about. It is interrupted during the sleep below instead.
            const reply = (yield* Effect.uninterruptible(
              call(acquireScript, [leaseKey(k), counterKey], [ttlMs, slack])
            )) as [number, number]
            if (reply[0] === 1) {
              const token = reply[1]
              return { key: k, token, release: release(k, token) }
            }
            const waited = (yield* clock.now()) - start
            if (waitMs !== undefined && waited >= waitMs) {
              return yield* Effect.fail(
                new TurnLock.TurnLockError({
                  reason: "busy",
                  message: `'${k}' is held by another turn (waited ${waited} ms)`
                })
              )
            }
            yield* Effect.sleep(Duration.millis(pollMs))
          }
        }),
      refresh: (key, token, ttlMs) =>
        Effect.gen(function* () {
          const k = yield* TurnLock.validateKey(key)
          const t = yield* TurnLock.validateToken(token)
          const ttl = yield* TurnLock.validateTtl(ttlMs)
          const reply = yield* call(refreshScript, [leaseKey(k)], [t, ttl, slack])
          if (reply !== 1) {
            return yield* Effect.fail(
              new TurnLock.TurnLockError({ reason: "lost", message: `token ${t} no longer holds '${k}'` })
            )
          }
        }),
      isCurrent: (key, token) =>
        Effect.flatMap(Effect.all([TurnLock.validateKey(key), TurnLock.validateToken(token)]), ([k, t]) =>
          Effect.map(call(currentScript, [leaseKey(k)], [t]), (reply) => reply === 1)
        ),
      release
    }
  })

/** The TurnLock port on the `RedisConnection`. */
export const layerTurnLock = (
  options: RedisTurnLockOptions = {}
): Layer.Layer<TurnLock.TurnLock, never, RedisConnection | Clock.Clock> =>
  Layer.effect(
    TurnLock.TurnLock,
    Effect.flatMap(RedisConnection, (redis) => makeTurnLock(redis, options))
  )
