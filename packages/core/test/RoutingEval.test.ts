import {
  CapabilityIndex,
  Catalog,
  MetaTools,
  type Plugin,
  type PluginTool,
  RoutingEval
} from "@plugboard/core"
import { Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const input = Schema.Struct({ q: Schema.String })
const tool = (name: string): PluginTool => ({
  name,
  description: `Does ${name}.`,
  input,
  handler: () => "ok"
})

const plugin = (
  name: string,
  manifest: {
    summary: string
    whenToUse?: Array<string>
    examples?: Array<string>
    visibility?: "always" | "on-demand" | "silent"
  }
): Plugin => ({
  name,
  manifest: {
    title: name,
    summary: manifest.summary,
    whenToUse: manifest.whenToUse ?? [`When ${name} helps.`],
    ...(manifest.visibility === undefined ? {} : { visibility: manifest.visibility }),
    examples: (manifest.examples ?? []).map((user) => ({ user, tool: `${name.replace(/-/g, "_")}_run` }))
  },
  tools: [tool(`${name.replace(/-/g, "_")}_run`)]
})

const plugins = (): Array<Plugin> => [
  plugin("weather", {
    summary: "Weather lookups and forecasts.",
    whenToUse: ["Current weather, temperature, rain or wind in a city.", "Forecasts for next week."],
    examples: ["What's the weather in Berlin?", "Will it rain in Tokyo tomorrow?", "Forecast for Paris"]
  }),
  plugin("maps", {
    summary: "Routes, directions and places.",
    whenToUse: ["Directions between two places in a city.", "Travel time by car or on foot."],
    examples: ["How do I get from Berlin to Potsdam?", "Directions to the airport"]
  }),
  plugin("climate", {
    summary: "Historical climate data and rain statistics.",
    whenToUse: ["Long-term climate, average temperature and rain in a city."],
    examples: ["Average rain in Berlin in May"]
  }),
  plugin("notes", { summary: "Personal notes.", whenToUse: ["Writing down notes."] }),
  plugin("credits", {
    summary: "Billing.",
    visibility: "silent",
    whenToUse: [],
    examples: ["weather weather weather"]
  })
]

const catalog = () => Catalog.unsafeMake(plugins())

describe("RoutingEval.evaluateExamples (leave-one-out)", () => {
  it("ranks each example against the index without it, exactly as a catalog without that example would", () => {
    const report = RoutingEval.evaluateExamples(catalog())
    expect(report.outcomes).toHaveLength(6)
    for (const o of report.outcomes) {
      // Rebuild the catalog with that one example removed and rank with list_capabilities itself.
      const without = plugins().map((p) =>
        p.name !== o.plugin
          ? p
          : {
              ...p,
              manifest: { ...p.manifest, examples: p.manifest.examples!.filter((_, i) => i !== o.example) }
            }
      )
      const listed = MetaTools.listCapabilities(Catalog.unsafeMake(without), [], {
        query: o.query,
        limit: 1000
      })
      if (listed._tag !== "Right") throw new Error("list_capabilities failed")
      const names = listed.right.plugins.map((p) => p.name)
      const at = names.indexOf(o.plugin)
      expect(o.rank).toBe(at < 0 ? undefined : at + 1)
      expect(o.top).toEqual(names.slice(0, 5))
    }
  })

  it("aggregates recall@1, recall@k and MRR from the outcomes, and never evaluates a silent plugin", () => {
    const report = RoutingEval.evaluateExamples(catalog())
    const ranks = report.outcomes.map((o) => o.rank)
    const n = ranks.length
    expect(report.queries).toBe(n)
    expect(report.recallAt1).toBeCloseTo(ranks.filter((r) => r === 1).length / n, 12)
    expect(report.recallAtK).toBeCloseTo(ranks.filter((r) => r !== undefined && r <= 5).length / n, 12)
    expect(report.mrr).toBeCloseTo(
      ranks.reduce<number>((s, r) => s + (r === undefined ? 0 : 1 / r), 0) / n,
      12
    )
    expect(report.outcomes.some((o) => o.plugin === "credits")).toBe(false)
    expect(report.outcomes.every((o) => !o.top.includes("credits"))).toBe(true)
    expect(report.withoutExamples).toEqual(["notes"])
    const perPluginQueries = report.perPlugin.reduce((s, p) => s + p.queries, 0)
    expect(perPluginQueries).toBe(n)
  })

  it("rejects a cut-off that is not a positive integer", () => {
    expect(() => RoutingEval.evaluateExamples(catalog(), { k: 0 })).toThrow(RangeError)
    expect(() => RoutingEval.evaluateExamples(catalog(), { k: 1.5 })).toThrow(RangeError)
  })

  it("is empty but defined for a catalog without examples", () => {
    const report = RoutingEval.evaluateExamples(Catalog.unsafeMake([plugin("notes", { summary: "Notes." })]))
    expect(report).toMatchObject({
      queries: 0,
      recallAt1: 0,
      recallAtK: 0,
      mrr: 0,
      withoutExamples: ["notes"]
    })
  })
})

describe("RoutingEval.evaluateQueries", () => {
  it("ranks with list_capabilities' ranking over the whole index", () => {
    const c = catalog()
    const queries = [
      { query: "rain tomorrow in Berlin", plugin: "weather" },
      { query: "average rain in May", plugin: "climate" },
      { query: "directions to the station", plugin: "maps" },
      { query: "something unrelated entirely", plugin: "notes" }
    ]
    const report = RoutingEval.evaluateQueries(c, queries)
    report.outcomes.forEach((o, i) => {
      const listed = MetaTools.listCapabilities(c, [], { query: queries[i]!.query, limit: 1000 })
      if (listed._tag !== "Right") throw new Error("list_capabilities failed")
      const names = listed.right.plugins.map((p) => p.name)
      expect(o.top).toEqual(names.slice(0, 5))
      expect(o.rank).toBe(names.includes(o.plugin) ? names.indexOf(o.plugin) + 1 : undefined)
    })
    // A query sharing no word with its plugin is a miss with no rank, and counts 0 in MRR.
    expect(report.outcomes[3]!.rank).toBeUndefined()
    expect(report.queries).toBe(4)
  })

  it("computes hand-checkable figures and the pairs that steal each other's queries", () => {
    const c = catalog()
    // "rain in the city" is labelled climate; weather's whenToUse also says rain and city.
    const queries = [
      { query: "weather forecast", plugin: "weather" },
      { query: "directions by car", plugin: "maps" },
      { query: "current rain and wind in the city", plugin: "climate" }
    ]
    const report = RoutingEval.evaluateQueries(c, queries)
    const [w, m, cl] = report.outcomes
    expect(w!.rank).toBe(1)
    expect(m!.rank).toBe(1)
    expect(cl!.top[0]).toBe("weather")
    expect(report.recallAt1).toBeCloseTo(2 / 3, 12)
    expect(report.mrr).toBeCloseTo((1 + 1 + 1 / cl!.rank!) / 3, 12)
    expect(report.stealing).toHaveLength(1)
    const pair = report.stealing[0]!
    expect(pair).toMatchObject({ a: "climate", b: "weather", aToB: 1, bToA: 0 })
    expect(pair.sharedTerms).toEqual(
      expect.arrayContaining([CapabilityIndex.stem("rain"), CapabilityIndex.stem("city")])
    )
    expect(pair.whenToUseOverlap).toBeGreaterThan(0)
    expect(pair.whenToUseOverlap).toBeLessThan(1)
    // climate, the plugin with a miss, is listed first.
    expect(report.perPlugin[0]).toMatchObject({ plugin: "climate", queries: 1, hitsAt1: 0 })
    expect(report.perPlugin[0]!.misses).toEqual([cl])
  })

  it("reports unknown and silent labels, leaves them out, and resolves labels that differ only in case and punctuation", () => {
    const c = catalog()
    const report = RoutingEval.evaluateQueries(c, [
      { query: "weather in Rome", plugin: "Weather" },
      { query: "billing", plugin: "credits" },
      { query: "stocks", plugin: "stock-ticker" },
      { query: "more stocks", plugin: "stock-ticker" }
    ])
    expect(report.queries).toBe(1)
    expect(report.normalizedLabels).toEqual([{ label: "Weather", plugin: "weather", via: "normalized" }])
    expect(report.unknownLabels).toEqual([
      { plugin: "credits", positions: [1], reason: "silent" },
      { plugin: "stock-ticker", positions: [2, 3], reason: "unknown" }
    ])
  })

  it("does not guess between two plugins whose names normalise alike", () => {
    const c = Catalog.unsafeMake([plugin("ab-c", { summary: "One." }), plugin("a-bc", { summary: "Two." })])
    const resolve = RoutingEval.labelResolver(c)
    expect(resolve("a-bc")).toEqual({ plugin: "a-bc", via: "name" })
    expect(resolve("ABC")).toBeUndefined()
  })

  it("resolves labels through aliases before ignoring case, and reports aliases that name no plugin", () => {
    const report = RoutingEval.evaluateQueries(
      catalog(),
      [
        { query: "rain in Oslo", plugin: "WeatherPlugin" },
        { query: "route to Oslo", plugin: "MapsPlugin" },
        { query: "notes", plugin: "Maps" }
      ],
      {
        aliases: new Map([
          ["WeatherPlugin", "weather"],
          ["MapsPlugin", "gone"],
          ["Maps", "notes"]
        ])
      }
    )
    expect(report.normalizedLabels).toEqual([
      { label: "WeatherPlugin", plugin: "weather", via: "alias" },
      { label: "Maps", plugin: "notes", via: "alias" }
    ])
    expect(report.unknownLabels).toEqual([{ plugin: "MapsPlugin", positions: [1], reason: "unknown" }])
    expect(report.outcomes.map((o) => o.plugin)).toEqual(["weather", "notes"])
  })
})

describe("RoutingEval.whenToUseOverlap", () => {
  it("is 1 for identical situations, 0 for disjoint ones, and symmetric", () => {
    const c = Catalog.unsafeMake([
      plugin("one", { summary: "S.", whenToUse: ["Rain in the city."] }),
      plugin("two", { summary: "S.", whenToUse: ["City rain!"] }),
      plugin("three", { summary: "S.", whenToUse: ["Stock prices."] })
    ])
    const [one, two, three] = ["one", "two", "three"].map((n) => c.byName.get(n)!)
    expect(RoutingEval.whenToUseOverlap(one!, two!).score).toBe(1)
    expect(RoutingEval.whenToUseOverlap(one!, three!)).toEqual({ score: 0, shared: [] })
    expect(RoutingEval.whenToUseOverlap(two!, one!)).toEqual(RoutingEval.whenToUseOverlap(one!, two!))
  })
})

describe("RoutingEval invariants", () => {
  const vocabulary = [
    "rain",
    "city",
    "stock",
    "price",
    "route",
    "car",
    "note",
    "song",
    "movie",
    "flight",
    "hotel"
  ]
  const sentence = fc
    .array(fc.constantFrom(...vocabulary), { minLength: 1, maxLength: 5 })
    .map((ws) => ws.join(" "))
  const catalogArb = fc
    .array(
      fc.record({
        summary: sentence,
        whenToUse: fc.array(sentence, { minLength: 1, maxLength: 3 }),
        examples: fc.array(sentence, { maxLength: 3 })
      }),
      { minLength: 1, maxLength: 6 }
    )
    .map((specs) => Catalog.unsafeMake(specs.map((s, i) => plugin(`p${i}`, s))))

  it("recall@1 <= MRR <= 1, recall@1 <= recall@k, every stolen query is counted once", () => {
    fc.assert(
      fc.property(catalogArb, fc.integer({ min: 1, max: 6 }), (c, k) => {
        const r = RoutingEval.evaluateExamples(c, { k })
        expect(r.recallAt1).toBeLessThanOrEqual(r.recallAtK)
        expect(r.recallAt1).toBeLessThanOrEqual(r.mrr + 1e-12)
        expect(r.mrr).toBeLessThanOrEqual(1)
        const stolen = r.outcomes.filter((o) => o.rank !== 1 && o.top[0] !== undefined).length
        expect(r.stealing.reduce((s, p) => s + p.aToB + p.bToA, 0)).toBe(stolen)
        for (const o of r.outcomes) {
          expect(o.top.length).toBeLessThanOrEqual(k)
          if (o.rank !== undefined && o.rank <= k) expect(o.top[o.rank - 1]).toBe(o.plugin)
        }
      }),
      { numRuns: 200 }
    )
  })
})
