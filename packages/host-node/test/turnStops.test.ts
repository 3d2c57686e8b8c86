/**
 * TurnStops (README "Choosing a deployment"): abort and delete go through the TurnControl port to
 * every host's turns; on one process (the port's memory control) that is this host's registry,
 * and when the port's engine cannot be reached they fall back to this host's turns, with a
 * warning. Across real hosts: manyHosts.serve.test.ts.
 */
import { TurnControl } from "@plugboard/core"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { TurnRegistry } from "../src/TurnRegistry.js"
import * as TurnStops from "../src/TurnStops.js"
import type { TurnOutcome } from "../src/Turns.js"
import { recordingLogger } from "./helpers.js"

const DID = "did:key:z6MkStops"
const timings = { load: 0, save: 0, agent: 0 }

/** A turn that ends (after `cleanupMs`) once its signal aborts, saying why. */
const turn =
  (cleanupMs = 0) =>
  (signal: AbortSignal) =>
    new Promise<TurnOutcome>((resolve) =>
      signal.addEventListener(
        "abort",
        () => setTimeout(() => resolve({ status: "aborted", timings }), cleanupMs),
        { once: true }
      )
    )

const down = new TurnControl.TurnControlError({ reason: "unavailable", message: "redis is down" })
const unreachable: TurnControl.TurnControlService = {
  serve: () => Effect.fail(down),
  stop: () => Effect.fail(down)
}

describe("TurnStops", () => {
  it("on the memory control: abort finds the session's turn once, and the other session's never", async () => {
    const registry = new TurnRegistry()
    const stops = await TurnStops.connect(registry, TurnControl.makeMemory(), recordingLogger().logger)
    const running = registry.start(DID, "s1", turn())
    expect(await stops.abort(DID, "s2")).toBe(false)
    expect(await stops.abort(DID, "s1")).toBe(true)
    expect(running.controller.signal.reason).toBe("user")
    await running.done
    expect(await stops.abort(DID, "s1")).toBe(false)
    await stops.close()
  })

  it("on the memory control: a delete waits for the turn to end, and says when it did not in time", async () => {
    const registry = new TurnRegistry()
    const stops = await TurnStops.connect(registry, TurnControl.makeMemory(), recordingLogger().logger)
    const quick = registry.start(DID, "s1", turn(20))
    expect(await stops.stop(DID, "s1", 1_000)).toBe(true)
    expect(quick.controller.signal.reason).toBe("deleted")
    registry.start(DID, "s2", turn(2_000))
    expect(await stops.stop(DID, "s2", 100)).toBe(false)
    expect(await stops.stop(DID, "nothing", 100)).toBe(true)
    await stops.close()
  })

  it("an engine that cannot be reached: abort and delete reach this host's turns, with a warning", async () => {
    const { records, logger } = recordingLogger()
    const registry = new TurnRegistry()
    const stops = await TurnStops.connect(registry, unreachable, logger)
    const first = registry.start(DID, "s1", turn())
    expect(await stops.abort(DID, "s1")).toBe(true)
    expect(first.controller.signal.reason).toBe("user")
    registry.start(DID, "s2", turn(10))
    expect(await stops.stop(DID, "s2", 1_000)).toBe(true)
    const warnings = records.filter((r) => r.level === "warn").map((r) => r.message)
    expect(warnings).toContainEqual(expect.stringContaining("turn control could not be served"))
    expect(warnings).toContainEqual(expect.stringContaining("abort reaches this host's turns only"))
    expect(warnings).toContainEqual(expect.stringContaining("delete reaches this host's turns only"))
    await stops.close()
  })
})
