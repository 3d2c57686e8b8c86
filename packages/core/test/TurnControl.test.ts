/** The in-memory TurnControl: the port's conformance suite, processes standing on one hub. */
import { TurnControl } from "@plugboard/core"
import { TurnControlConformance } from "@plugboard/testing"
import { Effect } from "effect"

TurnControlConformance.run("memory", () =>
  Effect.sync(() => {
    const hub = TurnControl.makeHub()
    return Effect.sync(() => TurnControl.makeMemory(hub))
  })
)
