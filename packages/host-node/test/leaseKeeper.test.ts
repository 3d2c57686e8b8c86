/**
 * The lease keeper (`LeaseKeeper.ts`): a kept lease outlives its length however long its holder
 * works, a lease let go lapses, and nothing is refreshed once the keeper's scope closed. On the
 * in-memory TurnLock, on the test clock.
 */
import { Clock, TurnLock } from "@plugboard/core"
import { Effect, Exit, Scope, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import * as LeaseKeeper from "../src/LeaseKeeper.js"

const TTL = 300

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(TestContext.TestContext)))

const lockOnTestClock = Effect.provide(TurnLock.makeMemory(), Clock.layer)

/** Whether another holder could take `key` now (taking it and giving it back). */
const free = (lock: TurnLock.TurnLockService, key: string) =>
  lock.acquire(key, { ttlMs: TTL, waitMs: 0 }).pipe(
    Effect.flatMap((lease) => Effect.as(lease.release, true)),
    Effect.catchIf(
      (e) => e.reason === "busy",
      () => Effect.succeed(false)
    )
  )

describe("LeaseKeeper", () => {
  it("keeps a lease held for many times its length, and lets it lapse once let go", () =>
    run(
      Effect.gen(function* () {
        const lock = yield* lockOnTestClock
        const keeper = yield* LeaseKeeper.make(lock, TTL)
        const lease = yield* lock.acquire("session", { ttlMs: TTL, waitMs: 0 })
        const letGo = keeper.keep("session", lease.token)
        for (let step = 0; step < 20; step++) {
          yield* TestClock.adjust(TTL / 3)
          expect(yield* free(lock, "session")).toBe(false)
        }
        letGo()
        letGo() // idempotent
        yield* TestClock.adjust(TTL)
        expect(yield* free(lock, "session")).toBe(true)
      })
    ))

  it("refreshes every lease it keeps, each until its own release", () =>
    run(
      Effect.gen(function* () {
        const lock = yield* lockOnTestClock
        const keeper = yield* LeaseKeeper.make(lock, TTL)
        const a = yield* lock.acquire("a", { ttlMs: TTL, waitMs: 0 })
        yield* TestClock.adjust(TTL / 2)
        const b = yield* lock.acquire("b", { ttlMs: TTL, waitMs: 0 })
        const letGoA = keeper.keep("a", a.token)
        keeper.keep("b", b.token)
        yield* TestClock.adjust(2 * TTL)
        expect([yield* free(lock, "a"), yield* free(lock, "b")]).toEqual([false, false])
        letGoA()
        yield* TestClock.adjust(2 * TTL)
        expect([yield* free(lock, "a"), yield* free(lock, "b")]).toEqual([true, false])
      })
    ))

  it("refreshes nothing once its scope is closed", () =>
    run(
      Effect.gen(function* () {
        const lock = yield* lockOnTestClock
        const scope = yield* Scope.make()
        const keeper = yield* Scope.extend(LeaseKeeper.make(lock, TTL), scope)
        const lease = yield* lock.acquire("session", { ttlMs: TTL, waitMs: 0 })
        keeper.keep("session", lease.token)
        yield* TestClock.adjust(TTL)
        expect(yield* free(lock, "session")).toBe(false)
        yield* Scope.close(scope, Exit.void)
        yield* TestClock.adjust(2 * TTL)
        expect(yield* free(lock, "session")).toBe(true)
      })
    ))

  it("ignores a refresh that fails (a lease taken over) and keeps refreshing the others", () =>
    run(
      Effect.gen(function* () {
        const lock = yield* lockOnTestClock
        const keeper = yield* LeaseKeeper.make(lock, TTL)
        const a = yield* lock.acquire("a", { ttlMs: TTL, waitMs: 0 })
        const b = yield* lock.acquire("b", { ttlMs: TTL, waitMs: 0 })
        keeper.keep("a", a.token)
        keeper.keep("b", b.token)
        // a's lease is given back behind the keeper's back: its refreshes now fail `lost`.
        yield* a.release
        yield* TestClock.adjust(3 * TTL)
        expect([yield* free(lock, "a"), yield* free(lock, "b")]).toEqual([true, false])
      })
    ))
})
