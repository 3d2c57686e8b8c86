import { CheckpointerConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as Checkpointer from "../src/Checkpointer.js"

type Saver = Map<string, string>

const harness = (checkpointer: Checkpointer.CheckpointerService<Saver>) => ({
  checkpointer,
  put: (saver: Saver, value: string) => Effect.sync(() => void saver.set("marker", value)),
  get: (saver: Saver) => Effect.sync(() => saver.get("marker"))
})

CheckpointerConformance.run("memory", () =>
  Effect.map(
    Checkpointer.makeMemory<Saver>(() => new Map()),
    harness
  )
)

// The host override in front of the default must itself be a conforming checkpointer.
CheckpointerConformance.run("memory with a host override for some users", () =>
  Effect.gen(function* () {
    const base = yield* Checkpointer.makeMemory<Saver>(() => new Map())
    const special = new Map<string, Saver>()
    const hook = async (did: string) => {
      if (!did.endsWith("Alice")) return undefined
      if (!special.has(did)) special.set(did, new Map())
      return special.get(did)
    }
    return harness(Checkpointer.withOverride(base, hook))
  })
)

const reasonOf = (exit: Exit.Exit<unknown, Checkpointer.CheckpointerError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : undefined

describe("Checkpointer", () => {
  it("an override is used for its user only; others get the default", async () => {
    const [alice, bob, defaultBob] = await Effect.gen(function* () {
      const base = yield* Checkpointer.makeMemory<Saver>(() => new Map([["origin", "default"]]))
      const overridden = new Map([["origin", "host"]])
      const cp = Checkpointer.withOverride(base, (did) => (did === "did:key:alice" ? overridden : null))
      return [
        (yield* cp.forUser("did:key:alice")).get("origin"),
        yield* cp.forUser("did:key:bob"),
        yield* base.forUser("did:key:bob")
      ] as const
    }).pipe(Effect.runPromise)
    expect(alice).toBe("host")
    expect(bob.get("origin")).toBe("default")
    expect(bob).toBe(defaultBob)
  })

  it("a failing override is an error, never a silent fallback", async () => {
    const base = await Effect.runPromise(Checkpointer.makeMemory<Saver>(() => new Map()))
    const throwing = Checkpointer.withOverride<Saver>(base, () => {
      throw new Error("db down")
    })
    const rejecting = Checkpointer.withOverride<Saver>(base, () => Promise.reject(new Error("db down")))
    for (const cp of [throwing, rejecting]) {
      const exit = await Effect.runPromiseExit(cp.forUser("did:key:alice"))
      expect(reasonOf(exit)).toBe("override-failed")
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain("db down")
    }
  })

  it("a saver that cannot be created fails 'unavailable' and is retried next time", async () => {
    let attempts = 0
    const cp = await Effect.runPromise(
      Checkpointer.makeMemory<Saver>(() => {
        attempts++
        if (attempts === 1) throw new Error("disk full")
        return new Map()
      })
    )
    expect(reasonOf(await Effect.runPromiseExit(cp.forUser("did:key:alice")))).toBe("unavailable")
    expect(Exit.isSuccess(await Effect.runPromiseExit(cp.forUser("did:key:alice")))).toBe(true)
  })

  it("layerMemory serves the port; typed() reads it with the saver type", async () => {
    const saver = await Effect.gen(function* () {
      const cp = yield* Checkpointer.typed<Saver>()
      return yield* cp.forUser("did:key:alice")
    }).pipe(Effect.provide(Checkpointer.layerMemory<Saver>(() => new Map([["k", "v"]]))), Effect.runPromise)
    expect(saver.get("k")).toBe("v")
  })
})
