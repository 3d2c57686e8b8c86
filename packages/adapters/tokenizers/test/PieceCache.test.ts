import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { cachedCounter } from "../src/PieceCache.js"
import { loadTiktokenCounter, makeTiktokenCounter, tiktokenPattern } from "../src/Tiktoken.js"
import { text } from "./trickyText.js"

describe("tokenizers cachedCounter", () => {
  for (const encoding of ["o200k", "cl100k"] as const) {
    it(`counts exactly like the plain ${encoding} counter, cache hits included`, async () => {
      const plain = await loadTiktokenCounter(encoding)
      const cached = cachedCounter(plain)
      expect(cached.name).toBe(plain.name)
      fc.assert(
        fc.property(text, (t) => cached.count(t) === plain.count(t) && cached.count(t) === plain.count(t)),
        { numRuns: 2000 }
      )
      fc.assert(
        fc.property(fc.string({ unit: "binary", maxLength: 80 }), (t) => cached.count(t) === plain.count(t))
      )
      const schema = JSON.stringify({
        type: "object",
        properties: { query: { type: "string", description: "Words." } }
      })
      expect(cached.count(schema.repeat(50))).toBe(plain.count(schema.repeat(50)))
    })
  }

  it("reads the pattern from the bundled ranks, loading them when needed", () => {
    expect(tiktokenPattern("o200k")).toContain("\\p{N}{1,3}")
    expect(tiktokenPattern("cl100k")).not.toBe(tiktokenPattern("o200k"))
    expect(() => tiktokenPattern("p50k" as never)).toThrow("Unknown tiktoken encoding 'p50k'")
  })

  it("counts only distinct pieces with the wrapped counter", () => {
    const plain = makeTiktokenCounter("o200k")
    let calls = 0
    const spy = Object.assign({}, plain, {
      count: (t: string) => {
        calls++
        return plain.count(t)
      }
    })
    const cached = cachedCounter(spy)
    expect(cached.count("alpha beta alpha beta")).toBe(plain.count("alpha beta alpha beta"))
    // Pieces: "alpha", " beta", " alpha": three distinct, " beta" counted once.
    expect(calls).toBe(3)
    expect(cached.count("alpha beta alpha beta")).toBe(plain.count("alpha beta alpha beta"))
    expect(calls).toBe(3)
  })

  it("memoises any other counter per text", () => {
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
    // A counter merely named like tiktoken is not taken for one.
    const impostor = cachedCounter({ name: "tiktoken/o200k_base", count: (t) => t.length })
    expect(impostor.count("hello world")).toBe(11)
  })
})
