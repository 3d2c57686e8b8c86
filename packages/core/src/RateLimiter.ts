/**
 * The `RateLimiter` port: per-key (per user DID) request limits (docs/spec/pipeline.md#the-stages;
 * a denial is a 429 with `Retry-After`).
 *
 * Semantics every implementation keeps: a *sliding* window. An allowed `take` at time `t`
 * occupies one of `limit` slots during `[t, t + windowMs)`; so in ANY interval of `windowMs`
 * at most `limit` takes of one key are allowed — a fixed window would allow up to twice that
 * across a window boundary. Denied takes occupy no slot. Keys never share slots.
 */
import { Config, type ConfigError, Context, Effect, Layer, Schema } from "effect"
import { Clock } from "./Clock.js"

/** How many requests a key may make per window. */
export interface RateLimiterConfig {
  /** Allowed takes per window, a positive integer. */
  readonly limit: number
  /** Window length in milliseconds, a positive integer. */
  readonly windowMs: number
}

/** The defaults of `THROTTLE_LIMIT` / `THROTTLE_TTL_MS`: 10 requests per 60 s. */
export const defaultConfig: RateLimiterConfig = { limit: 10, windowMs: 60_000 }

/** The answer to one `take`. */
export interface Decision {
  readonly allowed: boolean
  /** Slots left in the current window after this take. */
  readonly remaining: number
  /** 0 when allowed; otherwise how long until a slot frees up (for `Retry-After`). */
  readonly retryAfterMs: number
  /** The configured limit, for `X-RateLimit-Limit`-style headers. */
  readonly limit: number
}

/**
 * Why the limiter could not decide. A host never lets a request through silently: it answers 503,
 * or decides with a fallback and says so (`withFallback`).
 */
export const RateLimiterErrorReason = Schema.Literal("invalid-key", "invalid-config", "unavailable")
/** Why the limiter could not decide. */
export type RateLimiterErrorReason = typeof RateLimiterErrorReason.Type

/** The limiter could not decide. */
export class RateLimiterError extends Schema.TaggedError<RateLimiterError>()("RateLimiterError", {
  reason: RateLimiterErrorReason,
  message: Schema.String
}) {}

/** The operations of the RateLimiter port. */
export interface RateLimiterService {
  /** Takes one slot for `key` if one is free. */
  readonly take: (key: string) => Effect.Effect<Decision, RateLimiterError>
}

/** The RateLimiter port. */
export class RateLimiter extends Context.Tag("@plugboard/core/RateLimiter")<
  RateLimiter,
  RateLimiterService
>() {}

/** Longest key accepted; keys are DIDs, so anything longer is a caller bug or an attack. */
export const MAX_KEY_LENGTH = 2048

/** Validates a key: a non-empty string of at most `MAX_KEY_LENGTH` characters. */
const checkKey = (key: unknown): Effect.Effect<string, RateLimiterError> =>
  typeof key === "string" && key.length > 0 && key.length <= MAX_KEY_LENGTH
    ? Effect.succeed(key)
    : Effect.fail(
        new RateLimiterError({
          reason: "invalid-key",
          message: `Rate limit key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters.`
        })
      )

/** Validates a config: both fields positive safe integers. */
const checkConfig = (config: RateLimiterConfig): Effect.Effect<RateLimiterConfig, RateLimiterError> => {
  const bad = (["limit", "windowMs"] as const).filter(
    (k) => !(Number.isSafeInteger(config[k]) && config[k] > 0)
  )
  return bad.length === 0
    ? Effect.succeed(config)
    : Effect.fail(
        new RateLimiterError({
          reason: "invalid-config",
          message: `Rate limiter ${bad.map((k) => `${k} must be a positive whole number, got ${String(config[k])}`).join("; ")}.`
        })
      )
}

/**
 * The limiter's config from the environment: `THROTTLE_LIMIT` (default 10) and
 * `THROTTLE_TTL_MS` (default 60000), each a positive integer; a malformed value fails naming
 * the variable.
 */
export const config: Config.Config<RateLimiterConfig> = Config.all({
  limit: positiveInt("THROTTLE_LIMIT", defaultConfig.limit),
  windowMs: positiveInt("THROTTLE_TTL_MS", defaultConfig.windowMs)
})

function positiveInt(name: string, fallback: number): Config.Config<number> {
  return Config.integer(name).pipe(
    Config.validate({ message: `${name} must be a positive integer`, validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )
}

/**
 * Pure core of the sliding window, shared by implementations that hold the log themselves.
 * `log` holds the times of the key's allowed takes, oldest first; it is pruned in place.
 */
export const decide = (log: Array<number>, now: number, cfg: RateLimiterConfig): Decision => {
  let expired = 0
  while (expired < log.length && log[expired]! + cfg.windowMs <= now) expired++
  if (expired > 0) log.splice(0, expired)
  if (log.length < cfg.limit) {
    log.push(now)
    return { allowed: true, remaining: cfg.limit - log.length, retryAfterMs: 0, limit: cfg.limit }
  }
  // Clamped: if the wall clock stepped backwards, never ask a client to wait beyond one window.
  const retryAfterMs = Math.min(cfg.windowMs, log[0]! + cfg.windowMs - now)
  return { allowed: false, remaining: 0, retryAfterMs, limit: cfg.limit }
}

/** How many takes between sweeps of idle keys in the memory limiter. */
const SWEEP_EVERY = 1024

/**
 * An in-memory sliding-window limiter driven by the `Clock` port (tests advance time instead
 * of sleeping). Per process: a host behind a load balancer needs a shared implementation.
 * Memory is O(limit) per active key; keys idle for a whole window are swept.
 */
export const makeMemory = (
  options: Partial<RateLimiterConfig> = {}
): Effect.Effect<RateLimiterService, RateLimiterError, Clock> =>
  Effect.gen(function* () {
    const cfg = yield* checkConfig({ ...defaultConfig, ...options })
    const clock = yield* Clock
    const logs = new Map<string, Array<number>>()
    let takes = 0

    const sweep = (now: number) => {
      for (const [key, log] of logs) {
        if (log.length === 0 || log[log.length - 1]! + cfg.windowMs <= now) logs.delete(key)
      }
    }

    return {
      // The key checked, then the clock read, then one synchronous decision: a take per request.
      take: (key) =>
        Effect.flatMap(checkKey(key), (k) =>
          Effect.map(clock.now(), (now) => {
            if (++takes % SWEEP_EVERY === 0) sweep(now)
            let log = logs.get(k)
            if (log === undefined) {
              log = []
              logs.set(k, log)
            }
            return decide(log, now, cfg)
          })
        )
    }
  })

/** The memory limiter as a layer with the given (or default) config. */
export const layerMemory = (
  options: Partial<RateLimiterConfig> = {}
): Layer.Layer<RateLimiter, RateLimiterError, Clock> => Layer.effect(RateLimiter, makeMemory(options))

/** The memory limiter configured from `THROTTLE_LIMIT` / `THROTTLE_TTL_MS`. */
export const layerConfig: Layer.Layer<RateLimiter, RateLimiterError | ConfigError.ConfigError, Clock> =
  Layer.effect(
    RateLimiter,
    Effect.flatMap(config, (cfg) => makeMemory(cfg))
  )

/** What `withFallback` reports about an outage of its primary limiter. */
export interface FallbackHooks {
  /** The primary limiter failed `unavailable`: the first time of an outage only. */
  readonly onUnavailable?: ((error: RateLimiterError) => void) | undefined
  /** The primary limiter answered again after an outage. */
  readonly onRecovered?: (() => void) | undefined
}

/** How long `withFallback` answers from the fallback alone before asking the primary again. */
export const FALLBACK_PROBE_MS = 1_000

/**
 * A limiter that decides with `fallback` while `primary` cannot (`unavailable`): the policy for a
 * shared limiter whose engine is down (docs/spec/pipeline.md#when-redis-is-down). The API stays
 * up, and each host limits on its own meanwhile (a user whose requests spread over n hosts may get
 * up to n times the limit), where failing closed would answer every request 503, reads included.
 * The outage is reported, never silent (`hooks`). While the primary is down it is asked again at
 * most once per `probeMs` (by the Clock port), so requests do not each wait for it to time out.
 * Other failures (`invalid-key`, `invalid-config`) are the caller's, and pass through.
 */
export const withFallback = (
  primary: RateLimiterService,
  fallback: RateLimiterService,
  hooks: FallbackHooks = {},
  probeMs: number = FALLBACK_PROBE_MS
): Effect.Effect<RateLimiterService, never, Clock> =>
  Effect.map(Clock, (clock) => {
    // While down: when the primary may be asked again (epoch ms).
    let downUntil: number | undefined
    return {
      take: (key) =>
        Effect.flatMap(clock.now(), (now) => {
          if (downUntil !== undefined && now < downUntil) return fallback.take(key)
          return primary.take(key).pipe(
            Effect.tap(() =>
              Effect.sync(() => {
                if (downUntil === undefined) return
                downUntil = undefined
                hooks.onRecovered?.()
              })
            ),
            Effect.catchIf(
              (error) => error.reason === "unavailable",
              (error) =>
                Effect.suspend(() => {
                  if (downUntil === undefined) hooks.onUnavailable?.(error)
                  downUntil = now + probeMs
                  return fallback.take(key)
                })
            )
          )
        })
    }
  })
