import { ReplayGuardConformance } from "@plugboard/testing"
import { Effect } from "effect"
import * as Clock from "../src/Clock.js"
import * as ReplayGuard from "../src/ReplayGuard.js"

ReplayGuardConformance.run("memory", () =>
  Effect.gen(function* () {
    const clock = yield* Clock.makeTest(1_700_000_000_000)
    const guard = yield* ReplayGuard.makeMemory.pipe(Effect.provideService(Clock.Clock, clock))
    return { guard, now: clock.now, advance: clock.advance }
  })
)
