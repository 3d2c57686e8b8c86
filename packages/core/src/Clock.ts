/**
 * The `Clock` port: wall-clock time in milliseconds since the Unix epoch.
 *
 * Why a port of our own instead of Effect's built-in `Clock`: Effect's clock is a default
 * service every fiber carries implicitly, and its `TestClock` also drives `Effect.sleep`,
 * timeouts and schedules. Ports that stamp or window by time (the rate limiter, the credit
 * ledger's history, sessions) should name their dependency on time in their layer's
 * requirements, and a test should be able to move *that* time without freezing every sleep
 * and socket timeout of the server under test. The live layer still reads Effect's clock, so a
 * test that does use `TestClock` keeps one consistent notion of time.
 */
import { Context, Effect, Clock as EffectClock, Layer, Ref } from "effect"

/** The operations of the Clock port. */
export interface ClockService {
  /** Current time in whole milliseconds since the Unix epoch. */
  readonly now: () => Effect.Effect<number>
}

/** The Clock port. */
export class Clock extends Context.Tag("@plugboard/core/Clock")<Clock, ClockService>() {}

/** The live clock: Effect's clock (system time, or `TestClock` under `TestContext`). */
export const layer: Layer.Layer<Clock> = Layer.succeed(Clock, {
  now: () => EffectClock.currentTimeMillis
})

/** A clock whose time only moves when a test moves it. */
export interface TestClockService extends ClockService {
  /** Moves time forward by `millis` (a non-negative integer). */
  readonly advance: (millis: number) => Effect.Effect<void>
  /** Sets the time to `millis`; time never goes backwards, so an earlier value is refused. */
  readonly set: (millis: number) => Effect.Effect<void>
}

/** The control handle of `layerTest`: advance or set the test clock. */
export class TestControl extends Context.Tag("@plugboard/core/Clock/TestControl")<
  TestControl,
  TestClockService
>() {}

const checkMillis = (what: string, millis: number): Effect.Effect<void> =>
  Number.isSafeInteger(millis) && millis >= 0
    ? Effect.void
    : Effect.die(
        new RangeError(`Clock.${what} expects a non-negative integer of milliseconds, got ${millis}`)
      )

/**
 * Builds a test clock starting at `startMillis` (default 0). Moving it backwards or by a
 * negative/non-integer amount is a bug in the test, so it dies with a `RangeError`.
 */
export const makeTest = (startMillis = 0): Effect.Effect<TestClockService> =>
  Effect.gen(function* () {
    yield* checkMillis("makeTest", startMillis)
    const time = yield* Ref.make(startMillis)
    return {
      now: () => Ref.get(time),
      advance: (millis) =>
        checkMillis("advance", millis).pipe(Effect.zipRight(Ref.update(time, (t) => t + millis))),
      set: (millis) =>
        checkMillis("set", millis).pipe(
          Effect.zipRight(Ref.get(time)),
          Effect.flatMap((current) =>
            millis < current
              ? Effect.die(new RangeError(`Clock.set cannot move time backwards (${current} → ${millis})`))
              : Ref.set(time, millis)
          )
        )
    }
  })

/** Provides `Clock` and its `TestControl` from one shared test clock. */
export const layerTest = (startMillis = 0): Layer.Layer<Clock | TestControl> =>
  Layer.effectContext(
    Effect.map(makeTest(startMillis), (clock) =>
      Context.make(TestControl, clock).pipe(Context.add(Clock, clock))
    )
  )
