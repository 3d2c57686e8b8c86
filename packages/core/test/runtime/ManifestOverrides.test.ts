/**
 * Manifest overrides (docs/plugins.md#manifest-overrides): one rule for the config's overrides and the
 * sources' own, merged over the plugin's fields, validated like a manifest, changes recorded.
 */
import { Catalog, CatalogSource, ManifestOverrides, type PluginManifest } from "@plugboard/core"
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, tool } from "./fixtures.js"

const base: PluginManifest = { title: "Weather", summary: "Weather lookups.", whenToUse: ["When asked."] }

const weather = () => plugin("weather", { tools: [tool("get_weather")], manifest: base })

describe("ManifestOverrides.apply", () => {
  it("replaces each given field whole and records what changed (an equal value is no change)", () => {
    const r = ManifestOverrides.apply(
      base,
      { summary: "Forecasts for Europe.", whenToUse: ["Trips."], title: "Weather", visibility: "always" },
      "manifestOverrides.weather"
    )
    expect(r.errors).toEqual([])
    expect(r.manifest).toEqual({
      ...base,
      summary: "Forecasts for Europe.",
      whenToUse: ["Trips."],
      visibility: "always"
    })
    expect(r.changes).toEqual([
      {
        field: "summary",
        from: "Weather lookups.",
        to: "Forecasts for Europe.",
        by: "manifestOverrides.weather"
      },
      { field: "whenToUse", from: ["When asked."], to: ["Trips."], by: "manifestOverrides.weather" },
      { field: "visibility", from: undefined, to: "always", by: "manifestOverrides.weather" }
    ])
  })

  it("a field of the wrong type is an error naming it; an unknown field a warning", () => {
    const r = ManifestOverrides.apply(base, { summary: 3, visibility: "sometimes", colour: "red" }, "o.w")
    expect(r.errors).toEqual([
      "o.w.summary must be a string.",
      "o.w.visibility must be one of always, on-demand, silent."
    ])
    expect(r.warnings[0]).toMatch(/^o\.w\.colour is not a manifest field and is ignored/)
    expect(r.manifest).toEqual(base)
  })

  it("property: the result has every override field's value and the base's others; an empty override changes nothing", () => {
    const words = fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 3 })
    fc.assert(
      fc.property(
        fc.record({ summary: fc.string(), tags: words, whenNotToUse: words }, { requiredKeys: [] }),
        (override) => {
          const r = ManifestOverrides.apply(base, override, "x")
          expect(r.errors).toEqual([])
          for (const [k, v] of Object.entries(override)) expect((r.manifest as never)[k]).toEqual(v)
          expect(r.manifest.title).toBe(base.title)
          expect(ManifestOverrides.apply(r.manifest, {}, "x").changes).toEqual([])
        }
      )
    )
  })

  it("MCP sources use the same rule (CatalogSource.overrideManifest)", () => {
    const o = { summary: "Issues.", category: "data" }
    const a = CatalogSource.overrideManifest(base, o, "mcpServers.github.manifest")
    const b = ManifestOverrides.apply(base, o, "mcpServers.github.manifest")
    expect(a).toEqual(b)
  })
})

describe("Catalog.make with manifestOverrides", () => {
  it("the entry's manifest is the effective one, its tools are re-tiered and prefixed by it, the changes are kept", () => {
    const catalog = Catalog.unsafeMake([weather()], {
      manifestOverrides: { weather: { title: "Meteo", visibility: "always" } }
    })
    const entry = catalog.byName.get("weather")!
    expect(entry.manifest.title).toBe("Meteo")
    expect(entry.visibility).toBe("always")
    expect(catalog.alwaysTools.map((t) => t.description)).toEqual(["[Meteo] Does get_weather."])
    expect(entry.overrides?.map((c) => c.field)).toEqual(["title", "visibility"])
    expect(Catalog.unsafeMake([weather()]).byName.get("weather")!.overrides).toBeUndefined()
  })

  it("an override is validated like a manifest: the merged result breaks a rule → boot error", () => {
    const bad = Catalog.make([weather()], { manifestOverrides: { weather: { summary: "  " } } })
    expect(Either.isLeft(bad) && bad.left.errors.some((e) => e.includes("summary"))).toBe(true)
  })

  it("a malformed field, an unknown plugin, or a config that is not an object is a clear boot error", () => {
    const errorsOf = (manifestOverrides: unknown) => {
      const r = Catalog.make([weather()], { manifestOverrides: manifestOverrides as never })
      return Either.isLeft(r) ? r.left.errors : []
    }
    expect(errorsOf({ weather: { tags: "x" } })).toEqual([
      "manifestOverrides.weather.tags must be a list of strings."
    ])
    expect(errorsOf({ wether: { title: "W" } })).toEqual([
      "manifestOverrides.wether names no plugin of the catalog (plugins: weather)."
    ])
    expect(errorsOf([1])).toEqual(["manifestOverrides must be an object: plugin name → manifest fields."])
    expect(errorsOf({ weather: "always" })).toEqual([
      "manifestOverrides.weather must be an object of manifest fields."
    ])
  })

  it("a derived plugin's source override comes first, the config's after, both recorded", () => {
    const derived = CatalogSource.toPlugins([
      {
        name: "github",
        source: { kind: "mcp", server: "github" },
        manifest: { title: "GitHub", summary: "Issues.", whenToUse: ["Issues."] },
        override: { summary: "GitHub issues." },
        tools: []
      }
    ])
    const catalog = Catalog.unsafeMake(derived.plugins, { manifestOverrides: { github: { title: "GH" } } })
    expect(catalog.byName.get("github")!.overrides?.map((c) => [c.field, c.by])).toEqual([
      ["summary", "mcpServers.github.manifest"],
      ["title", "manifestOverrides.github"]
    ])
  })
})
