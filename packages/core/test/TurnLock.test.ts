import { TurnLockConformance } from "@plugboard/testing"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as TurnLock from "../src/TurnLock.js"

TurnLockConformance.run("memory", () => TurnLock.layerMemory)

describe("TurnLock memory", () => {
  it("draws tokens from one counter, so a released key's next token is still greater", async () => {
    const tokens = await Effect.gen(function* () {
      const lock = yield* TurnLock.makeMemory()
      const out: Array<number> = []
      for (const key of ["a", "b", "a", "a", "b"]) {
        const lease = yield* lock.acquire(key, { ttlMs: 1000, waitMs: 0 })
        out.push(lease.token)
        yield* lease.release
      }
      return out
    }).pipe(Effect.provide(Clock.layer), Effect.runPromise)
    expect(tokens).toEqual([1, 2, 3, 4, 5])
  })
})
