import { CapabilityIndex } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { closestIn, makeNameIndex } from "../../src/internal/nameIndex.js"

// Names built from a small vocabulary so that shared words, typos and ties are common.
const WORDS = [
  "get",
  "weather",
  "wether",
  "forecast",
  "invoice",
  "invoices",
  "find",
  "list",
  "a",
  "x",
  "0",
  "12"
]
const SEPARATORS = ["_", "-", " ", ""]
const nameArb = fc
  .array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...SEPARATORS), fc.boolean()), {
    minLength: 0,
    maxLength: 4
  })
  .map((parts) => parts.map(([w, sep, upper]) => (upper ? w.toUpperCase() : w) + sep).join(""))
const typoArb = fc
  .tuple(nameArb, fc.nat(), fc.string({ maxLength: 2 }))
  .map(
    ([name, at, insert]) =>
      name.slice(0, at % (name.length + 1)) + insert + name.slice((at % (name.length + 1)) + 1)
  )

describe("internal/nameIndex closestIn", () => {
  it("returns exactly closestNames over the index and the extra names", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(nameArb, { maxLength: 40 }),
        fc.array(nameArb, { maxLength: 5 }),
        fc.oneof(nameArb, typoArb, fc.string({ maxLength: 12 })),
        fc.integer({ min: 0, max: 5 }),
        (names, extra, input, n) => {
          const expected = CapabilityIndex.closestNames(input, new Set([...names, ...extra]), n)
          expect(closestIn(makeNameIndex(names), input, n, extra)).toEqual(expected)
        }
      ),
      { numRuns: 2000 }
    )
  })

  it("finds typos and reordered names among thousands of similar names", () => {
    const names = Array.from(
      { length: 5000 },
      (_, i) => `vendor${i}_${["find", "create", "export"][i % 3]}_invoice_${i % 4}`
    )
    const index = makeNameIndex(names)
    for (const input of [
      "vendor42_find_invoice",
      "vendr42_fnd_invoce_2",
      "invoice_find_vendor4200",
      "zzz",
      ""
    ]) {
      // Past its work budget the index scores the most promising names only: the best one stays.
      expect(closestIn(index, input, 3)[0]).toEqual(CapabilityIndex.closestNames(input, names, 1)[0])
    }
    expect(closestIn(index, "vendor48_find_invoice_0", 1)).toEqual(["vendor48_find_invoice_0"])
  })

  it("returns nothing for n <= 0 and an empty index", () => {
    expect(closestIn(makeNameIndex(["a"]), "a", 0)).toEqual([])
    expect(closestIn(makeNameIndex([]), "a", 3)).toEqual([])
    expect(closestIn(makeNameIndex([]), "a", 3, ["b"])).toEqual(["b"])
  })
})
