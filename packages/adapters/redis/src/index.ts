/**
 * `@plugboard/redis` — the coordination ports on a shared Redis (docs/deployment.md, `REDIS_URL`):
 * the rate limiter (one sliding window for every host), the turn lock (a lease with a fencing
 * token), run fan-out (a follower on one host woken by frames appended on another) and turn
 * control (an abort or a delete on one host stops the turn running on another), and the replay guard
 * (a single-use credential refused on every host once used).
 */
export {
  DEFAULT_PREFIX,
  layer as layerConnection,
  layerConfig as layerConnectionConfig,
  make as makeConnection,
  RedisConnection,
  type RedisConnectionService,
  RedisFailure,
  type RedisOptions,
  redactUrl
} from "./RedisConnection.js"
export {
  layerRateLimiter,
  layerRateLimiterConfig,
  makeRateLimiter,
  type RedisRateLimiterOptions
} from "./RedisRateLimiter.js"
export { layerReplayGuard, makeReplayGuard, type RedisReplayGuardOptions } from "./RedisReplayGuard.js"
export { layerTurnControl, makeTurnControl } from "./RedisTurnControl.js"
export { layerTurnLock, makeTurnLock, type RedisTurnLockOptions } from "./RedisTurnLock.js"
export { layerRunFanout, makeRunFanout, RunFanout, type RunFanoutService } from "./RunFanout.js"
