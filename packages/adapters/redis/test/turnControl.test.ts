/**
 * The Redis turn control: the TurnControl conformance suite, each simulated process on its own
 * connection under one key prefix (as hosts sharing `REDIS_PREFIX`), and a prefix apart from it.
 */
import { TurnControlConformance } from "@plugboard/testing"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { makeTurnControl } from "../src/index.js"
import { connection, deleteKeys, freshPrefix, REDIS_URL, SKIP_REASON } from "./helpers.js"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(REDIS_URL === undefined)(
  REDIS_URL === undefined ? `Redis TurnControl: ${SKIP_REASON}` : "Redis TurnControl",
  () => {
    afterAll(deleteKeys)

    TurnControlConformance.run("redis", () =>
      Effect.sync(() => {
        const prefix = freshPrefix()
        return Effect.flatMap(connection(prefix), makeTurnControl)
      })
    )

    describe("Redis TurnControl", () => {
      it("hosts under another REDIS_PREFIX are not asked", () =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const a = yield* Effect.flatMap(connection(), makeTurnControl)
              const b = yield* Effect.flatMap(connection(), makeTurnControl)
              let asked = 0
              yield* a.serve(async () => {
                asked++
                return { found: true, ended: true }
              })
              const result = yield* b.stop({
                did: "did:key:z6MkA",
                sessionId: "s",
                reason: "user",
                waitMs: 0
              })
              expect(result).toEqual({ found: false, ended: true })
              expect(asked).toBe(0)
            })
          )
        ))
    })
  }
)
