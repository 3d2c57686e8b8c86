/**
 * The conformance suite of the `RateLimiter` port. The factory builds a limiter for a given
 * config together with a way to move its time forward (every implementation reads time from
 * the `Clock` port, so a test clock drives it):
 *
 * ```ts
 * RateLimiterConformance.run("memory", (config) => Effect.gen(function* () {
 *   const clock = yield* Clock.makeTest(0)
 *   const limiter = yield* RateLimiter.makeMemory(config).pipe(Effect.provideService(Clock.Clock, clock))
 *   return { limiter, advance: clock.advance }
 * }))
 * ```
 */
import { RateLimiter } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { failureOf } from "./Factory.js"

/** A limiter under test and the handle that moves its clock. */
export interface RateLimiterHarness {
  readonly limiter: RateLimiter.RateLimiterService
  readonly advance: (millis: number) => Effect.Effect<void>
}

/** Builds a fresh limiter with `config`, its clock at an arbitrary start. */
export type RateLimiterFactory = (
  config: RateLimiter.RateLimiterConfig
) => Effect.Effect<RateLimiterHarness, unknown, Scope.Scope> | Promise<RateLimiterHarness>

/** Options of the suite. */
export interface RateLimiterConformanceOptions {
  /** fast-check runs of the window property (default 100). */
  readonly numRuns?: number
}

const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"

const withLimiter = <A>(
  factory: RateLimiterFactory,
  config: RateLimiter.RateLimiterConfig,
  body: (h: RateLimiterHarness) => Effect.Effect<A, unknown, Scope.Scope>
): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(
        Effect.suspend(() => {
          const made = factory(config)
          return Effect.isEffect(made) ? made : Effect.promise(() => made)
        }),
        body
      )
    )
  )

/** Registers the RateLimiter conformance suite for one implementation. */
export const run = (
  name: string,
  factory: RateLimiterFactory,
  options: RateLimiterConformanceOptions = {}
): void => {
  describe(`RateLimiter conformance: ${name}`, () => {
    it("allows `limit` takes, counting down `remaining`, then denies with a retry delay", () =>
      withLimiter(factory, { limit: 3, windowMs: 1000 }, ({ limiter }) =>
        Effect.gen(function* () {
          const decisions = yield* Effect.forEach([1, 2, 3, 4, 5], () => limiter.take(ALICE))
          expect(decisions.map((d) => [d.allowed, d.remaining, d.retryAfterMs])).toEqual([
            [true, 2, 0],
            [true, 1, 0],
            [true, 0, 0],
            [false, 0, 1000],
            [false, 0, 1000]
          ])
          expect(decisions.every((d) => d.limit === 3)).toBe(true)
        })
      ))

    it("frees a slot exactly `windowMs` after the take that used it (sliding window)", () =>
      withLimiter(factory, { limit: 3, windowMs: 1000 }, ({ limiter, advance }) =>
        Effect.gen(function* () {
          expect((yield* limiter.take(ALICE)).allowed).toBe(true) // t = 0
          yield* advance(500)
          expect((yield* limiter.take(ALICE)).allowed).toBe(true) // t = 500
          expect((yield* limiter.take(ALICE)).allowed).toBe(true) // t = 500
          yield* advance(499)
          expect(yield* limiter.take(ALICE)).toMatchObject({ allowed: false, retryAfterMs: 1 }) // t = 999
          yield* advance(1)
          expect(yield* limiter.take(ALICE)).toMatchObject({ allowed: true, remaining: 0 }) // t = 1000
          expect(yield* limiter.take(ALICE)).toMatchObject({ allowed: false, retryAfterMs: 500 })
          yield* advance(500)
          // t = 1500: both takes of t = 500 have expired; only t = 1000 still holds a slot.
          expect(yield* limiter.take(ALICE)).toMatchObject({ allowed: true, remaining: 1 })
        })
      ))

    it("waiting `retryAfterMs` is always enough", () =>
      withLimiter(factory, { limit: 2, windowMs: 60_000 }, ({ limiter, advance }) =>
        Effect.gen(function* () {
          yield* limiter.take(ALICE)
          yield* advance(12_345)
          yield* limiter.take(ALICE)
          const denied = yield* limiter.take(ALICE)
          expect(denied.allowed).toBe(false)
          yield* advance(denied.retryAfterMs - 1)
          expect((yield* limiter.take(ALICE)).allowed).toBe(false)
          yield* advance(1)
          expect((yield* limiter.take(ALICE)).allowed).toBe(true)
        })
      ))

    it("limits are per key, not global", () =>
      withLimiter(factory, { limit: 2, windowMs: 1000 }, ({ limiter }) =>
        Effect.gen(function* () {
          yield* limiter.take(ALICE)
          yield* limiter.take(ALICE)
          expect((yield* limiter.take(ALICE)).allowed).toBe(false)
          expect(yield* limiter.take(BOB)).toMatchObject({ allowed: true, remaining: 1 })
          expect((yield* limiter.take(BOB)).allowed).toBe(true)
          expect((yield* limiter.take(BOB)).allowed).toBe(false)
        })
      ))

    it("concurrent takes never exceed the limit", () =>
      withLimiter(factory, { limit: 10, windowMs: 1000 }, ({ limiter }) =>
        Effect.gen(function* () {
          const decisions = yield* Effect.all(
            Array.from({ length: 60 }, (_, i) => limiter.take(i % 2 === 0 ? ALICE : BOB)),
            { concurrency: "unbounded" }
          )
          expect(decisions.filter((d) => d.allowed)).toHaveLength(20)
        })
      ))

    it("refuses keys that are empty, too long or not strings with 'invalid-key'", () =>
      withLimiter(factory, { limit: 1, windowMs: 1000 }, ({ limiter }) =>
        Effect.gen(function* () {
          for (const key of [
            "",
            "k".repeat(RateLimiter.MAX_KEY_LENGTH + 1),
            undefined,
            7,
            null
          ] as Array<string>) {
            const exit = yield* Effect.exit(limiter.take(key))
            expect(Exit.isFailure(exit)).toBe(true)
            const error = failureOf(exit) as RateLimiter.RateLimiterError | undefined
            expect(error?._tag).toBe("RateLimiterError")
            expect(error?.reason).toBe("invalid-key")
          }
          // A refused key consumed nothing.
          expect((yield* limiter.take(ALICE)).allowed).toBe(true)
        })
      ))

    it("property: never more than `limit` per key in any window, and never denies a free slot", () =>
      fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 5 }),
          // Short windows and small steps land exactly on window edges often; big jumps
          // cover windows that expire entirely.
          fc.integer({ min: 1, max: 20 }),
          fc.array(
            fc.record({
              key: fc.constantFrom("did:key:a", "did:key:b", "did:key:c"),
              wait: fc.oneof(
                fc.constant(0),
                fc.integer({ min: 0, max: 25 }),
                fc.integer({ min: 0, max: 3000 })
              )
            }),
            { maxLength: 60 }
          ),
          (limit, windowMs, ops) =>
            withLimiter(factory, { limit, windowMs }, ({ limiter, advance }) =>
              Effect.gen(function* () {
                let now = 0
                const allowedAt = new Map<string, Array<number>>()
                for (const op of ops) {
                  yield* advance(op.wait)
                  now += op.wait
                  const mine = allowedAt.get(op.key) ?? []
                  const inWindow = mine.filter((t) => t > now - windowMs)
                  const decision = yield* limiter.take(op.key)
                  // Exactly the sliding-window model: allowed iff fewer than `limit` allowed
                  // takes of this key fall in (now − windowMs, now].
                  if (inWindow.length < limit) {
                    expect(decision.allowed).toBe(true)
                    expect(decision.remaining).toBe(limit - inWindow.length - 1)
                    mine.push(now)
                    allowedAt.set(op.key, mine)
                  } else {
                    expect(decision.allowed).toBe(false)
                    expect(decision.retryAfterMs).toBe(inWindow[0]! + windowMs - now)
                  }
                }
              })
            )
        ),
        { numRuns: options.numRuns ?? 100 }
      ))
  })
}
