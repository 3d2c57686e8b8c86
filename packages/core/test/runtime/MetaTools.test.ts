import { Catalog, MetaTools, Offer, type PluginTool } from "@plugboard/core"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { scoredNameCount } from "../../src/internal/nameIndex.js"
import { plugin, smallCatalog, smallPlugins, tool } from "./fixtures.js"

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected success, got ${String(e.left)}`)
  return e.right
}
const left = <A, E>(e: Either.Either<A, E>): E => {
  if (Either.isRight(e)) throw new Error("expected an error")
  return e.left
}

describe("MetaTools.definitions", () => {
  it("declares the two meta-tools with object schemas", () => {
    expect(MetaTools.definitions.map((d) => d.name)).toEqual(["list_capabilities", "load_capability"])
    for (const d of MetaTools.definitions) {
      expect(d.kind).toBe("meta")
      expect(d.parameters.type).toBe("object")
    }
  })
})

describe("MetaTools.listCapabilities", () => {
  const catalog = smallCatalog()

  it("lists every discoverable plugin by name with its fields; never a silent one", () => {
    const r = right(MetaTools.listCapabilities(catalog, [], {}))
    expect(r.plugins.map((p) => p.name)).toEqual(["lab", "maps", "memory", "notes", "weather"])
    expect(r.total).toBe(5)
    expect(r.plugins.find((p) => p.name === "weather")).toEqual({
      name: "weather",
      title: "Weather",
      summary: "Weather lookups via Open-Meteo.",
      visibility: "on-demand",
      loaded: false,
      category: "data",
      tags: ["weather", "forecast"],
      stability: "stable",
      warning: undefined,
      score: undefined
    })
  })

  it("reports loaded status: always plugins are available, an always plugin with on-demand tools once loaded", () => {
    const status = (loaded: ReadonlyArray<string>) =>
      Object.fromEntries(
        right(MetaTools.listCapabilities(catalog, loaded, {})).plugins.map((p) => [p.name, p.loaded])
      )
    expect(status([])).toEqual({ lab: false, maps: false, memory: true, notes: false, weather: false })
    expect(status(["weather", "notes"])).toEqual({
      lab: false,
      maps: false,
      memory: true,
      notes: true,
      weather: true
    })
  })

  it("gives experimental plugins the warning footnote", () => {
    const lab = right(MetaTools.listCapabilities(catalog, [], {})).plugins.find((p) => p.name === "lab")
    expect(lab?.warning).toBe(MetaTools.EXPERIMENTAL_WARNING)
    expect(MetaTools.formatToolMessage(right(MetaTools.listCapabilities(catalog, [], {})))).toContain(
      "Experimental"
    )
  })

  it("ranks by relevance to a query, leaving out plugins that share no word with it", () => {
    const r = right(
      MetaTools.listCapabilities(catalog, [], { query: "will it rain in Paris tomorrow? forecast" })
    )
    expect(r.plugins[0]?.name).toBe("weather")
    expect(r.plugins[0]?.score).toBeGreaterThan(0)
    expect(r.plugins.map((p) => p.name)).not.toContain("memory")
    const directions = right(MetaTools.listCapabilities(catalog, [], { query: "directions to the station" }))
    expect(directions.plugins.map((p) => p.name)).toEqual(["maps"])
  })

  it("filters by category, with and without a query", () => {
    expect(
      right(MetaTools.listCapabilities(catalog, [], { category: "data" })).plugins.map((p) => p.name)
    ).toEqual(["maps", "weather"])
    expect(
      right(MetaTools.listCapabilities(catalog, [], { category: "memory", query: "weather" })).plugins
    ).toEqual([])
  })

  it("cuts the list at limit and says how many matched", () => {
    const r = right(MetaTools.listCapabilities(catalog, [], { limit: 2 }))
    expect(r.plugins.map((p) => p.name)).toEqual(["lab", "maps"])
    expect(r.total).toBe(5)
    expect(JSON.parse(MetaTools.formatToolMessage(r)).note).toBe(
      "Showing 2 of 5; pass a query, a category or a larger limit."
    )
  })

  it("lists every visible plugin of a catalog of up to DEFAULT_LIMIT (docs/spec/meta-tools.md), and cuts a larger one", () => {
    const many = (n: number) =>
      Catalog.unsafeMake(Array.from({ length: n }, (_, i) => plugin(`p${String(i).padStart(3, "0")}`)))
    const all = right(MetaTools.listCapabilities(many(MetaTools.DEFAULT_LIMIT), [], undefined))
    expect(all.plugins).toHaveLength(MetaTools.DEFAULT_LIMIT)
    expect(JSON.parse(MetaTools.formatToolMessage(all)).note).toBeUndefined()
    const big = right(MetaTools.listCapabilities(many(MetaTools.DEFAULT_LIMIT + 10), [], undefined))
    expect(big.plugins).toHaveLength(MetaTools.DEFAULT_LIMIT)
    expect(big.total).toBe(MetaTools.DEFAULT_LIMIT + 10)
    expect(JSON.parse(MetaTools.formatToolMessage(big)).note).toMatch(/^Showing 100 of 110;/)
  })

  it("echoes a runaway query clipped in the ToolMessage, and still ranks by all of it", () => {
    const query = `${"zzz ".repeat(5000)}weather`
    const r = right(MetaTools.listCapabilities(catalog, [], { query }))
    expect(r.plugins.map((p) => p.name)).toEqual(["weather"])
    const text = MetaTools.formatToolMessage(r)
    expect(text.length).toBeLessThan(1500)
    expect(JSON.parse(text).query).toBe(`${query.slice(0, 200)}…`)
  })

  it("accepts arguments as a JSON string and treats a blank query as none", () => {
    expect(
      right(MetaTools.listCapabilities(catalog, [], '{"category":"core"}')).plugins.map((p) => p.name)
    ).toEqual(["notes"])
    expect(right(MetaTools.listCapabilities(catalog, [], { query: "   " })).total).toBe(5)
  })

  it("rejects bad arguments with a clear message", () => {
    const msg = (input: unknown) => left(MetaTools.listCapabilities(catalog, [], input)).message
    expect(msg({ query: 3 })).toBe("list_capabilities: 'query' must be a string, got number.")
    expect(msg({ category: "weather" })).toContain("'category' must be one of data, communication")
    expect(msg({ limit: 0 })).toBe("list_capabilities: 'limit' must be a whole number of at least 1, got 0.")
    expect(msg({ limit: 2.5 })).toContain("'limit' must be a whole number")
    expect(msg([1])).toBe("list_capabilities expects an object of arguments, got an array.")
    expect(msg("not json")).toBe("list_capabilities expects an object of arguments, got string.")
    const e = left(MetaTools.listCapabilities(catalog, [], 7))
    expect(e._tag).toBe("MetaToolInputError")
    expect(e.reason).toBe("invalid-input")
    expect(JSON.parse(MetaTools.formatToolMessage(e))).toEqual({ error: e.message })
  })
})

describe("MetaTools.loadCapability", () => {
  const catalog = smallCatalog()

  it("loads a new plugin: state update, full manifest, prefixed tool descriptions", () => {
    const r = right(MetaTools.loadCapability(catalog, ["maps"], { names: ["weather"] }))
    expect(r.newlyLoaded).toEqual(["weather"])
    expect(r.loadedPlugins).toEqual(["maps", "weather"])
    expect(r.alreadyAvailable).toBeUndefined()
    expect(r.results).toEqual([
      {
        name: "weather",
        status: "loaded",
        manifest: {
          title: "Weather",
          summary: "Weather lookups via Open-Meteo.",
          whenToUse: ["Whenever asked about current weather, temperature, rain or wind in a city."],
          examples: [
            { user: "What's the weather in Berlin?", tool: "get_weather", args: { city: "Berlin" } }
          ],
          tags: ["weather", "forecast"],
          category: "data",
          stability: "stable"
        },
        tools: [
          { name: "get_weather", description: "[Weather] Current weather." },
          { name: "get_forecast", description: "[Weather] Forecast for days." }
        ]
      }
    ])
  })

  it("accepts a single name, and a lone string for names", () => {
    expect(right(MetaTools.loadCapability(catalog, [], { name: "maps" })).newlyLoaded).toEqual(["maps"])
    expect(right(MetaTools.loadCapability(catalog, [], { names: "maps" })).newlyLoaded).toEqual(["maps"])
    expect(
      right(MetaTools.loadCapability(catalog, [], { name: "maps", names: ["weather", "maps"] })).newlyLoaded
    ).toEqual(["maps", "weather"])
  })

  it("is a no-op with alreadyAvailable for an always plugin and for one already loaded", () => {
    const always = right(MetaTools.loadCapability(catalog, [], { names: ["memory"] }))
    expect(always.results).toEqual([
      { name: "memory", status: "alreadyAvailable", alreadyAvailable: true, reason: "always" }
    ])
    expect(always.alreadyAvailable).toBe(true)
    expect(always.newlyLoaded).toEqual([])
    const again = right(MetaTools.loadCapability(catalog, ["maps"], { names: ["maps", "memory"] }))
    expect(again.results[0]).toEqual({
      name: "maps",
      status: "alreadyAvailable",
      alreadyAvailable: true,
      reason: "loaded"
    })
    expect(again.alreadyAvailable).toBe(true)
    expect(again.loadedPlugins).toEqual(["maps"])
  })

  it("loads an always plugin that has on-demand tools, listing all its offered tools", () => {
    const r = right(MetaTools.loadCapability(catalog, [], { names: ["notes"] }))
    expect(r.newlyLoaded).toEqual(["notes"])
    const outcome = r.results[0]
    expect(outcome?.status).toBe("loaded")
    if (outcome?.status === "loaded")
      expect(outcome.tools.map((t) => t.name)).toEqual(["add_note", "export_notes"])
  })

  it("with the request's tools: lists a loaded plugin's request tools, and loads an always plugin for an on-demand one", () => {
    const withRequest = Catalog.unsafeMake([
      ...smallPlugins(),
      plugin("pinned", { visibility: "always" }),
      plugin("mcp", { tools: [tool("mcp_status", "Status.")] })
    ])
    const resolve = (owner: string, t: PluginTool) =>
      Offer.fromRequestTool(right(Catalog.resolveRequestTool(withRequest, owner, t)))
    const requestTools = [
      resolve("mcp", tool("mcp_search", "Search.")),
      resolve("mcp", tool("mcp_hidden", "Hidden.", { visibility: "silent" })),
      resolve("pinned", tool("pinned_now", "Now.")),
      resolve("pinned", tool("pinned_later", "Later.", { visibility: "on-demand" }))
    ]
    const mcp = right(MetaTools.loadCapability(withRequest, [], { names: ["mcp"] }, requestTools)).results[0]
    if (mcp?.status !== "loaded") throw new Error("expected a load")
    expect(mcp.tools).toEqual([
      { name: "mcp_status", description: "[Mcp] Status." },
      { name: "mcp_search", description: "[Mcp] Search." }
    ])
    const pinned = right(MetaTools.loadCapability(withRequest, [], { names: ["pinned"] }, requestTools))
    expect(pinned.newlyLoaded).toEqual(["pinned"])
    // Without an on-demand request tool, an always plugin stays a no-op.
    const noOp = right(
      MetaTools.loadCapability(withRequest, [], { names: ["pinned"] }, requestTools.slice(0, 3))
    )
    expect(noOp.results[0]).toMatchObject({ status: "alreadyAvailable", reason: "always" })
  })

  it("never lists a per-tool silent tool among a loaded plugin's tools", () => {
    const outcome = right(MetaTools.loadCapability(catalog, [], { names: ["lab"] })).results[0]
    if (outcome?.status !== "loaded") throw new Error("expected a load")
    expect(outcome.tools.map((t) => t.name)).toEqual(["experiment"])
  })

  it("refuses an unknown name with the closest discoverable names", () => {
    const r = right(MetaTools.loadCapability(catalog, [], { names: ["wether"] }))
    const outcome = r.results[0]
    expect(outcome).toMatchObject({ name: "wether", status: "error", error: "unknown" })
    if (outcome?.status === "error") {
      expect(outcome.suggestions[0]).toBe("weather")
      expect(outcome.suggestions).toHaveLength(3)
      expect(outcome.suggestions).not.toContain("credits")
      expect(outcome.message).toContain("There is no plugin named 'wether'. Closest names: 'weather'")
    }
    expect(r.alreadyAvailable).toBeUndefined()
    expect(r.newlyLoaded).toEqual([])
  })

  it("refuses more than MAX_NAMES_PER_LOAD distinct names in one call, loading none", () => {
    expect(MetaTools.MAX_NAMES_PER_LOAD).toBe(32)
    const names = (n: number) => Array.from({ length: n }, (_, i) => `nope-${i}`)
    const error = left(MetaTools.loadCapability(catalog, [], { names: [...names(32), "weather", "maps"] }))
    expect(error.message).toBe(
      "load_capability: at most 32 plugin names per call, got 34; nothing was loaded. " +
        "Load only the plugins this request needs (list_capabilities with a query finds them)."
    )
    // At the cap, and with repeats that collapse under it, the call is answered name by name.
    const atCap = right(MetaTools.loadCapability(catalog, [], { names: [...names(31), "weather"] }))
    expect(atCap.results).toHaveLength(32)
    expect(atCap.newlyLoaded).toEqual(["weather"])
    const repeated = right(MetaTools.loadCapability(catalog, [], { names: Array(200).fill("weather") }))
    expect(repeated.newlyLoaded).toEqual(["weather"])
  })

  it("answers a names list of any length instead of throwing (a million entries)", () => {
    const distinct = Array.from({ length: 1_000_000 }, (_, i) => `nope-${i}`)
    expect(left(MetaTools.loadCapability(catalog, [], { names: distinct })).message).toMatch(
      /^load_capability: at most 32 plugin names per call, got 1000000; nothing was loaded\./
    )
    const repeated = right(
      MetaTools.loadCapability(catalog, [], { name: "maps", names: Array(1_000_000).fill("weather") })
    )
    expect(repeated.newlyLoaded).toEqual(["maps", "weather"])
  })

  it("scores no name too long to mean a plugin, and echoes an unknown name clipped", () => {
    const before = scoredNameCount()
    const long = `weather${"x".repeat(10_000)}`
    const outcome = right(MetaTools.loadCapability(catalog, [], { names: [long] })).results[0]
    expect(outcome).toMatchObject({ status: "error", error: "unknown", suggestions: [] })
    expect(scoredNameCount()).toBe(before)
    expect(outcome!.name).toBe(`${long.slice(0, 200)}…`)
    if (outcome?.status === "error") expect(outcome.message.length).toBeLessThan(400)
    // At 128 characters a name is still scored.
    const edge = right(MetaTools.loadCapability(catalog, [], { names: [`weather${"x".repeat(121)}`] }))
    expect(edge.results[0]).toMatchObject({ suggestions: expect.arrayContaining(["weather"]) })
  })

  it("suggests from a per-catalog index: the names scored per unknown name do not grow with the catalog", () => {
    const big = Catalog.unsafeMake(
      Array.from({ length: 5000 }, (_, i) =>
        plugin(`${["weather", "invoice", "calendar", "maps"][i % 4]}-vendor-${i}`)
      )
    )
    const unknown = Array.from({ length: 32 }, (_, i) =>
      i % 2 === 0 ? `invoice-vendr-${4 * i + 1}` : `${"qz".repeat(60)}-${i}`.slice(0, 128)
    )
    const before = scoredNameCount()
    const r = right(MetaTools.loadCapability(big, [], { names: unknown }))
    const scored = scoredNameCount() - before
    expect(r.results.every((o) => o.status === "error")).toBe(true)
    // A typo still finds its plugin.
    expect(r.results[0]).toMatchObject({ suggestions: expect.arrayContaining(["invoice-vendor-1"]) })
    // Scoring every plugin for every name would be 32 × 5,000; the index scores a few per name.
    expect(scored).toBeGreaterThan(0)
    expect(scored).toBeLessThan(32 * 200)
  })

  it("points a tool name at the plugin that owns it", () => {
    const outcome = right(MetaTools.loadCapability(catalog, [], { names: ["get_forecast"] })).results[0]
    expect(outcome).toMatchObject({ status: "error", error: "unknown" })
    if (outcome?.status === "error") {
      expect(outcome.suggestions[0]).toBe("weather")
      expect(outcome.message).toBe(
        `'get_forecast' is a tool, not a plugin: it belongs to plugin 'weather'. Call load_capability with {"names": ["weather"]}.`
      )
    }
  })

  it("refuses a silent plugin", () => {
    const outcome = right(MetaTools.loadCapability(catalog, [], { names: ["credits"] })).results[0]
    expect(outcome).toEqual({
      name: "credits",
      status: "error",
      error: "silent",
      message: "Plugin 'credits' is internal to the runtime (silent) and cannot be loaded.",
      suggestions: []
    })
  })

  it("handles a mix: loads what it can, reports each name once, in order", () => {
    const r = right(
      MetaTools.loadCapability(catalog, ["maps"], { names: ["weather", "nope", "maps", "weather", "lab"] })
    )
    expect(r.results.map((o) => [o.name, o.status])).toEqual([
      ["weather", "loaded"],
      ["nope", "error"],
      ["maps", "alreadyAvailable"],
      ["lab", "loaded"]
    ])
    expect(r.newlyLoaded).toEqual(["weather", "lab"])
    expect(r.loadedPlugins).toEqual(["maps", "weather", "lab"])
  })

  it("rejects bad arguments with a clear message", () => {
    const msg = (input: unknown) => left(MetaTools.loadCapability(catalog, [], input)).message
    expect(msg({})).toBe(
      `load_capability: give at least one plugin name. Call it as {"names": ["plugin-name"]}.`
    )
    expect(msg({ names: [] })).toContain("give at least one plugin name")
    expect(msg({ names: ["  "] })).toContain("give at least one plugin name")
    expect(msg({ names: [1] })).toBe(
      `load_capability: 'names' must be a list of plugin names (strings). Call it as {"names": ["plugin-name"]}.`
    )
    expect(msg({ name: 5 })).toContain("'name' must be a string")
    expect(msg(42)).toContain("load_capability expects an object of arguments, got number.")
  })

  it("formats a deterministic ToolMessage without internal state", () => {
    const r = right(MetaTools.loadCapability(catalog, ["maps"], { names: ["weather"] }))
    const text = MetaTools.formatToolMessage(r)
    expect(text).toBe(
      MetaTools.formatToolMessage(right(MetaTools.loadCapability(catalog, ["maps"], { names: ["weather"] })))
    )
    const parsed = JSON.parse(text)
    expect(Object.keys(parsed)).toEqual(["newlyLoaded", "results"])
    expect(parsed.results[0].manifest.title).toBe("Weather")
    expect(text).not.toContain("loadedPlugins")
    expect(
      JSON.parse(
        MetaTools.formatToolMessage(right(MetaTools.loadCapability(catalog, [], { names: ["memory"] })))
      )
    ).toMatchObject({ alreadyAvailable: true })
  })

  it("writes the manifest in the spec's field order whatever order the author used", () => {
    const c = Catalog.unsafeMake([
      plugin("x", {
        tools: [tool("x_do")],
        manifest: { stability: "beta", tags: ["b"], whenToUse: ["w"], summary: "S.", title: "X" }
      })
    ])
    const outcome = right(MetaTools.loadCapability(c, [], { names: ["x"] })).results[0]
    if (outcome?.status !== "loaded") throw new Error("expected a load")
    expect(Object.keys(outcome.manifest)).toEqual(["title", "summary", "whenToUse", "tags", "stability"])
  })
})
