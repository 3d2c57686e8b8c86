/**
 * The shared conformance suite of the `LoadedPluginsStore` port: the in-memory store in core, the
 * SQLite store in `@plugboard/sqlite`. At the top level of a test file:
 *
 * ```ts
 * LoadedPluginsStoreConformance.run("memory", () => LoadedPluginsStore.layerMemory)
 * ```
 *
 * The factory is called once per test (and per property run) and must return a fresh, empty
 * store; its layer may be scoped. What it checks is the set's laws (docs/spec/loaded-plugins.md):
 * `add` is the union, first-load order is kept, nothing is ever removed, keys are independent,
 * concurrent adds all survive, and bad input is refused before anything is stored.
 */
import { LoadedPlugins, LoadedPluginsStore as Store } from "@plugboard/core"
import { Effect, Exit, type Layer } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** Builds the store under test; called once per test. */
export type LoadedPluginsStoreFactory = () => Layer.Layer<Store.LoadedPluginsStore, unknown>

/** Options of the suite. */
export interface LoadedPluginsStoreConformanceOptions {
  /** fast-check runs of each property (default 40). */
  readonly numRuns?: number
}

const runWith = <A>(
  factory: LoadedPluginsStoreFactory,
  program: Effect.Effect<A, unknown, Store.LoadedPluginsStore>
): Promise<A> =>
  Effect.runPromise(Effect.scoped(Effect.provide(program, factory())) as Effect.Effect<A, unknown>)

const store = Store.LoadedPluginsStore
const PLUGINS = ["weather", "maps", "notes", "github", "memory", "crm"] as const
const KEYS = ["thread-a", "thread-b", "user:42.x", "c"] as const

const reasonOf = <A>(exit: Exit.Exit<A, Store.LoadedPluginsStoreError>): string =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? exit.cause.error.reason
    : `no typed failure: ${exit._tag}`

/** Registers the LoadedPluginsStore conformance suite under `name` (vitest `describe`/`it`). */
export const run = (
  name: string,
  factory: LoadedPluginsStoreFactory,
  options: LoadedPluginsStoreConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 40
  const test = (title: string, program: Effect.Effect<void, unknown, Store.LoadedPluginsStore>) =>
    it(title, () => runWith(factory, program))

  describe(`LoadedPluginsStore conformance: ${name}`, () => {
    test(
      "a key never written is an empty thread",
      Effect.gen(function* () {
        const s = yield* store
        expect(yield* s.get("never-written")).toEqual([])
      })
    )

    test(
      "add is the union: new names appended in order, known ones ignored; get reads the same",
      Effect.gen(function* () {
        const s = yield* store
        expect(yield* s.add("t1", ["weather", "maps"])).toEqual(["weather", "maps"])
        expect(yield* s.add("t1", ["maps", "notes", "weather", "notes"])).toEqual([
          "weather",
          "maps",
          "notes"
        ])
        expect(yield* s.add("t1", [])).toEqual(["weather", "maps", "notes"])
        expect(yield* s.get("t1")).toEqual(["weather", "maps", "notes"])
      })
    )

    test(
      "keys are independent: loading in one thread never affects another",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.add("thread-a", ["weather"])
        yield* s.add("thread-b", ["maps"])
        expect(yield* s.get("thread-a")).toEqual(["weather"])
        expect(yield* s.get("thread-b")).toEqual(["maps"])
        expect(yield* s.get("thread-c")).toEqual([])
      })
    )

    test(
      "a bad key or a bad name is refused as invalid, and nothing is stored",
      Effect.gen(function* () {
        const s = yield* store
        for (const key of ["", "a b", "-lead", "x".repeat(Store.MAX_KEY_LENGTH + 1), "é", "a/b"]) {
          expect(reasonOf(yield* Effect.exit(s.get(key)))).toBe("invalid")
          expect(reasonOf(yield* Effect.exit(s.add(key, ["weather"])))).toBe("invalid")
        }
        expect(reasonOf(yield* Effect.exit(s.get(3 as never)))).toBe("invalid")
        expect(yield* s.get("x".repeat(Store.MAX_KEY_LENGTH))).toEqual([])
        for (const names of [["Weather"], ["ok", ""], ["a b"], [1], "weather"]) {
          expect(reasonOf(yield* Effect.exit(s.add("t1", names as never)))).toBe("invalid")
        }
        expect(yield* s.get("t1")).toEqual([])
      })
    )

    test(
      "concurrent adds to one key all survive, each answer holding its own names",
      Effect.gen(function* () {
        const s = yield* store
        const names = Array.from({ length: 24 }, (_, i) => `plugin-${i}`)
        const answers = yield* Effect.forEach(names, (n) => s.add("busy", [n]), { concurrency: "unbounded" })
        answers.forEach((answer, i) => {
          expect(answer).toContain(names[i])
        })
        const all = yield* s.get("busy")
        expect([...all].sort()).toEqual([...names].sort())
        expect(new Set(all).size).toBe(all.length)
      })
    )

    it("a random sequence of adds over several keys is the fold of the union; no name is ever removed (property)", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              key: fc.constantFrom(...KEYS),
              names: fc.array(fc.constantFrom(...PLUGINS), { maxLength: 4 })
            }),
            { maxLength: 12 }
          ),
          (adds) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const s = yield* store
                const model = new Map<string, LoadedPlugins.LoadedPlugins>()
                for (const { key, names } of adds) {
                  const before = model.get(key) ?? LoadedPlugins.empty
                  const expected = LoadedPlugins.union(before, names)
                  model.set(key, expected)
                  const answer = yield* s.add(key, names)
                  expect(answer).toEqual(expected)
                  // What was there stays, in place: the answer starts with the set before the add.
                  expect(answer.slice(0, before.length)).toEqual(before)
                }
                for (const key of KEYS) expect(yield* s.get(key)).toEqual(model.get(key) ?? [])
              })
            )
        ),
        { numRuns }
      ))
  })
}
