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
