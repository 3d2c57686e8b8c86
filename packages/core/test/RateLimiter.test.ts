import { RateLimiterConformance } from "@plugboard/testing"
import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as RateLimiter from "../src/RateLimiter.js"

RateLimiterConformance.run("memory", (config) =>
  Effect.gen(function* () {
    const clock = yield* Clock.makeTest(1_700_000_000_000)
    const limiter = yield* RateLimiter.makeMemory(config).pipe(Effect.provideService(Clock.Clock, clock))
    return { limiter, advance: clock.advance }
  })
)

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("RateLimiter memory", () => {
  it("defaults to 10 per 60,000 ms", async () => {
    const decisions = await Effect.gen(function* () {
      const limiter = yield* RateLimiter.RateLimiter
      return yield* Effect.forEach(Array.from({ length: 11 }), () => limiter.take("did:key:a"))
    }).pipe(Effect.provide(RateLimiter.layerMemory()), Effect.provide(Clock.layerTest()), Effect.runPromise)
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10)
    expect(decisions[10]).toMatchObject({ allowed: false, retryAfterMs: 60_000, limit: 10 })
  })

  it("reads THROTTLE_LIMIT and THROTTLE_TTL_MS, with defaults", async () => {
    const read = (env: Record<string, string>) => Effect.runPromiseExit(RateLimiter.config.pipe(withEnv(env)))
    expect(await read({})).toEqual(Exit.succeed({ limit: 10, windowMs: 60_000 }))
    expect(await read({ THROTTLE_LIMIT: "3", THROTTLE_TTL_MS: "500" })).toEqual(
      Exit.succeed({ limit: 3, windowMs: 500 })
    )
    for (const [name, value] of [
      ["THROTTLE_LIMIT", "0"],
      ["THROTTLE_LIMIT", "ten"],
      ["THROTTLE_TTL_MS", "-5"],
      ["THROTTLE_TTL_MS", "1.5"]
    ] as const) {
      const exit = await read({ [name]: value })
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain(name)
    }
  })

  it("layerConfig applies the environment's limit", async () => {
    const allowed = await Effect.gen(function* () {
      const limiter = yield* RateLimiter.RateLimiter
      const ds = yield* Effect.forEach(Array.from({ length: 5 }), () => limiter.take("did:key:a"))
      return ds.filter((d) => d.allowed).length
    }).pipe(
      Effect.provide(RateLimiter.layerConfig),
      Effect.provide(Clock.layerTest()),
      withEnv({ THROTTLE_LIMIT: "2" }),
      Effect.runPromise
    )
    expect(allowed).toBe(2)
  })

  it("refuses a config that is not positive whole numbers, naming the field", async () => {
    for (const bad of [{ limit: 0 }, { windowMs: -1 }, { limit: 2.5 }, { windowMs: Number.NaN }]) {
      const exit = await RateLimiter.makeMemory(bad).pipe(Effect.provide(Clock.layer), Effect.runPromiseExit)
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.reason).toBe(
        "invalid-config"
      )
      const field = Object.keys(bad)[0]!
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.message).toContain(field)
    }
  })

  it("never asks to wait more than a window when the clock steps backwards", () => {
    const log: Array<number> = []
    const cfg = { limit: 1, windowMs: 1000 }
    expect(RateLimiter.decide(log, 5000, cfg).allowed).toBe(true)
    const denied = RateLimiter.decide(log, 2000, cfg)
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 1000 })
  })

  it("forgets idle keys, so memory stays bounded by the active ones", async () => {
    const result = await Effect.gen(function* () {
      const clock = yield* Clock.makeTest(0)
      const limiter = yield* RateLimiter.makeMemory({ limit: 1, windowMs: 10 }).pipe(
        Effect.provideService(Clock.Clock, clock)
      )
      for (let i = 0; i < 5000; i++) {
        yield* limiter.take(`did:key:k${i}`)
        yield* clock.advance(1)
      }
      // A key seen long ago starts fresh; one within its window is still limited.
      const old = yield* limiter.take("did:key:k0")
      const recent = yield* limiter.take("did:key:k4999")
      return [old.allowed, recent.allowed]
    }).pipe(Effect.runPromise)
    expect(result).toEqual([true, false])
  })
})
