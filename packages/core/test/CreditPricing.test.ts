import { CreditPricing } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const { costOf, DEFAULT_TOKENS_PER_CREDIT } = CreditPricing

const count = fc.integer({ min: 0, max: 10_000_000 })
const usage = fc.record({ inputTokens: count, outputTokens: count })
const price = fc.integer({ min: 1, max: 100_000 })

describe("CreditPricing.costOf", () => {
  it("one credit per started 1,000 tokens by default", () => {
    expect(DEFAULT_TOKENS_PER_CREDIT).toBe(1000)
    expect(costOf({ inputTokens: 1, outputTokens: 0 })).toBe(1)
    expect(costOf({ inputTokens: 600, outputTokens: 400 })).toBe(1)
    expect(costOf({ inputTokens: 600, outputTokens: 401 })).toBe(2)
    expect(costOf({ inputTokens: 2500, outputTokens: 0 }, 500)).toBe(5)
  })

  it("no usage or zero tokens costs nothing; garbage counts are ignored, never NaN", () => {
    expect(costOf(undefined)).toBe(0)
    expect(costOf({ inputTokens: 0, outputTokens: 0 })).toBe(0)
    expect(costOf({ inputTokens: -50, outputTokens: Number.NaN })).toBe(0)
    expect(costOf({ inputTokens: Number.POSITIVE_INFINITY, outputTokens: 10 })).toBe(1)
  })

  it("refuses a price that is not a positive whole number", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => costOf({ inputTokens: 1, outputTokens: 1 }, bad)).toThrow(
        /tokensPerCredit must be a positive whole number/
      )
    }
  })

  it("0 for 0 tokens, at least 1 credit for any non-zero usage, whatever the price", () => {
    fc.assert(
      fc.property(usage, price, (u, p) => {
        const cost = costOf(u, p)
        const tokens = u.inputTokens + u.outputTokens
        if (tokens === 0) expect(cost).toBe(0)
        else expect(cost).toBeGreaterThanOrEqual(1)
        expect(Number.isSafeInteger(cost)).toBe(true)
      })
    )
  })

  it("is monotone in tokens and never over-charges by a whole credit", () => {
    fc.assert(
      fc.property(usage, count, count, price, (u, moreIn, moreOut, p) => {
        const bigger = { inputTokens: u.inputTokens + moreIn, outputTokens: u.outputTokens + moreOut }
        expect(costOf(bigger, p)).toBeGreaterThanOrEqual(costOf(u, p))
        const tokens = u.inputTokens + u.outputTokens
        const cost = costOf(u, p)
        // The tokens fit in what was charged, and one credit less would not cover them.
        expect(cost * p).toBeGreaterThanOrEqual(tokens)
        expect((cost - 1) * p).toBeLessThan(Math.max(tokens, 1))
      })
    )
  })

  it("only the total matters: input and output tokens are priced alike", () => {
    fc.assert(
      fc.property(usage, price, (u, p) => {
        const swapped = { inputTokens: u.outputTokens, outputTokens: u.inputTokens }
        expect(costOf(swapped, p)).toBe(costOf(u, p))
      })
    )
  })
})
