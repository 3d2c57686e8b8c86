/**
 * The `RateLimiter` port on Redis: the sliding window of core's `RateLimiter.decide`, kept in a
 * sorted set per key (score: the time of an allowed take) and decided by one Lua script, so
 * every host shares one window and concurrent takes cannot both get the last slot (docs/deployment.md:
 * "`THROTTLE_LIMIT` holds across both").
 *
 * Time is the `Clock` port's, passed to the script (so tests move it), or Redis's own clock
 * with `serverTime`, which no host's clock skew can move. A key's set expires `windowMs` plus
 * a slack after its last take: that is only garbage collection, the window is the script's.
 */
import { randomBytes } from "node:crypto"
import { Clock, RateLimiter } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { RedisConnection, type RedisConnectionService } from "./RedisConnection.js"

/** Options of the Redis rate limiter. */
export interface RedisRateLimiterOptions extends Partial<RateLimiter.RateLimiterConfig> {
  /** Use Redis's clock instead of the `Clock` port (default false). */
  readonly serverTime?: boolean | undefined
  /** Extra lifetime of an idle key's set beyond `windowMs`, in ms (default 60000). */
  readonly expirySlackMs?: number | undefined
}

// KEYS[1]: the key's set. ARGV: now ('' = Redis's clock), windowMs, limit, a unique member, slack.
// Returns {allowed, remaining, retryAfterMs}; the same rule as core's `decide`.
const TAKE = `
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window + tonumber(ARGV[5]))
  return {1, limit - count - 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry = tonumber(oldest[2]) + window - now
if retry > window then retry = window end
return {0, 0, retry}
`

/** Builds the Redis rate limiter on a connection. */
export const makeRateLimiter = (
  redis: RedisConnectionService,
  options: RedisRateLimiterOptions = {}
): Effect.Effect<RateLimiter.RateLimiterService, RateLimiter.RateLimiterError, Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    // makeMemory validates the config with the port's own wording; its limiter is not used.
    const cfg = { ...RateLimiter.defaultConfig, ...options }
    yield* RateLimiter.makeMemory(cfg)
    const take = redis.script(TAKE)
    const slack = options.expirySlackMs ?? 60_000
    const validKey = (key: unknown): key is string =>
      typeof key === "string" && key.length > 0 && key.length <= RateLimiter.MAX_KEY_LENGTH
    return {
      take: (key) =>
        Effect.gen(function* () {
          if (!validKey(key)) {
            return yield* Effect.fail(
              new RateLimiter.RateLimiterError({
                reason: "invalid-key",
                message: `Rate limit key must be a non-empty string of at most ${RateLimiter.MAX_KEY_LENGTH} characters.`
              })
            )
          }
          const now = options.serverTime === true ? "" : yield* clock.now()
          const reply = yield* Effect.mapError(
            take(
              [`${redis.prefix}rl:${key}`],
              [now, cfg.windowMs, cfg.limit, `${now}:${randomBytes(8).toString("hex")}`, slack]
            ),
            (failure) =>
              new RateLimiter.RateLimiterError({
                reason: "unavailable",
                message: `rate limiter unavailable: ${failure.message}`
              })
          )
          const [allowed, remaining, retryAfterMs] = reply as [number, number, number]
          return { allowed: allowed === 1, remaining, retryAfterMs, limit: cfg.limit }
        })
    }
  })

/** The RateLimiter port on the `RedisConnection`. */
export const layerRateLimiter = (
  options: RedisRateLimiterOptions = {}
): Layer.Layer<RateLimiter.RateLimiter, RateLimiter.RateLimiterError, RedisConnection | Clock.Clock> =>
  Layer.effect(
    RateLimiter.RateLimiter,
    Effect.flatMap(RedisConnection, (redis) => makeRateLimiter(redis, options))
  )

/** The Redis rate limiter configured from `THROTTLE_LIMIT` / `THROTTLE_TTL_MS`. */
export const layerRateLimiterConfig = (options: Omit<RedisRateLimiterOptions, "limit" | "windowMs"> = {}) =>
  Layer.effect(
    RateLimiter.RateLimiter,
    Effect.flatMap(Effect.all([RedisConnection, RateLimiter.config]), ([redis, cfg]) =>
      makeRateLimiter(redis, { ...options, ...cfg })
    )
  )
