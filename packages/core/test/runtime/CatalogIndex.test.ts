/**
 * `CatalogIndex`: what the queries derive from a catalog lives on that catalog (`catalog.index`),
 * and what a restricted view derives lives on that view (`View.index`). Nothing is shared between
 * catalogs, each lazy field is built once, and a cached answer is the answer a fresh build gives.
 */
import {
  Access,
  CapabilityIndex,
  Catalog,
  CatalogIndex,
  ClientTools,
  MetaTools,
  Offer,
  type Plugin,
  SystemPrompt,
  Tier1
} from "@plugboard/core"
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, tool } from "./fixtures.js"

const ADMIN = { can: "admin/read", with: "ixo:oracle" }
const OPS = { can: "ops/restart", with: "ixo:oracle" }

const gatedPlugins = (): ReadonlyArray<Plugin> => [
  plugin("weather", { tools: [tool("get_weather")] }),
  {
    ...plugin("admin", { visibility: "always", tools: [tool("admin_stats")], prompt: "Admin prose." }),
    requires: [ADMIN],
    operatingGuide: "How to administer."
  },
  plugin("ops", {
    visibility: "always",
    tools: [tool("ops_status"), tool("ops_restart", "Restarts the oracle.", { requires: [OPS] })],
    prompt: "Ops prose."
  })
]

const names = (tools: ReadonlyArray<{ readonly name: string }>) => tools.map((t) => t.name)
const noSchemaCheck = () => undefined

describe("each catalog carries its own index", () => {
  it("two catalogs built side by side answer every query from their own plugins", () => {
    const a = Catalog.unsafeMake([
      plugin("weather", { visibility: "always", tools: [tool("get_weather")] }),
      plugin("maps", { tools: [tool("route")] })
    ])
    const b = Catalog.unsafeMake([
      plugin("clock", { visibility: "always", tools: [tool("now")] }),
      plugin("calendar", { tools: [tool("events")] })
    ])
    expect(a.index).not.toBe(b.index)
    expect(Tier1.render(a)).toContain("- weather:")
    expect(Tier1.render(a)).not.toContain("clock")
    expect(Tier1.render(b)).toContain("- clock:")
    expect(Tier1.render(b)).not.toContain("weather")
    expect(names(Offer.offer(a, []))).toEqual([...names(MetaTools.definitions), "get_weather"])
    expect(names(Offer.offer(b, []))).toEqual([...names(MetaTools.definitions), "now"])
    const listed = (c: Catalog.Catalog) =>
      Either.getOrThrow(MetaTools.listCapabilities(c, [], {})).plugins.map((p) => p.name)
    expect(listed(a)).toEqual(["maps", "weather"])
    expect(listed(b)).toEqual(["calendar", "clock"])
    expect(CapabilityIndex.rank(CapabilityIndex.forCatalog(a), "maps")[0]?.name).toBe("maps")
    expect(CapabilityIndex.rank(CapabilityIndex.forCatalog(b), "maps")).toEqual([])
    // A name taken in one catalog is free in the other (per-request tools and client tools).
    const clientTool = (c: Catalog.Catalog) =>
      ClientTools.validate(
        c,
        { tools: [{ name: "route", description: "A page tool.", schema: { type: "object" } }] },
        { checkSchema: noSchemaCheck }
      )
    expect(Either.isLeft(clientTool(a))).toBe(true)
    expect(Either.isRight(clientTool(b))).toBe(true)
    const requestTool = (c: Catalog.Catalog, owner: string) =>
      Catalog.resolveRequestTool(c, owner, tool("route"))
    expect(Either.isLeft(requestTool(a, "weather"))).toBe(true)
    expect(Either.isRight(requestTool(b, "clock"))).toBe(true)
  })

  it("each lazy field is built once and kept; the query modules read it", () => {
    const catalog = Catalog.unsafeMake(gatedPlugins())
    const index = catalog.index
    expect(index.capabilities).toBe(index.capabilities)
    expect(CapabilityIndex.forCatalog(catalog)).toBe(index.capabilities)
    expect(index.offer).toBe(index.offer)
    expect(index.pluginNames).toBe(index.pluginNames)
    expect(index.toolNames).toBe(index.toolNames)
    expect(index.discoverableByName).toBe(index.discoverableByName)
    expect(index.takenNames).toBe(index.takenNames)
    expect(index.tier1).toBe(Tier1.renderEntries(catalog.entries))
    expect(Tier1.render(catalog)).toBe(index.tier1)
    expect(SystemPrompt.alwaysPromptSections(catalog)).toBe(index.alwaysSections)
    expect(names(index.offer.prefix)).toEqual([
      ...names(MetaTools.definitions),
      ...names(catalog.alwaysTools)
    ])
    expect(index.discoverableByName.map((e) => e.name)).toEqual(["admin", "ops", "weather"])
    expect([...index.takenNames]).toEqual([
      ["get_weather", "weather"],
      ["admin_stats", "admin"],
      ["ops_status", "ops"],
      ["ops_restart", "ops"]
    ])
  })

  it("`gated` says whether any plugin or tool requires a capability; an ungated catalog's views are all open", () => {
    const open = Catalog.unsafeMake([plugin("weather", { tools: [tool("get_weather")] })])
    expect(open.index.gated).toBe(false)
    expect(Access.view(open, [ADMIN]).open).toBe(true)
    expect(open.index.views.size).toBe(0)
    const toolOnly = Catalog.unsafeMake([
      plugin("ops", { tools: [tool("ops_restart", "Restarts.", { requires: [OPS] })] })
    ])
    expect(toolOnly.index.gated).toBe(true)
    const gated = Catalog.unsafeMake(gatedPlugins())
    expect(gated.index.gated).toBe(true)
    const nobody = Access.view(gated, [])
    expect(gated.index.views.size).toBe(1)
    expect(Access.view(gated, [])).toBe(nobody)
  })
})

describe("a restricted view carries its own index", () => {
  const catalog = Catalog.unsafeMake(gatedPlugins())

  it("a view that denies something has an index; an open one reads the catalog's", () => {
    const nobody = Access.view(catalog, [])
    const everybody = Access.view(catalog, [ADMIN, OPS])
    expect(nobody.open).toBe(false)
    expect(nobody.index).toBeDefined()
    expect(everybody.open).toBe(true)
    expect(everybody.index).toBeUndefined()
    expect(Tier1.renderFor(catalog, everybody)).toBe(catalog.index.tier1)
    expect(Tier1.renderFor(catalog, nobody)).toBe(nobody.index!.tier1)
    expect(Tier1.renderFor(catalog, nobody)).not.toContain("admin")
    expect(SystemPrompt.alwaysPromptSections(catalog, nobody)).toBe(nobody.index!.alwaysSections)
    expect(SystemPrompt.alwaysPromptSections(catalog, nobody)).toEqual(["Ops prose."])
    expect(names(nobody.index!.offer.prefix)).toEqual([...names(MetaTools.definitions), "ops_status"])
  })

  it("property: whatever the grants, a view's cached answers are those of a fresh build, and follow Access's rule", () => {
    const grant = fc.constantFrom(ADMIN, OPS, { can: "other/x", with: "ixo:oracle" })
    fc.assert(
      fc.property(fc.array(grant, { maxLength: 3 }), (grants) => {
        const view = Access.view(catalog, grants)
        const handMade: Access.View = {
          grants: view.grants,
          open: view.open,
          denied: view.denied,
          hiddenTools: view.hiddenTools
        }
        const fresh = CatalogIndex.ofView(catalog, handMade)
        expect(Tier1.renderFor(catalog, view)).toBe(fresh.tier1)
        expect(Tier1.renderFor(catalog, view)).toBe(
          Tier1.renderEntries(catalog.entries.filter((e) => Access.allowsPlugin(view, e)))
        )
        expect(SystemPrompt.alwaysPromptSections(catalog, view)).toEqual(
          view.open ? catalog.index.alwaysSections : fresh.alwaysSections
        )
        expect(names(Offer.offer(catalog, [], [], view))).toEqual(
          names(Offer.offer(catalog, [], [], handMade))
        )
        expect(names(Offer.offer(catalog, [], [], view))).toEqual([
          ...names(MetaTools.definitions),
          ...names(catalog.alwaysTools.filter((t) => Access.allowsTool(view, t.plugin, t.name)))
        ])
      })
    )
  })
})
