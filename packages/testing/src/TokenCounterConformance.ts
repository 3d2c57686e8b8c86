/**
 * The conformance suite of the `TokenCounter` port: the heuristic in core, tiktoken's o200k and
 * cl100k in `@plugboard/tokenizers`. Budgets add counts in tight loops and compare them with
 * limits, so a counter must be pure, whole and bounded:
 *
 * ```ts
 * TokenCounterConformance.run("heuristic", () => TokenCounter.heuristic)
 * ```
 */
import type { TokenCounter } from "@plugboard/core"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** Options of the suite. */
export interface TokenCounterConformanceOptions {
  /** fast-check runs per property (default 200). */
  readonly numRuns?: number
}

// Counted by hand: core's build has no DOM or Node library, so no TextEncoder. A lone surrogate
// encodes as U+FFFD (3 bytes), as TextEncoder would.
const utf8Bytes = (text: string): number => {
  let bytes = 0
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
  }
  return bytes
}

// Texts of the kinds a budget counts: prose, JSON Schemas, code, emoji and CJK, lone surrogates.
const texts = fc.oneof(
  fc.string({ maxLength: 400 }),
  fc.string({ unit: "grapheme", maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.json().map((json) => JSON.stringify(JSON.parse(json), null, 2))
)

/** Registers the suite under `name`; `make` returns the counter under test. */
export const run = (
  name: string,
  make: () => TokenCounter.TokenCounterService,
  options: TokenCounterConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 200
  describe(`TokenCounter conformance: ${name}`, () => {
    it("names itself", () => {
      expect(make().name).toMatch(/^\S+$/)
    })

    it("counts nothing as 0, and a word as at least 1", () => {
      const counter = make()
      expect(counter.count("")).toBe(0)
      expect(counter.count("weather")).toBeGreaterThanOrEqual(1)
    })

    it("counts whole, non-negative tokens, at most one per UTF-8 byte", () => {
      const counter = make()
      fc.assert(
        fc.property(texts, (text) => {
          const n = counter.count(text)
          expect(Number.isSafeInteger(n)).toBe(true)
          expect(n).toBeGreaterThanOrEqual(0)
          expect(n).toBeLessThanOrEqual(utf8Bytes(text))
        }),
        { numRuns }
      )
    })

    it("is pure: the same text counts the same, whatever was counted before", () => {
      const counter = make()
      fc.assert(
        fc.property(texts, fc.array(texts, { maxLength: 5 }), (text, others) => {
          const first = counter.count(text)
          for (const other of others) counter.count(other)
          expect(counter.count(text)).toBe(first)
          expect(make().count(text)).toBe(first)
        }),
        { numRuns }
      )
    })

    it("grows with the text: a text repeated k times costs at least as much as once", () => {
      const counter = make()
      fc.assert(
        fc.property(texts, fc.integer({ min: 2, max: 6 }), (text, k) => {
          const once = counter.count(`${text}\n`)
          expect(counter.count(`${text}\n`.repeat(k))).toBeGreaterThanOrEqual(once)
        }),
        { numRuns }
      )
    })
  })
}
