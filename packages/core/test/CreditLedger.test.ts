import { CreditLedgerConformance } from "@plugboard/testing"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as CreditLedger from "../src/CreditLedger.js"

CreditLedgerConformance.run("memory", () =>
  Effect.flatMap(Clock.makeTest(1_700_000_000_000), (clock) =>
    Effect.map(CreditLedger.makeMemory.pipe(Effect.provideService(Clock.Clock, clock)), (ledger) => ({
      ledger,
      clock
    }))
  )
)

describe("CreditLedger memory", () => {
  it("stamps entries with the Clock port's time", async () => {
    const at = await Effect.gen(function* () {
      const control = yield* Clock.TestControl
      const ledger = yield* CreditLedger.CreditLedger
      yield* control.set(1_700_000_000_000)
      const first = yield* ledger.topUp("did:key:z6MkA", 1)
      yield* control.advance(5)
      const second = yield* ledger.deduct("did:key:z6MkA", 1)
      return [first.entry.at, second.entry.at]
    }).pipe(Effect.provide(CreditLedger.layerMemory), Effect.provide(Clock.layerTest()), Effect.runPromise)
    expect(at).toEqual([1_700_000_000_000, 1_700_000_000_005])
  })
})
