/**
 * The shared conformance suite of the `TurnLock` port: the in-memory lock in core now, a Redis
 * lock later. At the top level of a test file:
 *
 * ```ts
 * TurnLockConformance.run("memory", () => TurnLock.layerMemory)
 * ```
 *
 * The factory is called once per test (and per property run) and must return a fresh lock whose
 * keys are all free; its layer may be scoped. TTLs and waits are measured on the `Clock` port's
 * test clock, which the suite provides and moves; a waiter must notice a moved clock by itself
 * (an implementation re-checks on a short real-time poll), so these tests take real milliseconds.
 */
import { Clock, TurnLock as TL } from "@plugboard/core"
import { Effect, Exit, Fiber, Layer } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const T0 = Date.UTC(2025, 0, 1)
const KEY = "did:key:z6MkAlice/session-1"
const OTHER = "did:key:z6MkBob/session-1"

type Env = TL.TurnLock | Clock.Clock | Clock.TestControl

/** Builds the lock under test from the suite's `Clock`; called once per test. */
export type TurnLockFactory = () => Layer.Layer<TL.TurnLock, unknown, Clock.Clock>

/** Options of the suite. */
export interface TurnLockConformanceOptions {
  /** fast-check runs of each property (default 40). */
  readonly numRuns?: number
}

const runWith = <A>(factory: TurnLockFactory, program: Effect.Effect<A, unknown, Env>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.provide(program, Layer.provideMerge(factory(), Clock.layerTest(T0))) as Effect.Effect<A, unknown>
    )
  )

const lock = TL.TurnLock
const advance = (ms: number) => Effect.flatMap(Clock.TestControl, (c) => c.advance(ms))

const reasonOf = <A, E extends { reason: string }>(exit: Exit.Exit<A, E>): string =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? exit.cause.error.reason
    : `no typed failure: ${exit._tag}`

const expectReason = <A, R>(effect: Effect.Effect<A, TL.TurnLockError, R>, reason: TL.TurnLockErrorReason) =>
  Effect.map(Effect.exit(effect), (exit) => expect(reasonOf(exit)).toBe(reason))

/** Waits (real time) until `fiber` is done, failing the test after `ms`. */
const joinWithin = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, ms = 5000) =>
  Effect.flatMap(
    Effect.timeoutFail(Fiber.await(fiber), {
      duration: ms,
      onTimeout: () => new Error(`not done within ${ms} ms`)
    }),
    (exit) => Effect.succeed(exit)
  )

/** Registers the TurnLock conformance suite under `name` (vitest `describe`/`it`). */
export const run = (
  name: string,
  factory: TurnLockFactory,
  options: TurnLockConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 40
  const test = (title: string, program: Effect.Effect<void, unknown, Env>) =>
    it(title, () => runWith(factory, program))

  describe(`TurnLock conformance: ${name}`, () => {
    test(
      "acquire, isCurrent, release; releasing twice is harmless",
      Effect.gen(function* () {
        const l = yield* lock
        const lease = yield* l.acquire(KEY, { ttlMs: 1000 })
        expect(lease.key).toBe(KEY)
        expect(lease.token).toBeGreaterThan(0)
        expect(yield* l.isCurrent(KEY, lease.token)).toBe(true)
        expect(yield* l.isCurrent(OTHER, lease.token)).toBe(false)
        expect(yield* lease.release).toBe(true)
        expect(yield* l.isCurrent(KEY, lease.token)).toBe(false)
        expect(yield* lease.release).toBe(false)
        expect(yield* l.release(KEY, lease.token)).toBe(false)
        const next = yield* l.acquire(KEY, { ttlMs: 1000, waitMs: 0 })
        expect(next.token).toBeGreaterThan(lease.token)
      })
    )

    test(
      "a held key is Busy for waitMs 0; other keys are independent",
      Effect.gen(function* () {
        const l = yield* lock
        const held = yield* l.acquire(KEY, { ttlMs: 1000 })
        yield* expectReason(l.acquire(KEY, { ttlMs: 1000, waitMs: 0 }), "busy")
        const other = yield* l.acquire(OTHER, { ttlMs: 1000, waitMs: 0 })
        expect(yield* l.isCurrent(KEY, held.token)).toBe(true)
        expect(yield* l.isCurrent(OTHER, other.token)).toBe(true)
        // A release with someone else's token does nothing.
        expect(yield* l.release(KEY, other.token)).toBe(false)
        expect(yield* l.isCurrent(KEY, held.token)).toBe(true)
      })
    )

    test(
      "a waiter gets the lock when the holder releases, with a greater token",
      Effect.gen(function* () {
        const l = yield* lock
        const held = yield* l.acquire(KEY, { ttlMs: 60_000 })
        const waiter = yield* Effect.fork(l.acquire(KEY, { ttlMs: 60_000 }))
        yield* Effect.sleep(30)
        expect(waiter.unsafePoll()).toBeNull()
        yield* held.release
        const exit = yield* joinWithin(waiter)
        expect(Exit.isSuccess(exit)).toBe(true)
        const lease = Exit.isSuccess(exit) ? exit.value : undefined
        expect(lease!.token).toBeGreaterThan(held.token)
        expect(yield* l.isCurrent(KEY, lease!.token)).toBe(true)
      })
    )

    test(
      "a lease lapses ttlMs after it was taken: the old token is no longer current and cannot refresh",
      Effect.gen(function* () {
        const l = yield* lock
        const dead = yield* l.acquire(KEY, { ttlMs: 1000 })
        yield* advance(999)
        expect(yield* l.isCurrent(KEY, dead.token)).toBe(true)
        yield* expectReason(l.acquire(KEY, { ttlMs: 1000, waitMs: 0 }), "busy")
        yield* advance(1)
        expect(yield* l.isCurrent(KEY, dead.token)).toBe(false)
        yield* expectReason(l.refresh(KEY, dead.token, 1000), "lost")
        const next = yield* l.acquire(KEY, { ttlMs: 1000, waitMs: 0 })
        expect(next.token).toBeGreaterThan(dead.token)
        // The late holder's release cannot free the new holder's lock.
        expect(yield* dead.release).toBe(false)
        expect(yield* l.isCurrent(KEY, next.token)).toBe(true)
      })
    )

    test(
      "refresh extends the lease from now",
      Effect.gen(function* () {
        const l = yield* lock
        const lease = yield* l.acquire(KEY, { ttlMs: 1000 })
        yield* advance(900)
        yield* l.refresh(KEY, lease.token, 1000)
        yield* advance(900)
        expect(yield* l.isCurrent(KEY, lease.token)).toBe(true)
        yield* advance(100)
        expect(yield* l.isCurrent(KEY, lease.token)).toBe(false)
        yield* expectReason(l.refresh(KEY, lease.token, 1000), "lost")
        yield* expectReason(l.refresh(OTHER, lease.token, 1000), "lost")
      })
    )

    test(
      "a waiter takes over when the holder's lease lapses",
      Effect.gen(function* () {
        const l = yield* lock
        const dead = yield* l.acquire(KEY, { ttlMs: 5000 })
        const waiter = yield* Effect.fork(l.acquire(KEY, { ttlMs: 5000 }))
        yield* Effect.sleep(30)
        expect(waiter.unsafePoll()).toBeNull()
        yield* advance(5000)
        const exit = yield* joinWithin(waiter)
        expect(Exit.isSuccess(exit) && exit.value.token > dead.token).toBe(true)
        expect(yield* l.isCurrent(KEY, dead.token)).toBe(false)
      })
    )

    test(
      "a wait ends Busy after waitMs on the Clock",
      Effect.gen(function* () {
        const l = yield* lock
        yield* l.acquire(KEY, { ttlMs: 60_000 })
        const waiter = yield* Effect.fork(l.acquire(KEY, { ttlMs: 1000, waitMs: 500 }))
        yield* Effect.sleep(30)
        expect(waiter.unsafePoll()).toBeNull()
        yield* advance(500)
        expect(reasonOf(yield* joinWithin(waiter))).toBe("busy")
      })
    )

    test(
      "an abort signal stops a wait with Aborted; an aborted signal takes nothing",
      Effect.gen(function* () {
        const l = yield* lock
        const held = yield* l.acquire(KEY, { ttlMs: 60_000 })
        const controller = new AbortController()
        const waiter = yield* Effect.fork(l.acquire(KEY, { ttlMs: 1000, signal: controller.signal }))
        yield* Effect.sleep(30)
        controller.abort()
        expect(reasonOf(yield* joinWithin(waiter))).toBe("aborted")
        yield* held.release
        yield* expectReason(l.acquire(KEY, { ttlMs: 1000, signal: controller.signal }), "aborted")
        yield* l.acquire(KEY, { ttlMs: 1000, waitMs: 0 })
      })
    )

    test(
      "an interrupted waiter leaves no holder behind",
      Effect.gen(function* () {
        const l = yield* lock
        const held = yield* l.acquire(KEY, { ttlMs: 60_000 })
        const waiter = yield* Effect.fork(l.acquire(KEY, { ttlMs: 60_000 }))
        yield* Effect.sleep(30)
        yield* Fiber.interrupt(waiter)
        yield* held.release
        const next = yield* l.acquire(KEY, { ttlMs: 1000, waitMs: 0 })
        expect(yield* l.isCurrent(KEY, next.token)).toBe(true)
      })
    )

    test(
      "acquireScoped releases when the scope closes",
      Effect.gen(function* () {
        const l = yield* lock
        const token = yield* Effect.scoped(
          Effect.map(TL.acquireScoped(l, KEY, { ttlMs: 60_000 }), (lease) => lease.token)
        )
        expect(yield* l.isCurrent(KEY, token)).toBe(false)
        yield* l.acquire(KEY, { ttlMs: 1000, waitMs: 0 })
      })
    )

    test(
      "bad input fails Invalid",
      Effect.gen(function* () {
        const l = yield* lock
        const bad: Array<Effect.Effect<unknown, TL.TurnLockError>> = [
          l.acquire("", { ttlMs: 1000 }),
          l.acquire("k".repeat(TL.MAX_KEY_LENGTH + 1), { ttlMs: 1000 }),
          l.acquire(KEY, { ttlMs: 0 }),
          l.acquire(KEY, { ttlMs: 1.5 }),
          l.acquire(KEY, { ttlMs: 1000, waitMs: -1 }),
          l.refresh(KEY, 0, 1000),
          l.refresh(KEY, 1, -5),
          l.isCurrent(KEY, 1.5),
          l.release("", 1)
        ]
        for (const effect of bad) yield* expectReason(effect, "invalid")
        yield* l.acquire(KEY, { ttlMs: 1000, waitMs: 0 })
      })
    )

    it("property: concurrent turns on a key never overlap, and tokens rise in the order they were granted", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ key: fc.constantFrom(KEY, OTHER), hold: fc.integer({ min: 0, max: 3 }) }), {
            minLength: 1,
            maxLength: 10
          }),
          (actors) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const l = yield* lock
                const inside = new Map<string, number>()
                const granted = new Map<string, Array<number>>()
                yield* Effect.all(
                  actors.map(({ key, hold }) =>
                    Effect.gen(function* () {
                      const lease = yield* l.acquire(key, { ttlMs: 60_000 })
                      expect(inside.get(key) ?? 0).toBe(0)
                      inside.set(key, 1)
                      granted.set(key, [...(granted.get(key) ?? []), lease.token])
                      for (let i = 0; i < hold; i++) yield* Effect.yieldNow()
                      expect(yield* l.isCurrent(key, lease.token)).toBe(true)
                      inside.set(key, 0)
                      expect(yield* lease.release).toBe(true)
                    })
                  ),
                  { concurrency: "unbounded" }
                )
                for (const tokens of granted.values()) {
                  expect(tokens).toEqual([...tokens].sort((a, b) => a - b))
                  expect(new Set(tokens).size).toBe(tokens.length)
                }
              })
            )
        ),
        { numRuns }
      ))

    it("property: against a model with lapses, at most one current holder, and tokens never repeat or fall", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              fc.record({
                kind: fc.constant("acquire" as const),
                key: fc.constantFrom(KEY, OTHER),
                ttl: fc.integer({ min: 1, max: 50 })
              }),
              fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }),
              fc.record({
                kind: fc.constant("refresh" as const),
                pick: fc.nat(),
                ttl: fc.integer({ min: 1, max: 50 })
              }),
              fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 40 }) })
            ),
            { maxLength: 40 }
          ),
          (ops) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const l = yield* lock
                let now = 0
                // The model: per key, the current holder's token and expiry.
                const holder = new Map<string, { token: number; expiresAt: number }>()
                const current = (key: string) => {
                  const h = holder.get(key)
                  return h !== undefined && h.expiresAt > now ? h : undefined
                }
                const leases: Array<TL.Lease> = []
                const lastToken = new Map<string, number>()
                for (const op of ops) {
                  if (op.kind === "advance") {
                    yield* advance(op.ms)
                    now += op.ms
                  } else if (op.kind === "acquire") {
                    const exit = yield* Effect.exit(l.acquire(op.key, { ttlMs: op.ttl, waitMs: 0 }))
                    if (current(op.key) !== undefined) {
                      expect(reasonOf(exit)).toBe("busy")
                    } else {
                      expect(Exit.isSuccess(exit)).toBe(true)
                      const lease = (exit as Exit.Success<TL.Lease, never>).value
                      expect(lease.token).toBeGreaterThan(lastToken.get(op.key) ?? 0)
                      lastToken.set(op.key, lease.token)
                      holder.set(op.key, { token: lease.token, expiresAt: now + op.ttl })
                      leases.push(lease)
                    }
                  } else if (leases.length > 0) {
                    const lease = leases[op.pick % leases.length]!
                    const isHolder = current(lease.key)?.token === lease.token
                    if (op.kind === "release") {
                      expect(yield* lease.release).toBe(isHolder)
                      if (isHolder) holder.delete(lease.key)
                    } else {
                      const exit = yield* Effect.exit(l.refresh(lease.key, lease.token, op.ttl))
                      if (isHolder) {
                        expect(Exit.isSuccess(exit)).toBe(true)
                        holder.set(lease.key, { token: lease.token, expiresAt: now + op.ttl })
                      } else {
                        expect(reasonOf(exit)).toBe("lost")
                      }
                    }
                  }
                  // Every lease ever granted: current exactly when the model says so — so at
                  // most one per key.
                  for (const lease of leases) {
                    expect(yield* l.isCurrent(lease.key, lease.token)).toBe(
                      current(lease.key)?.token === lease.token
                    )
                  }
                }
              })
            )
        ),
        { numRuns }
      ))
  })
}
