/**
 * The conformance suite of the `ReplayGuard` port. The factory builds a guard with a way to move
 * its time forward (every implementation reads time from the `Clock` port, so a test clock drives
 * it):
 *
 * ```ts
 * ReplayGuardConformance.run("memory", () => Effect.gen(function* () {
 *   const clock = yield* Clock.makeTest(0)
 *   const guard = yield* ReplayGuard.makeMemory.pipe(Effect.provideService(Clock.Clock, clock))
 *   return { guard, now: clock.now, advance: clock.advance }
 * }))
 * ```
 */
import { ReplayGuard } from "@plugboard/core"
import { Effect, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { failureOf } from "./Factory.js"

/** A guard under test, its clock's time and the handle that moves it. */
export interface ReplayGuardHarness {
  readonly guard: ReplayGuard.ReplayGuardService
  readonly now: () => Effect.Effect<number>
  readonly advance: (millis: number) => Effect.Effect<void>
}

/** Builds a fresh guard (no key used yet), its clock at an arbitrary start. */
export type ReplayGuardFactory = () => Effect.Effect<ReplayGuardHarness, unknown, Scope.Scope>

const withGuard = <A>(
  factory: ReplayGuardFactory,
  body: (h: ReplayGuardHarness) => Effect.Effect<A, unknown, Scope.Scope>
): Promise<A> => Effect.runPromise(Effect.scoped(Effect.flatMap(factory(), body)))

/** Registers the suite under `name`. */
export const run = (
  name: string,
  factory: ReplayGuardFactory,
  options: { readonly numRuns?: number } = {}
): void => {
  describe(`ReplayGuard conformance: ${name}`, () => {
    it("a key is a first use once until it expires; then it is forgotten", () =>
      withGuard(factory, (h) =>
        Effect.gen(function* () {
          const until = (yield* h.now()) + 60_000
          expect(yield* h.guard.firstUse("token-a", until)).toBe(true)
          expect(yield* h.guard.firstUse("token-a", until)).toBe(false)
          expect(yield* h.guard.firstUse("token-b", until)).toBe(true)
          yield* h.advance(59_999)
          expect(yield* h.guard.firstUse("token-a", until)).toBe(false)
          yield* h.advance(1)
          expect(yield* h.guard.firstUse("token-a", until + 60_000)).toBe(true)
          expect(yield* h.guard.firstUse("token-a", until + 60_000)).toBe(false)
        })
      ))

    it("racing uses of one key: exactly one is the first", () =>
      withGuard(factory, (h) =>
        Effect.gen(function* () {
          const until = (yield* h.now()) + 60_000
          const answers = yield* Effect.all(
            Array.from({ length: 25 }, () => h.guard.firstUse("raced", until)),
            { concurrency: "unbounded" }
          )
          expect(answers.filter((a) => a)).toHaveLength(1)
        })
      ))

    it("bad input fails invalid-input and records nothing", () =>
      withGuard(factory, (h) =>
        Effect.gen(function* () {
          const until = (yield* h.now()) + 1_000
          for (const [key, expiresAt] of [
            ["", until],
            ["k".repeat(ReplayGuard.MAX_KEY_LENGTH + 1), until],
            [42 as unknown as string, until],
            ["ok", Number.NaN],
            ["ok", 1.5],
            ["ok", -1]
          ] as const) {
            const failure = failureOf(yield* Effect.exit(h.guard.firstUse(key, expiresAt)))
            expect(failure?.reason).toBe("invalid-input")
          }
          expect(yield* h.guard.firstUse("ok", until)).toBe(true)
        })
      ))

    it("agrees with a model under random uses and waits", async () => {
      const step = fc.oneof(
        fc.record({ use: fc.constantFrom("a", "b", "c"), ttl: fc.integer({ min: 1, max: 5_000 }) }),
        fc.record({ wait: fc.integer({ min: 0, max: 3_000 }) })
      )
      await fc.assert(
        fc.asyncProperty(fc.array(step, { maxLength: 40 }), (steps) =>
          withGuard(factory, (h) =>
            Effect.gen(function* () {
              const model = new Map<string, number>()
              for (const s of steps) {
                if ("wait" in s) {
                  yield* h.advance(s.wait)
                  continue
                }
                const now = yield* h.now()
                const until = model.get(s.use)
                const expected = until === undefined || now >= until
                if (expected) model.set(s.use, now + s.ttl)
                expect(yield* h.guard.firstUse(s.use, now + s.ttl)).toBe(expected)
              }
            })
          )
        ),
        { numRuns: options.numRuns ?? 50 }
      )
    })
  })
}
