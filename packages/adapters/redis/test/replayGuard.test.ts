/**
 * The Redis replay guard: the ReplayGuard conformance suite, and the fact a replay across hosts
 * needs: a credential used on one host is a replay on the other.
 */
import { Clock } from "@plugboard/core"
import { ReplayGuardConformance } from "@plugboard/testing"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { makeReplayGuard } from "../src/index.js"
import { connection, deleteKeys, freshPrefix, REDIS_URL, SKIP_REASON } from "./helpers.js"

describe.skipIf(REDIS_URL === undefined)(
  `Redis ReplayGuard${REDIS_URL === undefined ? `: ${SKIP_REASON}` : ""}`,
  () => {
    afterAll(deleteKeys)

    ReplayGuardConformance.run("redis", () =>
      Effect.gen(function* () {
        const clock = yield* Clock.makeTest(Date.UTC(2025, 0, 1))
        const guard = yield* Effect.flatMap(connection(), (redis) => makeReplayGuard(redis)).pipe(
          Effect.provideService(Clock.Clock, clock)
        )
        return { guard, now: clock.now, advance: clock.advance }
      })
    )

    it("a token used on one host is a replay on another; on Redis's own clock too", () =>
      Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            for (const serverTime of [false, true]) {
              const prefix = freshPrefix()
              const make = Effect.flatMap(connection(prefix), (redis) =>
                makeReplayGuard(redis, { serverTime })
              ).pipe(Effect.provideService(Clock.Clock, { now: () => Effect.sync(() => Date.now()) }))
              const [a, b] = [yield* make, yield* make]
              const until = Date.now() + 60_000
              expect(yield* a.firstUse("token", until)).toBe(true)
              expect(yield* b.firstUse("token", until)).toBe(false)
              expect(yield* a.firstUse("token", until)).toBe(false)
              expect(yield* b.firstUse("other", until)).toBe(true)
            }
          })
        )
      ))
  }
)
