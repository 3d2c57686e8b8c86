import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { TokenCounter } from "../src/index.js"

describe("TokenCounter.memoized", () => {
  it("answers what the counter answers, for any sequence of texts, short or long", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 20 }), fc.string({ minLength: 30, maxLength: 300 })), {
          maxLength: 60
        }),
        fc.integer({ min: 1, max: 5 }),
        (texts, maxEntries) => {
          const memo = TokenCounter.memoized(TokenCounter.heuristic, { maxEntries, minLength: 30 })
          for (const t of [...texts, ...texts.slice().reverse()])
            expect(memo.count(t)).toBe(TokenCounter.heuristic.count(t))
        }
      )
    )
  })

  it("counts a long text once while it stays among the last maxEntries, again once it was dropped", () => {
    const seen: Array<string> = []
    const counting: TokenCounter.TokenCounterService = {
      name: "spy",
      count: (text) => {
        seen.push(text)
        return text.length
      }
    }
    const memo = TokenCounter.memoized(counting, { maxEntries: 2, minLength: 3 })
    memo.count("aaa")
    memo.count("bbb")
    memo.count("aaa") // kept: "aaa" is now the most recent
    memo.count("ccc") // drops "bbb", the least recently used
    memo.count("aaa")
    memo.count("bbb")
    memo.count("xy") // shorter than minLength: counted every time
    memo.count("xy")
    expect(seen).toEqual(["aaa", "bbb", "ccc", "bbb", "xy", "xy"])
    expect(memo.name).toBe("spy")
  })
})

/** The heuristic as it was written before its pieces carried their kind (issue 37): the reference. */
const referenceHeuristic = (text: string): number => {
  const piece = /'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+/gu
  const letter = /^ ?\p{L}/u
  const digit = /^ ?\p{N}/u
  let n = 0
  for (const m of text.matchAll(piece)) {
    const p = m[0]
    if (letter.test(p)) n += Math.max(1, Math.ceil(p.trimStart().length / 8))
    else if (digit.test(p)) n += 1
    else if (p.trim().length === 0) n += p.includes("\n") ? 0.5 : 0
    else n += Math.max(1, Math.ceil(p.trimStart().length / 3))
  }
  return Math.ceil(n)
}

describe("TokenCounter.heuristic", () => {
  // Pieces of every kind, and the characters where they meet: contractions, spaces before
  // words, digits and punctuation, other whitespace (tab, no-break space, line separator).
  const tricky = fc
    .array(
      fc.constantFrom(
        "'s",
        "'ll",
        "'re",
        "'x",
        " ",
        "  ",
        "\n",
        "\t",
        "\u00a0",
        "\u2028",
        "a",
        "Zé",
        "ß",
        "日本",
        "1",
        "12345",
        "٣",
        " 7",
        "!",
        "?!.",
        " {",
        "}",
        '"',
        "_",
        "-",
        "😀",
        "\u0301"
      ),
      { maxLength: 40 }
    )
    .map((parts) => parts.join(""))

  it("counts as the reference heuristic does, on any text", () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string({ unit: "grapheme", maxLength: 80 }), fc.string()), (text) => {
        expect(TokenCounter.heuristic.count(text)).toBe(referenceHeuristic(text))
      }),
      { numRuns: 2000 }
    )
  })

  it("counts the same text the same way however often it is counted in a row", () => {
    const text = "Here is what Weather returned: city: Berlin, temperatureC: 22.9 — it's\nstormy."
    const first = TokenCounter.heuristic.count(text)
    expect(first).toBe(referenceHeuristic(text))
    for (let i = 0; i < 3; i++) expect(TokenCounter.heuristic.count(text)).toBe(first)
  })
})
