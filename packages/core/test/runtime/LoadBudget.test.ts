/**
 * The load budget (docs/spec/token-budget.md#the-load-budget), issue 36 item 6: a plugin whose
 * load would add more tokens than the budget to every later model call is listed as unavailable,
 * never loaded, and the boot warns; what `TokenBudget.budgetReport` prices is what boot checks.
 */
import { Catalog, LoadedPlugins, MetaTools, Offer, TokenBudget } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, tool, wordCounter } from "./fixtures.js"

const many = (name: string, n: number) =>
  plugin(name, { tools: Array.from({ length: n }, (_, i) => tool(`${name.replace(/-/g, "_")}_${i}`)) })

describe("the load budget", () => {
  it("issue 36 item 6: a plugin over the budget is unavailable with a boot warning, and load_capability refuses it saying why", () => {
    const catalog = Catalog.unsafeMake([many("huge", 10_000), many("small", 3)], { loadBudgetTokens: 2_000 })
    const huge = catalog.byName.get("huge")!
    expect(huge.unavailable).toMatch(
      /^loading its 10,000 tools would add about [\d,]+ tokens to every later model call, over the load budget of 2,000 \(LOAD_BUDGET_TOKENS\)\.$/
    )
    expect(catalog.byName.get("small")!.unavailable).toBeUndefined()
    expect(catalog.warnings).toEqual([
      expect.stringMatching(
        /^\[boot-warning\] Plugin 'huge' cannot be loaded: loading its 10,000 tools .* To use it, split it, or raise LOAD_BUDGET_TOKENS\.$/
      )
    ])
    const load = Either.getOrThrow(
      MetaTools.loadCapability(catalog, LoadedPlugins.empty, { names: ["huge", "small"] })
    )
    expect(load.results[0]).toMatchObject({ name: "huge", status: "error", error: "unavailable" })
    expect(load.newlyLoaded).toEqual(["small"])
    // What the next model call is offered stays small.
    expect(Offer.offer(catalog, load.loadedPlugins).length).toBe(2 + 3)
    // The answer the model reads is short: no tool list of the refused plugin.
    expect(MetaTools.formatToolMessage(load).length).toBeLessThan(2_000)
  })

  it("no plugin that can be loaded costs more than the budget, priced as the budget report prices it (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 400 }),
        (sizes, budget) => {
          const plugins = sizes.map((n, i) => many(`p-${i}`, n))
          const catalog = Catalog.unsafeMake(plugins, { loadBudgetTokens: budget, tokenCounter: wordCounter })
          const report = TokenBudget.budgetReport(catalog, { basePrompt: "", counter: wordCounter, k: 1 })
          for (const p of report.perPlugin) {
            const entry = catalog.byName.get(p.name)!
            expect(entry.unavailable === undefined).toBe(p.cost <= budget)
          }
        }
      )
    )
  })

  it("the default is 50,000 tokens, Infinity turns it off, and a budget that is not a positive number is a boot error", () => {
    expect(TokenBudget.DEFAULT_LOAD_BUDGET_TOKENS).toBe(50_000)
    const off = Catalog.unsafeMake([many("huge", 10_000)], { loadBudgetTokens: Number.POSITIVE_INFINITY })
    expect(off.byName.get("huge")!.unavailable).toBeUndefined()
    const byDefault = Catalog.unsafeMake([many("huge", 10_000)])
    expect(byDefault.byName.get("huge")!.unavailable).toMatch(/over the load budget of 50,000/)
    for (const bad of [0, -1, Number.NaN]) {
      const built = Catalog.make([many("small", 1)], { loadBudgetTokens: bad })
      expect(Either.isLeft(built) && built.left.errors).toEqual([
        `loadBudgetTokens must be a positive number of tokens (or Infinity for none), got ${bad}.`
      ])
    }
  })
})
