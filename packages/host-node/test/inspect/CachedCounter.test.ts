import { loadTiktokenCounter } from "@plugboard/adapters/tokenizers"
import { Catalog } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { cachedCounter } from "../../src/inspect/index.js"
import { generatedPlugin } from "./fixtures/large-catalog.js"
import { plugins as overBudget } from "./fixtures/over-budget.js"

// Characters that exercise every branch of the pre-tokenizer patterns: case changes,
// contractions, digits runs, punctuation runs, slashes, every kind of whitespace, non-Latin.
const tricky = fc.constantFrom(
  ..."aZ'sStTreVEmMllLdD 0123456789{}\":,./\\-_\n\r\t  éÉßσΣ日本語🙂\u0301".split(""),
  "'s",
  "'RE",
  "  ",
  "\r\n",
  " \n ",
  "<|endoftext|>"
)
const text = fc.array(tricky, { maxLength: 60 }).map((parts) => parts.join(""))

describe("cachedCounter", () => {
  for (const encoding of ["o200k", "cl100k"] as const) {
    it(`counts exactly like the plain ${encoding} counter on arbitrary text`, async () => {
      const plain = await loadTiktokenCounter(encoding)
      const cached = cachedCounter(plain)
      expect(cached.name).toBe(plain.name)
      fc.assert(
        fc.property(text, (t) => cached.count(t) === plain.count(t)),
        { numRuns: 2000 }
      )
      // Asked twice (cache hit), still the same.
      fc.assert(
        fc.property(
          fc.string({ unit: "binary", maxLength: 80 }),
          (t) => cached.count(t) === plain.count(t) && cached.count(t) === plain.count(t)
        )
      )
    })

    it(`counts every tool name, description and schema of real-shaped catalogs exactly (${encoding})`, async () => {
      const plain = await loadTiktokenCounter(encoding)
      const cached = cachedCounter(plain)
      const catalog = Catalog.unsafeMake([
        ...overBudget,
        ...Array.from({ length: 200 }, (_, i) => generatedPlugin(i))
      ])
      let a = 0
      let b = 0
      for (const e of catalog.entries) {
        for (const t of e.tools) {
          for (const s of [t.name, t.description, JSON.stringify(t.parameters)]) {
            a += plain.count(s)
            b += cached.count(s)
          }
        }
        a += plain.count(JSON.stringify(e.manifest))
        b += cached.count(JSON.stringify(e.manifest))
      }
      expect(b).toBe(a)
      expect(a).toBeGreaterThan(10_000)
    })
  }

  it("memoises other counters per text", () => {
    let calls = 0
    const counter = cachedCounter({
      name: "words",
      count: (t) => {
        calls++
        return t.split(" ").length
      }
    })
    expect(counter.count("a b c")).toBe(3)
    expect(counter.count("a b c")).toBe(3)
    expect(calls).toBe(1)
  })
})
