/**
 * Ranking on the examples' catalog (55 plugins, examples/catalog): a rare word that only one
 * plugin's `whenToUse` names is a trigger, and must outweigh a common word ("today", "how many")
 * that another plugin repeats across its fields; `relevance` means the same in a one-plugin
 * catalog as in this one.
 */
import { CapabilityIndex, Catalog } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { exampleCatalog, examplePlugins } from "../../../../examples/catalog/index.js"

const index = CapabilityIndex.forCatalog(exampleCatalog)

/** Plugins holding `word` (stemmed), in any field. */
const holders = (word: string): Array<string> =>
  (index.postings.get(CapabilityIndex.stem(word))?.docs ?? []).map((d) => index.names[d]!)

describe("CapabilityIndex on the examples' catalog", () => {
  const triggers: ReadonlyArray<readonly [query: string, rare: string, plugin: string]> = [
    ["Do I need an umbrella today?", "umbrella", "weather"],
    ["What should I wear tomorrow?", "wear", "weather"],
    ["Which bills are overdue today?", "overdue", "invoices"],
    ["How many inches are in 2 metres?", "inches", "unit-converter"],
    ["How many carbs are in rice?", "carbs", "nutrition"],
    ["My tyre looks flat today", "tyre", "car-maintenance"],
    ["Log my gym session today", "gym", "fitness-log"]
  ]

  it.each(triggers)("ranks '%s' to the one plugin whose whenToUse says '%s'", (query, rare, plugin) => {
    // The premise: the rare word is a whenToUse trigger of that plugin and of no other.
    expect(holders(rare)).toEqual([plugin])
    const entry = exampleCatalog.byName.get(plugin)!
    expect(CapabilityIndex.tokenize(entry.manifest.whenToUse!.join(" "))).toContain(
      CapabilityIndex.stem(rare)
    )
    expect(CapabilityIndex.rank(index, query, { limit: 3 })[0]?.name).toBe(plugin)
  })

  it("'today', which the clock repeats in summary, whenToUse, tags and examples, does not beat 'umbrella'", () => {
    expect(holders("today").length).toBeGreaterThan(3)
    const [first, second] = CapabilityIndex.rank(index, "Do I need an umbrella today?")
    expect(first?.name).toBe("weather")
    expect(second?.name).toBe("clock")
  })

  it("gives a query about the same relevance in a one-plugin catalog as in 55 plugins; scores differ tenfold", () => {
    const weather = examplePlugins.find((p) => p.name === "weather")!
    const alone = CapabilityIndex.forCatalog(Catalog.unsafeMake([weather]))
    for (const query of ["Do I need an umbrella today?", "weather in Oslo", "what time is it in a city"]) {
      const small = CapabilityIndex.rank(alone, query).find((r) => r.name === "weather")!
      const large = CapabilityIndex.rank(index, query).find((r) => r.name === "weather")!
      expect(large.score / small.score, query).toBeGreaterThan(10)
      expect(large.relevance / small.relevance, query).toBeGreaterThan(0.6)
      expect(large.relevance / small.relevance, query).toBeLessThan(1.6)
    }
  })
})
