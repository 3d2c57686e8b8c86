import { GraphState, LoadedPlugins } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const name = fc.constantFrom("weather", "maps", "memory", "notes", "lab", "search", "mail", "x")
const names = fc.array(name as fc.Arbitrary<string>, { maxLength: 8 })
const asSet = (xs: ReadonlyArray<string>) => new Set(xs)

describe("LoadedPlugins.union", () => {
  it("keeps a's order and appends b's new names in b's order, without duplicates", () => {
    expect(LoadedPlugins.union(["a", "b"], ["c", "a", "d", "c"])).toEqual(["a", "b", "c", "d"])
    expect(LoadedPlugins.union(["a", "a", "b"], [])).toEqual(["a", "b"])
  })

  it("returns a itself when b adds nothing, so unchanged state stays reference-equal", () => {
    const a = ["a", "b"]
    expect(LoadedPlugins.union(a, ["b"])).toBe(a)
    expect(LoadedPlugins.union(a, [])).toBe(a)
  })

  it("is commutative as a set", () => {
    fc.assert(
      fc.property(names, names, (a, b) => {
        expect(asSet(LoadedPlugins.union(a, b))).toEqual(asSet(LoadedPlugins.union(b, a)))
      })
    )
  })

  it("is associative (as lists, not only as sets)", () => {
    fc.assert(
      fc.property(names, names, names, (a, b, c) => {
        expect(LoadedPlugins.union(LoadedPlugins.union(a, b), c)).toEqual(
          LoadedPlugins.union(a, LoadedPlugins.union(b, c))
        )
      })
    )
  })

  it("is idempotent", () => {
    fc.assert(
      fc.property(names, names, (a, b) => {
        const ab = LoadedPlugins.union(a, b)
        expect(LoadedPlugins.union(ab, ab)).toEqual(ab)
        expect(LoadedPlugins.union(ab, b)).toEqual(ab)
        expect(LoadedPlugins.union(ab, a)).toEqual(ab)
      })
    )
  })

  it("contains both inputs and nothing else, each name once", () => {
    fc.assert(
      fc.property(names, names, (a, b) => {
        const u = LoadedPlugins.union(a, b)
        for (const n of [...a, ...b]) expect(u).toContain(n)
        for (const n of u) expect(a.includes(n) || b.includes(n)).toBe(true)
        expect(new Set(u).size).toBe(u.length)
      })
    )
  })

  it("never removes a name, whatever sequence of updates (reducer or add) is applied", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), names), { maxLength: 20 }), (updates) => {
        let state = GraphState.initial({ did: "did:key:z6Mk", client: "portal" })
        let seen: ReadonlyArray<string> = []
        for (const [viaReducer, update] of updates) {
          const before = state.loadedPlugins
          state = viaReducer
            ? GraphState.apply(state, { loadedPlugins: update })
            : { ...state, loadedPlugins: LoadedPlugins.add(state.loadedPlugins, update) }
          for (const n of before) expect(state.loadedPlugins).toContain(n)
          // And the prefix never changes: loads only append.
          expect(state.loadedPlugins.slice(0, before.length)).toEqual(before)
          seen = [...seen, ...update]
        }
        expect(asSet(state.loadedPlugins)).toEqual(asSet(seen))
      })
    )
  })
})

describe("LoadedPlugins helpers", () => {
  it("has / add / empty", () => {
    expect(LoadedPlugins.empty).toEqual([])
    const l = LoadedPlugins.add(LoadedPlugins.empty, new Set(["b", "a"]))
    expect(l).toEqual(["b", "a"])
    expect(LoadedPlugins.has(l, "a")).toBe(true)
    expect(LoadedPlugins.has(l, "c")).toBe(false)
  })

  it("fromUnknown keeps strings, drops the rest, and treats a non-array as nothing loaded", () => {
    expect(LoadedPlugins.fromUnknown(["a", 1, "b", "a", null])).toEqual(["a", "b"])
    expect(LoadedPlugins.fromUnknown("a")).toEqual([])
    expect(LoadedPlugins.fromUnknown(undefined)).toEqual([])
  })
})
