/**
 * The `ReplayGuard` port on Redis: a key per credential, kept until the credential expires, so
 * that a replay reaching any host is refused (docs/spec/wire.md#replay). One Lua script decides,
 * so two hosts racing with one token cannot both see a first use.
 *
 * Time is the `Clock` port's, passed to the script (so tests move it), or Redis's own clock with
 * `serverTime`. The stored value is the credential's expiry; the key's own `PX` is only garbage
 * collection (the expiry plus a slack), the decision is the script's.
 */
import { Clock, ReplayGuard } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { RedisConnection, type RedisConnectionService } from "./RedisConnection.js"

/** Options of the Redis replay guard. */
export interface RedisReplayGuardOptions {
  /** Use Redis's clock instead of the `Clock` port (default false). */
  readonly serverTime?: boolean | undefined
}

// KEYS[1]: the credential's key. ARGV: now ('' = Redis's clock), expiresAt, slack.
// Returns 1 for a first use (recorded), 0 for a replay.
const FIRST_USE = `
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local expires = tonumber(ARGV[2])
local seen = tonumber(redis.call('GET', KEYS[1]))
if seen ~= nil and now < seen then return 0 end
if expires > now then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', expires - now + tonumber(ARGV[3]))
end
return 1
`

/** How long a key outlives its credential on Redis (garbage collection only). */
const SLACK_MS = 60_000

/** Builds the Redis replay guard on a connection. */
export const makeReplayGuard = (
  redis: RedisConnectionService,
  options: RedisReplayGuardOptions = {}
): Effect.Effect<ReplayGuard.ReplayGuardService, never, Clock.Clock> =>
  Effect.map(Clock.Clock, (clock) => {
    const firstUse = redis.script(FIRST_USE)
    return {
      firstUse: (key, expiresAt) =>
        Effect.gen(function* () {
          yield* ReplayGuard.validate(key, expiresAt)
          const now = options.serverTime === true ? "" : yield* clock.now()
          const reply = yield* Effect.mapError(
            firstUse([`${redis.prefix}seen:${key}`], [now, expiresAt, SLACK_MS]),
            (failure) =>
              new ReplayGuard.ReplayGuardError({
                reason: "unavailable",
                message: `replay guard unavailable: ${failure.message}`
              })
          )
          return reply === 1
        })
    }
  })

/** The ReplayGuard port on the `RedisConnection`. */
export const layerReplayGuard = (
  options: RedisReplayGuardOptions = {}
): Layer.Layer<ReplayGuard.ReplayGuard, never, RedisConnection | Clock.Clock> =>
  Layer.effect(
    ReplayGuard.ReplayGuard,
    Effect.flatMap(RedisConnection, (redis) => makeReplayGuard(redis, options))
  )
