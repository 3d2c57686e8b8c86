/**
 * The turns' wall-clock limit (`TurnDeadlines.ts`): a watched turn is aborted at its deadline and
 * not before, one let go never is, a turn watched after everything was let go is still cut, and
 * nothing is cut once the scope closed. On the test clock; a property test over random
 * schedules of turns.
 */
import { Effect, Exit, Scope, TestClock, TestContext } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as TurnDeadlines from "../src/TurnDeadlines.js"

const LIMIT = 1_000

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(TestContext.TestContext)))

/** A turn that counts its aborts. */
const turn = () => {
  const t = { aborts: 0, abort: () => void t.aborts++ }
  return t
}

describe("TurnDeadlines", () => {
  it("aborts a watched turn at its deadline, not before, and once", () =>
    run(
      Effect.gen(function* () {
        const deadlines = yield* TurnDeadlines.make(LIMIT)
        const t = turn()
        deadlines.watch(t.abort)
        yield* TestClock.adjust(LIMIT - 1)
        expect(t.aborts).toBe(0)
        yield* TestClock.adjust(1)
        expect(t.aborts).toBe(1)
        yield* TestClock.adjust(10 * LIMIT)
        expect(t.aborts).toBe(1)
      })
    ))

  it("never aborts a turn let go before its deadline (letting go twice is harmless)", () =>
    run(
      Effect.gen(function* () {
        const deadlines = yield* TurnDeadlines.make(LIMIT)
        const kept = turn()
        const gone = turn()
        deadlines.watch(kept.abort)
        const letGo = deadlines.watch(gone.abort)
        yield* TestClock.adjust(LIMIT / 2)
        letGo()
        letGo()
        yield* TestClock.adjust(LIMIT)
        expect([kept.aborts, gone.aborts]).toEqual([1, 0])
      })
    ))

  it("cuts each turn at its own deadline, and one watched after all were let go", () =>
    run(
      Effect.gen(function* () {
        const deadlines = yield* TurnDeadlines.make(LIMIT)
        const first = turn()
        deadlines.watch(first.abort)
        yield* TestClock.adjust(300)
        const second = turn()
        deadlines.watch(second.abort)
        yield* TestClock.adjust(LIMIT - 300)
        expect([first.aborts, second.aborts]).toEqual([1, 0])
        yield* TestClock.adjust(300)
        expect(second.aborts).toBe(1)
        // Nothing watched now: the fiber waits; a new turn wakes it.
        yield* TestClock.adjust(5 * LIMIT)
        const late = turn()
        deadlines.watch(late.abort)
        yield* TestClock.adjust(LIMIT - 1)
        expect(late.aborts).toBe(0)
        yield* TestClock.adjust(1)
        expect(late.aborts).toBe(1)
      })
    ))

  it("cuts nothing once its scope closed", () =>
    run(
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const deadlines = yield* Scope.extend(TurnDeadlines.make(LIMIT), scope)
        const t = turn()
        deadlines.watch(t.abort)
        yield* Scope.close(scope, Exit.void)
        yield* TestClock.adjust(2 * LIMIT)
        expect(t.aborts).toBe(0)
      })
    ))

  it("refuses a limit that is not positive with a RangeError", () => {
    for (const limit of [0, -1, Number.NaN]) {
      expect(() => TurnDeadlines.make(limit)).toThrow(RangeError)
    }
  })

  it("property: after every step, exactly the turns past their deadline and not let go were aborted, each once", () =>
    fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            wait: fc.integer({ min: 0, max: 2 * LIMIT }),
            letGoAfter: fc.option(fc.integer({ min: 1, max: 2 * LIMIT }), { nil: undefined })
          }),
          { minLength: 1, maxLength: 12 }
        ),
        (plan) =>
          run(
            Effect.gen(function* () {
              const deadlines = yield* TurnDeadlines.make(LIMIT)
              const turns: Array<{
                readonly at: number
                readonly letGoAt: number | undefined
                readonly t: ReturnType<typeof turn>
                readonly letGo: () => void
              }> = []
              let now = 0
              const check = () => {
                for (const { at, letGoAt, t } of turns) {
                  const letGoFirst = letGoAt !== undefined && letGoAt < at + LIMIT
                  const due = at + LIMIT <= now && !letGoFirst
                  expect(t.aborts).toBe(due ? 1 : 0)
                }
              }
              // Advances to `until`, letting turns go at their times on the way.
              const advanceTo = (until: number) =>
                Effect.gen(function* () {
                  const stops = turns
                    .filter((x) => x.letGoAt !== undefined && x.letGoAt > now && x.letGoAt <= until)
                    .sort((a, b) => a.letGoAt! - b.letGoAt!)
                  for (const x of stops) {
                    // At its deadline's instant the cut comes first; after it, letting go is harmless.
                    yield* TestClock.adjust(x.letGoAt! - now)
                    now = x.letGoAt!
                    x.letGo()
                    check()
                  }
                  yield* TestClock.adjust(until - now)
                  now = until
                  check()
                })
              for (const { wait, letGoAfter } of plan) {
                yield* advanceTo(now + wait)
                const t = turn()
                const letGo = deadlines.watch(t.abort)
                turns.push({
                  at: now,
                  letGoAt: letGoAfter === undefined ? undefined : now + letGoAfter,
                  t,
                  letGo
                })
              }
              yield* advanceTo(now + 3 * LIMIT)
            })
          )
      ),
      { numRuns: 40 }
    ))
})
