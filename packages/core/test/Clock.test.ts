import { Effect, Exit, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"

describe("Clock", () => {
  it("the live layer reads wall-clock time in whole milliseconds", async () => {
    const before = Date.now()
    const now = await Effect.runPromise(
      Effect.flatMap(Clock.Clock, (c) => c.now()).pipe(Effect.provide(Clock.layer))
    )
    expect(Number.isInteger(now)).toBe(true)
    expect(now).toBeGreaterThanOrEqual(before)
    expect(now).toBeLessThanOrEqual(Date.now())
  })

  it("the live layer follows Effect's TestClock under TestContext", async () => {
    const now = await Effect.gen(function* () {
      yield* TestClock.setTime(42_000)
      return yield* (yield* Clock.Clock).now()
    }).pipe(Effect.provide(Clock.layer), Effect.provide(TestContext.TestContext), Effect.runPromise)
    expect(now).toBe(42_000)
  })

  it("the test clock moves only when told, and the port and the control share it", async () => {
    const seen = await Effect.gen(function* () {
      const clock = yield* Clock.Clock
      const control = yield* Clock.TestControl
      const a = yield* clock.now()
      yield* control.advance(250)
      const b = yield* clock.now()
      yield* control.set(10_000)
      const c = yield* clock.now()
      yield* control.set(10_000)
      return [a, b, c, yield* clock.now()]
    }).pipe(Effect.provide(Clock.layerTest(1_000)), Effect.runPromise)
    expect(seen).toEqual([1_000, 1_250, 10_000, 10_000])
  })

  it("refuses to move backwards or by a bad amount, and keeps its time", async () => {
    const clock = await Effect.runPromise(Clock.makeTest(500))
    for (const bad of [clock.advance(-1), clock.advance(0.5), clock.advance(Number.NaN), clock.set(499)]) {
      const exit = await Effect.runPromiseExit(bad)
      expect(Exit.isFailure(exit) && exit.cause._tag === "Die").toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toMatch(/RangeError/)
    }
    expect(await Effect.runPromise(clock.now())).toBe(500)
    expect(Exit.isFailure(await Effect.runPromiseExit(Clock.makeTest(-1)))).toBe(true)
  })
})
