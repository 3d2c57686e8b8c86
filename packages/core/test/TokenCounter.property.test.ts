import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { TokenCounter } from "../src/index.js"

/** A counter that counts characters and records every text it was asked to count. */
const spy = (seen: Array<string>): TokenCounter.TokenCounterService => ({
  name: "spy",
  count: (text) => {
    seen.push(text)
    return text.length
  }
})

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
    const counting = spy(seen)
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

  it("keeps every text by default, short ones too, and never one over an eighth of maxChars", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom("", "a", "system prompt", "x".repeat(200_000)), fc.string()), {
          maxLength: 80
        }),
        (texts) => {
          const counted: Array<string> = []
          const counter: TokenCounter.TokenCounterService = {
            name: "property",
            count: (text) => {
              counted.push(text)
              return TokenCounter.heuristic.count(text)
            }
          }
          const memo = TokenCounter.memoized(counter)
          for (const text of texts) expect(memo.count(text)).toBe(TokenCounter.heuristic.count(text))
          // Short texts stay kept (far under the bounds): each was counted once.
          const short = counted.filter((t) => t.length < 1000)
          expect(new Set(short).size).toBe(short.length)
          // A text over an eighth of the default 1,000,000 characters is counted every time.
          const long = texts.filter((t) => t.length === 200_000).length
          expect(counted.filter((t) => t.length === 200_000)).toHaveLength(long)
        }
      )
    )
  })

  it("drops the least recently used texts once their characters pass maxChars", () => {
    const seen: Array<string> = []
    const memo = TokenCounter.memoized(spy(seen), { maxChars: 16 })
    memo.count("aa") // 2 characters kept
    memo.count("bb") // 4
    memo.count("aa") // kept: "aa" is now the most recent
    memo.count("cc") // 6
    memo.count("bb") // kept
    memo.count("dddddddd") // over an eighth of 16 (2): counted, not kept
    memo.count("dddddddd")
    expect(seen).toEqual(["aa", "bb", "cc", "dddddddd", "dddddddd"])
    const bigger = TokenCounter.memoized(spy(seen), { maxChars: 32 })
    seen.length = 0
    for (const t of ["1111", "2222", "3333", "4444", "5555", "6666", "7777", "8888"]) bigger.count(t) // 32 characters
    bigger.count("1111") // kept, now the most recent
    bigger.count("9999") // 36 > 32: drops "2222", the least recently used
    bigger.count("1111")
    bigger.count("3333")
    bigger.count("2222")
    expect(seen.slice(8)).toEqual(["9999", "2222"])
  })

  it("countParts: the very same parts under a key are not rendered again; new parts are, even with the same text", () => {
    const seen: Array<string> = []
    const counting = spy(seen)
    const memo = TokenCounter.memoized(counting, { maxPartLists: 2 })
    const a = { n: 1 }
    const b = { n: 2 }
    let renders = 0
    const render = (parts: ReadonlyArray<unknown>) => () => {
      renders++
      return JSON.stringify(parts)
    }
    expect(memo.countParts("ab", [a, b], render([a, b]))).toBe('[{"n":1},{"n":2}]'.length)
    expect(memo.countParts("ab", [a, b], render([a, b]))).toBe('[{"n":1},{"n":2}]'.length)
    expect(renders).toBe(1)
    // Equal objects that are not the same: rendered and counted again (not looked up by text).
    const a2 = { n: 1 }
    memo.countParts("ab", [a2, b], render([a2, b]))
    expect(renders).toBe(2)
    expect(seen).toEqual(['[{"n":1},{"n":2}]', '[{"n":1},{"n":2}]'])
    memo.countParts("ab", [a2], render([a2])) // fewer parts: rendered again
    expect(renders).toBe(3)
    // A third key past maxPartLists starts over.
    memo.countParts("a", [a], render([a]))
    memo.countParts("b", [b], render([b]))
    memo.countParts("ab", [a2], render([a2]))
    expect(renders).toBe(6)
    // A text countParts counted is not kept among the texts.
    memo.count('[{"n":1},{"n":2}]')
    expect(seen.at(-1)).toBe('[{"n":1},{"n":2}]')
    expect(seen.filter((t) => t === '[{"n":1},{"n":2}]')).toHaveLength(3)
  })

  it("TokenCounter.countParts: a counter that does not remember renders and counts every time", () => {
    let renders = 0
    const parts = [{ n: 1 }]
    for (let i = 0; i < 3; i++)
      expect(
        TokenCounter.countParts(TokenCounter.heuristic, "k", parts, () => {
          renders++
          return "some text"
        })
      ).toBe(TokenCounter.heuristic.count("some text"))
    expect(renders).toBe(3)
    const memo = TokenCounter.memoized(TokenCounter.heuristic)
    for (let i = 0; i < 3; i++)
      TokenCounter.countParts(memo, "k", parts, () => {
        renders++
        return "some text"
      })
    expect(renders).toBe(4)
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
