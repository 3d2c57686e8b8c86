/**
 * The Redis rate limiter: the RateLimiter conformance suite, and the fact the issue needs of it:
 * two hosts (two connections) share one window.
 */
import { Clock, RateLimiter } from "@plugboard/core"
import { RateLimiterConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { makeConnection, makeRateLimiter } from "../src/index.js"
import { connection, deleteKeys, freshPrefix, REDIS_URL, SKIP_REASON } from "./helpers.js"

const ALICE = "did:key:z6MkAlice"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(REDIS_URL === undefined)(
  REDIS_URL === undefined ? `Redis RateLimiter: ${SKIP_REASON}` : "Redis RateLimiter",
  () => {
    afterAll(deleteKeys)

    RateLimiterConformance.run("redis", (config) =>
      Effect.gen(function* () {
        const clock = yield* Clock.makeTest(Date.UTC(2025, 0, 1))
        const limiter = yield* Effect.flatMap(connection(), (redis) => makeRateLimiter(redis, config)).pipe(
          Effect.provideService(Clock.Clock, clock)
        )
        return { limiter, advance: clock.advance }
      })
    )

    describe("Redis RateLimiter across hosts", () => {
      const twoHosts = (config: RateLimiter.RateLimiterConfig, serverTime = false) =>
        Effect.gen(function* () {
          const prefix = freshPrefix()
          const a = yield* Effect.flatMap(connection(prefix), (r) =>
            makeRateLimiter(r, { ...config, serverTime })
          )
          const b = yield* Effect.flatMap(connection(prefix), (r) =>
            makeRateLimiter(r, { ...config, serverTime })
          )
          return [a, b] as const
        }).pipe(Effect.provide(Clock.layer))

      it("two clients share one window: request N+1 is refused whichever client takes it", () =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const [a, b] = yield* twoHosts({ limit: 5, windowMs: 60_000 })
              const decisions = yield* Effect.all(
                Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).take(ALICE)),
                { concurrency: "unbounded" }
              )
              expect(decisions.filter((d) => d.allowed)).toHaveLength(5)
              expect((yield* a.take(ALICE)).allowed).toBe(false)
              const denied = yield* b.take(ALICE)
              expect(denied.allowed).toBe(false)
              expect(denied.retryAfterMs).toBeGreaterThan(59_000)
              expect((yield* b.take("did:key:z6MkBob")).allowed).toBe(true)
            })
          )
        ))

      it("with serverTime the window is measured on Redis's clock", () =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const [a, b] = yield* twoHosts({ limit: 2, windowMs: 300 }, true)
              expect((yield* a.take(ALICE)).allowed).toBe(true)
              expect((yield* b.take(ALICE)).allowed).toBe(true)
              const denied = yield* a.take(ALICE)
              expect(denied.allowed).toBe(false)
              expect(denied.retryAfterMs).toBeGreaterThan(0)
              expect(denied.retryAfterMs).toBeLessThanOrEqual(300)
              yield* Effect.sleep(`${denied.retryAfterMs + 20} millis`)
              expect((yield* b.take(ALICE)).allowed).toBe(true)
            })
          )
        ))

      it("a dead server is 'unavailable' within the command timeout, without the password", async () => {
        const secret = "redis-Secret-99"
        const started = Date.now()
        const exit = await Effect.runPromiseExit(
          Effect.scoped(
            Effect.gen(function* () {
              const redis = yield* makeConnection({
                url: `redis://:${secret}@127.0.0.1:1`,
                prefix: freshPrefix()
              })
              const limiter = yield* makeRateLimiter(redis, { limit: 1, windowMs: 1000 })
              return yield* limiter.take(ALICE)
            })
          ).pipe(Effect.provide(Clock.layer))
        )
        expect(Date.now() - started).toBeLessThan(3000)
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        expect(error).toBeInstanceOf(RateLimiter.RateLimiterError)
        expect((error as RateLimiter.RateLimiterError).reason).toBe("unavailable")
        expect((error as RateLimiter.RateLimiterError).message).toContain("127.0.0.1:1")
        expect((error as RateLimiter.RateLimiterError).message).toContain("ECONNREFUSED")
        expect(JSON.stringify(error)).not.toContain(secret)
      })
    })
  }
)
