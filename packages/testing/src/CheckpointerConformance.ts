/**
 * The conformance suite of the `Checkpointer` port (resolution per user; the savers themselves
 * are checked by LangGraph's own checkpointer suite). The harness says how to store and read a
 * marker through a saver, so the suite can tell savers' state apart:
 *
 * ```ts
 * CheckpointerConformance.run("memory", () => Effect.map(Checkpointer.makeMemory(() => new Map()), (checkpointer) => ({
 *   checkpointer,
 *   put: (saver, value) => Effect.sync(() => void saver.set("k", value)),
 *   get: (saver) => Effect.sync(() => saver.get("k"))
 * })))
 * ```
 */
import type { Checkpointer } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import { acquire, type Factory, failureOf } from "./Factory.js"

/** A checkpointer under test and how to write/read a marker through one of its savers. */
export interface CheckpointerHarness<Saver> {
  readonly checkpointer: Checkpointer.CheckpointerService<Saver>
  readonly put: (saver: Saver, value: string) => Effect.Effect<void, unknown>
  readonly get: (saver: Saver) => Effect.Effect<string | undefined, unknown>
}

const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"

/** Registers the Checkpointer conformance suite for one implementation. */
export const run = <Saver>(name: string, factory: Factory<CheckpointerHarness<Saver>>): void => {
  const withHarness = <A>(body: (h: CheckpointerHarness<Saver>) => Effect.Effect<A, unknown, Scope.Scope>) =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(acquire(factory), body)))

  describe(`Checkpointer conformance: ${name}`, () => {
    it("every resolution of one user reaches the same state", () =>
      withHarness(({ checkpointer, put, get }) =>
        Effect.gen(function* () {
          yield* put(yield* checkpointer.forUser(ALICE), "alice-1")
          expect(yield* get(yield* checkpointer.forUser(ALICE))).toBe("alice-1")
          const concurrent = yield* Effect.all(
            Array.from({ length: 8 }, () => checkpointer.forUser(ALICE)),
            { concurrency: "unbounded" }
          )
          for (const saver of concurrent) expect(yield* get(saver)).toBe("alice-1")
        })
      ))

    it("users never share state", () =>
      withHarness(({ checkpointer, put, get }) =>
        Effect.gen(function* () {
          yield* put(yield* checkpointer.forUser(ALICE), "alice")
          const bob = yield* checkpointer.forUser(BOB)
          expect(yield* get(bob)).toBeUndefined()
          yield* put(bob, "bob")
          expect(yield* get(yield* checkpointer.forUser(ALICE))).toBe("alice")
        })
      ))

    it("refuses what is not a DID with 'invalid-did'", () =>
      withHarness(({ checkpointer }) =>
        Effect.gen(function* () {
          for (const did of [
            "",
            "alice",
            "did:key:",
            "../../etc/passwd",
            "did:key:a/../b",
            undefined
          ] as Array<string>) {
            const exit = yield* Effect.exit(checkpointer.forUser(did))
            expect(Exit.isFailure(exit), String(did)).toBe(true)
            const error = failureOf(exit) as Checkpointer.CheckpointerError | undefined
            expect(error?._tag).toBe("CheckpointerError")
            expect(error?.reason).toBe("invalid-did")
          }
        })
      ))
  })
}
