/**
 * The Redis turn lock: the TurnLock conformance suite, and the facts the issue needs of it
 * across hosts: one holder at a time, and a holder whose lease lapsed is refused by fencing.
 */
import { Clock, TurnLock } from "@plugboard/core"
import { TurnLockConformance } from "@plugboard/testing"
import { Effect, Exit, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerConnection, layerTurnLock, makeConnection, makeTurnLock } from "../src/index.js"
import { connection, deleteKeys, freshPrefix, REDIS_URL, SKIP_REASON } from "./helpers.js"

const KEY = "did:key:z6MkAlice/session-1"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(REDIS_URL === undefined)(
  REDIS_URL === undefined ? `Redis TurnLock: ${SKIP_REASON}` : "Redis TurnLock",
  () => {
    afterAll(deleteKeys)

    TurnLockConformance.run("redis", () =>
      layerTurnLock().pipe(
        Layer.provide(Layer.orDie(layerConnection({ url: REDIS_URL!, prefix: freshPrefix() })))
      )
    )

    describe("Redis TurnLock across hosts", () => {
      // Two hosts on one Redis, on a test clock each host reads (a shared wall clock, moved by hand).
      const twoHosts = Effect.gen(function* () {
        const prefix = freshPrefix()
        const clock = yield* Clock.makeTest(Date.UTC(2025, 0, 1))
        const make = Effect.flatMap(connection(prefix), (r) => makeTurnLock(r)).pipe(
          Effect.provideService(Clock.Clock, clock)
        )
        return { a: yield* make, b: yield* make, clock }
      })

      it("a lapsed lock's late holder is refused by fencing: it cannot refresh, release or pass isCurrent", () =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const { a, b, clock } = yield* twoHosts
              const dead = yield* a.acquire(KEY, { ttlMs: 30_000 })
              yield* Effect.exit(b.acquire(KEY, { ttlMs: 30_000, waitMs: 0 })).pipe(
                Effect.map((exit) => expect(Exit.isFailure(exit)).toBe(true))
              )
              // Host A stalls past its lease; host B takes the session.
              yield* clock.advance(30_000)
              const next = yield* b.acquire(KEY, { ttlMs: 30_000, waitMs: 0 })
              expect(next.token).toBeGreaterThan(dead.token)
              // A wakes up: every check with its old token says no, and nothing it does frees B's lock.
              expect(yield* a.isCurrent(KEY, dead.token)).toBe(false)
              const refresh = yield* Effect.exit(a.refresh(KEY, dead.token, 30_000))
              expect(
                Exit.isFailure(refresh) && refresh.cause._tag === "Fail" && refresh.cause.error.reason
              ).toBe("lost")
              expect(yield* dead.release).toBe(false)
              expect(yield* a.isCurrent(KEY, next.token)).toBe(true)
              expect(yield* b.isCurrent(KEY, next.token)).toBe(true)
            })
          )
        ))

      it("20 turns raced over two hosts run one at a time, with rising tokens", () =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const { a, b } = yield* twoHosts
              let inside = 0
              let most = 0
              const tokens: Array<number> = []
              yield* Effect.all(
                Array.from({ length: 20 }, (_, i) =>
                  Effect.gen(function* () {
                    const lock = i % 2 === 0 ? a : b
                    const lease = yield* lock.acquire(KEY, { ttlMs: 60_000 })
                    inside++
                    most = Math.max(most, inside)
                    tokens.push(lease.token)
                    yield* Effect.sleep("2 millis")
                    inside--
                    expect(yield* lease.release).toBe(true)
                  })
                ),
                { concurrency: "unbounded" }
              )
              expect(most).toBe(1)
              expect(tokens).toEqual([...tokens].sort((x, y) => x - y))
            })
          )
        ))

      it("with serverTime a lease lapses on Redis's clock", () =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const lock = yield* Effect.flatMap(connection(), (r) =>
                makeTurnLock(r, { serverTime: true })
              ).pipe(Effect.provide(Clock.layer))
              const lease = yield* lock.acquire(KEY, { ttlMs: 150 })
              expect(yield* lock.isCurrent(KEY, lease.token)).toBe(true)
              yield* Effect.sleep("200 millis")
              expect(yield* lock.isCurrent(KEY, lease.token)).toBe(false)
              const next = yield* lock.acquire(KEY, { ttlMs: 150, waitMs: 0 })
              expect(next.token).toBeGreaterThan(lease.token)
            })
          )
        ))

      it("a dead server is Unavailable within the command timeout, without the password", async () => {
        const secret = "lock-Secret-77"
        const started = Date.now()
        const exit = await Effect.runPromiseExit(
          Effect.scoped(
            Effect.gen(function* () {
              const redis = yield* makeConnection({
                url: `redis://:${secret}@127.0.0.1:1`,
                prefix: freshPrefix()
              })
              const lock = yield* makeTurnLock(redis)
              return yield* lock.acquire(KEY, { ttlMs: 1000 })
            })
          ).pipe(Effect.provide(Clock.layer))
        )
        expect(Date.now() - started).toBeLessThan(3000)
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        expect(error).toBeInstanceOf(TurnLock.TurnLockError)
        expect((error as TurnLock.TurnLockError).reason).toBe("unavailable")
        expect((error as TurnLock.TurnLockError).message).toContain("ECONNREFUSED")
        expect(JSON.stringify(error)).not.toContain(secret)
      })
    })
  }
)
