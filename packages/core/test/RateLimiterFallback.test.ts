/**
 * `RateLimiter.withFallback`: the policy for a shared limiter whose engine is down (issue 36,
 * item 12). It is a limiter like any other (the conformance suite, with the primary up and with
 * it down), and over any sequence of outages it asks the fallback exactly while the primary is
 * down or inside its probe window, and reports each outage once (a property test).
 */
import { RateLimiterConformance } from "@plugboard/testing"
import { Effect } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as RateLimiter from "../src/RateLimiter.js"

/** A limiter standing for a shared engine: it answers with `inner` while up, `unavailable` while down. */
const switchable = (inner: RateLimiter.RateLimiterService) => {
  const state = { up: true, calls: 0 }
  const service: RateLimiter.RateLimiterService = {
    take: (key) =>
      Effect.suspend(() => {
        state.calls++
        return state.up
          ? inner.take(key)
          : Effect.fail(new RateLimiter.RateLimiterError({ reason: "unavailable", message: "engine down" }))
      })
  }
  return { service, state }
}

for (const up of [true, false]) {
  RateLimiterConformance.run(`withFallback, primary ${up ? "up" : "down"}`, (config) =>
    Effect.gen(function* () {
      const clock = yield* Clock.makeTest(1_700_000_000_000)
      const provide = Effect.provideService(Clock.Clock, clock)
      const primary = switchable(yield* RateLimiter.makeMemory(config).pipe(provide))
      primary.state.up = up
      const fallback = yield* RateLimiter.makeMemory(config).pipe(provide)
      const limiter = yield* RateLimiter.withFallback(primary.service, fallback).pipe(provide)
      return { limiter, advance: clock.advance }
    })
  )
}

describe("RateLimiter.withFallback", () => {
  it("over any outage sequence: the fallback decides exactly while the primary is down or probed too recently; one report per outage", async () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant("take" as const) }),
      fc.record({ kind: fc.constant("toggle" as const) }),
      fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 2_500 }) })
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        await Effect.runPromise(
          Effect.gen(function* () {
            const clock = yield* Clock.makeTest(0)
            const provide = Effect.provideService(Clock.Clock, clock)
            const big = { limit: 1_000_000, windowMs: 60_000 }
            const primary = switchable(yield* RateLimiter.makeMemory(big).pipe(provide))
            let fallbackCalls = 0
            const fallbackInner = yield* RateLimiter.makeMemory(big).pipe(provide)
            const fallback: RateLimiter.RateLimiterService = {
              take: (key) =>
                Effect.suspend(() => {
                  fallbackCalls++
                  return fallbackInner.take(key)
                })
            }
            const reports: Array<string> = []
            const limiter = yield* RateLimiter.withFallback(primary.service, fallback, {
              onUnavailable: () => reports.push("down"),
              onRecovered: () => reports.push("up")
            }).pipe(provide)
            // The model: when the primary was last found down (and may not be asked before +probe).
            let downSince: number | undefined
            let outages = 0
            let recoveries = 0
            for (const s of steps) {
              if (s.kind === "toggle") primary.state.up = !primary.state.up
              else if (s.kind === "advance") yield* clock.advance(s.ms)
              else {
                const now = yield* clock.now()
                const asked = primary.state.calls
                const fell = fallbackCalls
                const decision = yield* limiter.take("did:key:a")
                expect(decision.allowed).toBe(true)
                const skip = downSince !== undefined && now < downSince + RateLimiter.FALLBACK_PROBE_MS
                if (skip) {
                  expect(primary.state.calls).toBe(asked)
                  expect(fallbackCalls).toBe(fell + 1)
                } else if (primary.state.up) {
                  expect(fallbackCalls).toBe(fell)
                  if (downSince !== undefined) recoveries++
                  downSince = undefined
                } else {
                  expect(fallbackCalls).toBe(fell + 1)
                  if (downSince === undefined) outages++
                  downSince = now
                }
              }
            }
            expect(reports.filter((r) => r === "down")).toHaveLength(outages)
            expect(reports.filter((r) => r === "up")).toHaveLength(recoveries)
          })
        )
      }),
      { numRuns: 200 }
    )
  })

  it("a caller's mistake is not an outage: invalid-key passes through, and the fallback is not asked", async () => {
    const exit = await Effect.gen(function* () {
      const primary = yield* RateLimiter.makeMemory()
      let asked = 0
      const fallback: RateLimiter.RateLimiterService = {
        take: () =>
          Effect.sync(() => {
            asked++
            return { allowed: true, remaining: 0, retryAfterMs: 0, limit: 1 }
          })
      }
      const limiter = yield* RateLimiter.withFallback(primary, fallback)
      const result = yield* Effect.either(limiter.take(""))
      return { result, asked }
    }).pipe(Effect.provide(Clock.layerTest()), Effect.runPromise)
    expect(exit.asked).toBe(0)
    expect(exit.result._tag).toBe("Left")
    if (exit.result._tag === "Left") expect(exit.result.left.reason).toBe("invalid-key")
  })
})
