import { CallTool, Catalog, SystemPrompt, TokenBudget, TokenCounter } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, tool, wordCounter } from "./fixtures.js"

// Every figure below is counted by hand in words (`wordCounter`):
// - meta-tools: list_capabilities 1 + 12 ("List plugins you can load. Optional query ranks by
//   relevance; category filters.") + 1 (its JSON) = 14; load_capability 1 + 11 + 1 = 13 → 27
// - Tier-1 with `memory` only: "## Available Capabilities" 3 + "- memory: Durable memory." 4
//   + the hint 18 = 25
// - tools (name 1 + "[Title] description" + "{}" 1): remember 1+4+1 = 6, get_weather 1+3+1 = 5,
//   get_forecast 1+4+1 = 6, route 1+6+1 = 8; prompts: memory 3, maps 2
const budgetCatalog = () =>
  Catalog.unsafeMake([
    plugin("weather", {
      tools: [tool("get_weather", "Current weather."), tool("get_forecast", "Forecast for days.")],
      manifest: { title: "Weather" }
    }),
    plugin("memory", {
      visibility: "always",
      tools: [tool("remember", "Store a fact.")],
      prompt: "Use memory wisely.",
      manifest: { title: "Memory", summary: "Durable memory." }
    }),
    plugin("maps", {
      tools: [tool("route", "Plan a route by car.")],
      prompt: "Prefer walking.",
      manifest: { title: "Maps" }
    }),
    plugin("credits", { visibility: "silent", tools: [tool("charge", "Charge credits.")] })
  ])
const basePrompt = "You are helpful."

describe("TokenBudget.toolCost", () => {
  it("counts name + description + JSON of the parameters", () => {
    const t = {
      name: "get_weather",
      description: "[Weather] Current weather.",
      parameters: { type: "object" }
    }
    expect(TokenBudget.toolCost(wordCounter, t)).toBe(1 + 3 + 1)
    expect(TokenBudget.toolCost({ name: "chars", count: (s) => s.length }, t)).toBe(11 + 26 + 17)
  })
})

describe("TokenBudget.turnCost", () => {
  it("breaks a nothing-loaded turn down", () => {
    const cost = TokenBudget.turnCost({
      catalog: budgetCatalog(),
      loadedPlugins: [],
      basePrompt,
      counter: wordCounter
    })
    expect(cost).toEqual({
      basePrompt: 3,
      tier1: 25,
      pluginPrompts: 3,
      metaTools: 27,
      toolSchemas: 6,
      total: 64
    })
  })

  it("adds loaded plugins' tools and prompts, and per-request tools", () => {
    const cost = TokenBudget.turnCost({
      catalog: budgetCatalog(),
      loadedPlugins: ["maps", "weather"],
      basePrompt,
      counter: wordCounter,
      extra: [{ name: "click", description: "Click it.", parameters: {}, kind: "request" }]
    })
    expect(cost).toEqual({
      basePrompt: 3,
      tier1: 25,
      pluginPrompts: 5,
      metaTools: 27,
      toolSchemas: 6 + 8 + 11 + 4,
      total: 89
    })
  })

  it("matches the composed system prompt, less the blank lines joining sections", () => {
    const catalog = budgetCatalog()
    const cost = TokenBudget.turnCost({ catalog, loadedPlugins: ["maps"], basePrompt, counter: wordCounter })
    const prompt = SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: ["maps"] })
    expect(wordCounter.count(prompt)).toBe(cost.basePrompt + cost.tier1 + cost.pluginPrompts)
  })

  it("with nothing loaded, a turn costs the same with 0, 50 or 5,000 on-demand plugins", () => {
    const filler = Array.from({ length: 5000 }, (_, i) =>
      plugin(`od-${i}`, {
        tools: [
          tool(
            `od_${i}_a`,
            `Fetch thing ${i} with a long description that would cost a lot if it were bound.`
          )
        ],
        prompt: `Plugin ${i} prompt.`,
        manifest: { summary: `On-demand plugin number ${i}.`, tags: ["filler"] }
      })
    )
    const alwaysTier = fc.array(
      fc.record({
        summary: fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim().length > 0),
        prompt: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
        tools: fc.integer({ min: 0, max: 3 })
      }),
      { maxLength: 4 }
    )
    fc.assert(
      fc.property(alwaysTier, (specs) => {
        const always = specs.map((s, i) =>
          plugin(`always-${i}`, {
            visibility: "always",
            ...(s.prompt === undefined ? {} : { prompt: s.prompt }),
            tools: Array.from({ length: s.tools }, (_, j) => tool(`al_${i}_${j}`, `Always tool ${j}.`)),
            manifest: { summary: s.summary }
          })
        )
        const costs = [0, 50, 5000].map((n) => {
          const catalog = Catalog.unsafeMake([...filler.slice(0, n), ...always])
          return TokenBudget.turnCost({
            catalog,
            loadedPlugins: [],
            basePrompt,
            counter: TokenCounter.heuristic
          })
        })
        expect(costs[1]).toEqual(costs[0])
        expect(costs[2]).toEqual(costs[0])
      }),
      { numRuns: 4 }
    )
  })
})

describe("TokenBudget.budgetReport", () => {
  it("reports the nothing-loaded turn, per-plugin load costs, the worst case and the all-bound cost", () => {
    const report = TokenBudget.budgetReport(budgetCatalog(), { basePrompt, counter: wordCounter, k: 1 })
    expect(report.counter).toBe("words")
    expect(report.nothingLoaded.total).toBe(64)
    expect(report.perPlugin).toEqual([
      { name: "weather", visibility: "on-demand", tools: 2, cost: 11, guide: 0 },
      { name: "maps", visibility: "on-demand", tools: 1, cost: 10, guide: 0 }
    ])
    expect(report.worstCase).toEqual({ k: 1, plugins: ["weather"], total: 75 })
    // base 3 + prompts 3 + 2 + every non-silent tool 6 + 5 + 6 + 8: on a catalog this small the
    // meta-tools and Tier-1 block cost more than they save, and the report says so.
    expect(report.allBound).toEqual({ total: 33, saving: -31 })
    expect(report.budget).toBeUndefined()
    expect(
      TokenBudget.budgetReport(budgetCatalog(), { basePrompt, counter: wordCounter, k: 9 }).worstCase
    ).toEqual({
      k: 2,
      plugins: ["weather", "maps"],
      total: 85
    })
  })

  it("flags a nothing-loaded turn over budget and the demotion that fixes it", () => {
    const { budget } = TokenBudget.budgetReport(budgetCatalog(), {
      basePrompt,
      counter: wordCounter,
      k: 1,
      budget: 60
    })
    // Demoting memory saves its Tier-1 line (4), its tool (6) and its prompt (3).
    expect(budget).toEqual({
      budget: 60,
      nothingLoadedExceeds: true,
      demotions: [{ name: "memory", saving: 13 }],
      demote: ["memory"],
      totalAfterDemotion: 51,
      fits: true
    })
  })

  it("checks a loaded scenario and says when demotion is not enough", () => {
    const r = TokenBudget.budgetReport(budgetCatalog(), {
      basePrompt,
      counter: wordCounter,
      k: 1,
      budget: 70,
      loaded: ["weather"]
    })
    expect(r.budget?.nothingLoadedExceeds).toBe(false)
    expect(r.budget?.loaded).toMatchObject({ plugins: ["weather"], exceeds: true, cost: { total: 75 } })
    expect(r.budget).toMatchObject({ demote: ["memory"], totalAfterDemotion: 62, fits: true })
    const tight = TokenBudget.budgetReport(budgetCatalog(), {
      basePrompt,
      counter: wordCounter,
      k: 1,
      budget: 40
    })
    expect(tight.budget).toMatchObject({ demote: ["memory"], totalAfterDemotion: 51, fits: false })
    const loose = TokenBudget.budgetReport(budgetCatalog(), {
      basePrompt,
      counter: wordCounter,
      k: 1,
      budget: 100
    })
    expect(loose.budget).toMatchObject({
      nothingLoadedExceeds: false,
      demote: [],
      totalAfterDemotion: 64,
      fits: true
    })
  })

  it("counts only the Tier-1 line as saved when the scenario loads the demoted plugin anyway", () => {
    const r = TokenBudget.budgetReport(budgetCatalog(), {
      basePrompt,
      counter: wordCounter,
      k: 1,
      budget: 62,
      loaded: ["memory"]
    })
    expect(r.budget).toMatchObject({
      demotions: [{ name: "memory", saving: 4 }],
      demote: ["memory"],
      totalAfterDemotion: 60
    })
  })
})

describe("TokenBudget with boot-time sub-agents", () => {
  // Sub-agents are tools the agent loop offers by their plugin's visibility: an always plugin's
  // from the first call, an on-demand plugin's once loaded, a silent plugin's never.
  const withSubAgents = (on: boolean) =>
    Catalog.unsafeMake(
      [
        {
          ...plugin("memory", { visibility: "always", tools: [tool("remember", "Store a fact.")] }),
          sub: "recall"
        },
        { ...plugin("research", { tools: [tool("search", "Search the web.")] }), sub: "researcher" },
        { ...plugin("audit", { visibility: "silent" }), sub: "auditor" }
      ].map(({ sub, ...p }) =>
        on
          ? { ...p, getSubAgents: () => [{ name: sub, description: `The ${sub} agent.`, run: () => "ok" }] }
          : p
      )
    )
  const catalog = withSubAgents(true)
  const cost = (name: string) =>
    TokenBudget.toolCost(wordCounter, catalog.subAgents.find((s) => s.tool.name === name)!.tool)
  const report = TokenBudget.budgetReport(catalog, { basePrompt, counter: wordCounter, k: 1, budget: 1 })
  const without = TokenBudget.budgetReport(withSubAgents(false), {
    basePrompt,
    counter: wordCounter,
    k: 1,
    budget: 1
  })

  it("counts an always plugin's sub-agent in every turn, an on-demand one's in its load", () => {
    expect(cost("recall")).toBeGreaterThan(0)
    expect(report.nothingLoaded.toolSchemas).toBe(without.nothingLoaded.toolSchemas + cost("recall"))
    expect(report.perPlugin).toEqual([
      {
        name: "research",
        visibility: "on-demand",
        tools: 2,
        cost: without.perPlugin[0]!.cost + cost("researcher"),
        guide: 0
      }
    ])
    const loaded = TokenBudget.turnCost({
      catalog,
      loadedPlugins: ["research"],
      basePrompt,
      counter: wordCounter
    })
    expect(loaded.total).toBe(report.nothingLoaded.total + report.perPlugin[0]!.cost)
  })

  it("binds every non-silent sub-agent in the all-bound figure, and demoting saves the always one", () => {
    expect(report.allBound.total).toBe(without.allBound.total + cost("recall") + cost("researcher"))
    const demote = (r: TokenBudget.BudgetReport) =>
      r.budget!.demotions.find((d) => d.name === "memory")!.saving
    expect(demote(report)).toBe(demote(without) + cost("recall"))
  })
})

describe("issue 36 item 20: the all-bound baseline counts operating guides", () => {
  // A skill's guide (on-demand, returned by its load) and an always plugin's (in the prompt).
  const onDemandGuide = "Read the file first. Then summarise it in three bullet points for the user."
  const alwaysGuide = "Save only what the user asked you to remember."
  const withGuides = () =>
    Catalog.unsafeMake([
      ...budgetCatalog().entries.map((e) =>
        e.name === "weather"
          ? { ...e.plugin, operatingGuide: onDemandGuide }
          : e.name === "memory"
            ? { ...e.plugin, operatingGuide: alwaysGuide }
            : e.plugin
      )
    ])

  it("every plugin bound carries each discoverable plugin's guide, as an always-tier plugin carries it", () => {
    const without = TokenBudget.budgetReport(budgetCatalog(), { basePrompt, counter: wordCounter, k: 1 })
    const report = TokenBudget.budgetReport(withGuides(), { basePrompt, counter: wordCounter, k: 1 })
    const words = (s: string) => wordCounter.count(s)
    // memory's section becomes "prompt\n\nguide", weather's (no prompt) its guide alone.
    expect(report.allBound.total).toBe(
      without.allBound.total -
        words("Use memory wisely.") +
        words(`Use memory wisely.${SystemPrompt.SEPARATOR}${alwaysGuide}`) +
        words(onDemandGuide)
    )
    // The saving discovery makes is what that baseline costs over the nothing-loaded turn, whose
    // own prompt now carries the always-tier guide too.
    expect(report.allBound.saving).toBe(report.allBound.total - report.nothingLoaded.total)
    expect(report.allBound.total).toBeGreaterThan(without.allBound.total + words(onDemandGuide))
  })

  it("an always-tier guide past the prompt's bound is counted as the prompt cuts it", () => {
    const long = "word ".repeat(SystemPrompt.ALWAYS_GUIDE_MAX_CHARS / 2).trim()
    const big = { ...plugin("big", { tools: [tool("a", "A.")] }), operatingGuide: long }
    const catalog = Catalog.unsafeMake([big])
    const report = TokenBudget.budgetReport(catalog, { basePrompt: "", counter: wordCounter, k: 0 })
    const toolTokens = TokenBudget.toolCost(wordCounter, catalog.entries[0]!.tools[0]!)
    expect(report.allBound.total).toBe(wordCounter.count(SystemPrompt.boundedGuide(long)) + toolTokens)
    expect(report.allBound.total).toBeLessThan(wordCounter.count(long))
  })
})

describe("TokenBudget.listCost and gatewayCost: the MCP gateway's tools/list", () => {
  it("at connect: the three meta-tools and the always-tier tools; after k loads: the most expensive ones", () => {
    const catalog = budgetCatalog()
    const callTool = TokenBudget.toolCost(wordCounter, CallTool.definition)
    const gateway = TokenBudget.gatewayCost(catalog, { counter: wordCounter, k: 1 })
    // meta-tools 27 + call_tool; remember 6
    expect(gateway.atConnect).toEqual({
      tools: 4,
      metaTools: 27 + callTool,
      toolSchemas: 6,
      total: 33 + callTool
    })
    // weather adds 5 + 6 = 11, maps 8: weather is the most expensive load.
    expect(gateway.afterLoads).toEqual({
      k: 1,
      plugins: ["weather"],
      tools: 6,
      metaTools: 27 + callTool,
      toolSchemas: 17,
      total: 44 + callTool
    })
    expect(TokenBudget.listCost(catalog, ["weather"], wordCounter)).toEqual({
      tools: 6,
      metaTools: 27 + callTool,
      toolSchemas: 17,
      total: 44 + callTool
    })
    // The instructions are the Tier-1 block (25) and memory's prompt (3).
    expect(gateway.instructions).toBe(28)
    // k beyond what can be loaded stops at what adds anything.
    expect(TokenBudget.gatewayCost(catalog, { counter: wordCounter, k: 9 }).afterLoads.plugins).toEqual([
      "weather",
      "maps"
    ])
  })

  it("at connect, the list costs the same with 0 or 2,000 on-demand plugins behind it", () => {
    const filler = Array.from({ length: 2000 }, (_, i) =>
      plugin(`od-${i}`, { tools: [tool(`od_${i}_a`, `Fetch thing ${i} at length.`)] })
    )
    const costs = [0, 2000].map(
      (n) =>
        TokenBudget.gatewayCost(
          Catalog.unsafeMake([...filler.slice(0, n), ...budgetCatalog().entries.map((e) => e.plugin)]),
          { counter: TokenCounter.heuristic, k: 0 }
        ).atConnect
    )
    expect(costs[1]).toEqual(costs[0])
  })
})
