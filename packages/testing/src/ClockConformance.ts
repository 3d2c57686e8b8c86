/**
 * The conformance suite of the `Clock` port: the live clock and the test clock. Every port that
 * stamps or windows by time reads it, so it must give whole milliseconds that never go back.
 *
 * ```ts
 * ClockConformance.run("test", () => Effect.map(Clock.makeTest(0), (c) => ({ clock: c, advance: c.advance })))
 * ClockConformance.run("live", () => Effect.succeed({ clock: liveClock, wall: true }))
 * ```
 */
import type { Clock } from "@plugboard/core"
import { Effect } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** A clock under test: `advance` when a test moves its time, `wall` when it follows the system's. */
export interface ClockHarness {
  readonly clock: Clock.ClockService
  readonly advance?: (millis: number) => Effect.Effect<void>
  readonly wall?: boolean
}

/** Builds a fresh clock. */
export type ClockFactory = () => Effect.Effect<ClockHarness>

/** Registers the suite under `name`. */
export const run = (
  name: string,
  factory: ClockFactory,
  options: { readonly numRuns?: number } = {}
): void => {
  const numRuns = options.numRuns ?? 50
  const withClock = <A>(body: (h: ClockHarness) => Effect.Effect<A>) =>
    Effect.runPromise(Effect.flatMap(factory(), body))

  describe(`Clock conformance: ${name}`, () => {
    it("gives whole milliseconds that never go back", () =>
      withClock((h) =>
        Effect.gen(function* () {
          let last = -1
          for (let i = 0; i < 200; i++) {
            const now = yield* h.clock.now()
            expect(Number.isSafeInteger(now)).toBe(true)
            expect(now).toBeGreaterThanOrEqual(Math.max(0, last))
            last = now
          }
        })
      ))

    it("a clock that follows the system's reads the system's time", () =>
      withClock((h) =>
        Effect.gen(function* () {
          if (h.wall !== true) return
          const before = Date.now()
          const now = yield* h.clock.now()
          const after = Date.now()
          expect(now).toBeGreaterThanOrEqual(before)
          expect(now).toBeLessThanOrEqual(after)
        })
      ))

    it("a clock a test moves moves by exactly what it is moved, and only then", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 86_400_000 }), { maxLength: 10 }), (steps) =>
          withClock((h) =>
            Effect.gen(function* () {
              if (h.advance === undefined) return
              const start = yield* h.clock.now()
              let expected = start
              for (const step of steps) {
                expect(yield* h.clock.now()).toBe(expected)
                yield* h.advance(step)
                expected += step
              }
              expect(yield* h.clock.now()).toBe(expected)
            })
          )
        ),
        { numRuns }
      )
    })
  })
}
