/**
 * Aborts and deletes across hosts (docs/architecture.md "One exclusion mechanism"): the turn
 * service sends them through the TurnControl port to every host's abort map; when the port's
 * engine cannot be reached they fall back to this host's turns, with a warning. Across real
 * hosts: manyHosts.serve.test.ts; on one host with real turns: turnRaces.test.ts.
 */
import { TurnControl } from "@plugboard/core"
import { Effect, Exit, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { TurnEnds } from "../src/TurnEnds.js"
import * as TurnService from "../src/TurnService.js"
import { recordingLogger } from "./helpers.js"

const DID = "did:key:z6MkStops"

const down = new TurnControl.TurnControlError({ reason: "unavailable", message: "redis is down" })
const unreachable: TurnControl.TurnControlService = {
  serve: () => Effect.fail(down),
  stop: () => Effect.fail(down)
}

/** A service with nothing behind its turns: only its abort and stop paths are used here. */
const serviceOn = (
  control: TurnControl.TurnControlService,
  logger: ReturnType<typeof recordingLogger>["logger"]
) => {
  const scope = Effect.runSync(Scope.make())
  const unused = () => {
    throw new Error("not used by these tests")
  }
  const service = Effect.runSync(
    Scope.extend(
      TurnService.make({
        catalog: unused as never,
        model: unused as never,
        shared: {},
        logger,
        around: (_did, run) => run(),
        oracleDid: "did:key:z6MkOracle",
        oracleName: "test",
        ports: {
          sessions: unused as never,
          runs: unused as never,
          turnLock: unused as never,
          turnControl: control,
          saverFor: unused as never
        },
        turnLockTtlMs: 60_000,
        turnEnds: new TurnEnds()
      }),
      scope
    )
  )
  return { service, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("TurnService aborts and stops", () => {
  it("on the memory control: nothing running answers false to an abort and true to a stop", async () => {
    const { service, close } = serviceOn(TurnControl.makeMemory(), recordingLogger().logger)
    expect(await Effect.runPromise(service.abort(DID, "s1"))).toBe(false)
    expect(await Effect.runPromise(service.stop(DID, "s1", 100))).toBe(true)
    await close()
  })

  it("an engine that cannot be reached: abort and delete reach this host's turns, with a warning", async () => {
    const { records, logger } = recordingLogger()
    const { service, close } = serviceOn(unreachable, logger)
    expect(await Effect.runPromise(service.abort(DID, "s1"))).toBe(false)
    expect(await Effect.runPromise(service.stop(DID, "s2", 1_000))).toBe(true)
    const warnings = records.filter((r) => r.level === "warn").map((r) => r.message)
    expect(warnings).toContainEqual(expect.stringContaining("turn control could not be served"))
    expect(warnings).toContainEqual(expect.stringContaining("abort reaches this host's turns only"))
    expect(warnings).toContainEqual(expect.stringContaining("delete reaches this host's turns only"))
    await close()
  })
})
