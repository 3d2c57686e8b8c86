import {
  Access,
  CapabilityIndex,
  Catalog,
  LoadedPlugins,
  MetaTools,
  Offer,
  Preload,
  Ranking
} from "@plugboard/core"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, smallCatalog, smallPlugins, tool } from "./fixtures.js"

const WEATHER = "What's the weather and the rain forecast in Berlin?"

describe("Preload.predict", () => {
  it("names the top plugin with relevance, margin and their product as confidence", () => {
    const catalog = smallCatalog()
    const p = Preload.predict(CapabilityIndex.forCatalog(catalog), WEATHER)!
    expect(p.plugin).toBe("weather")
    expect(p.confidence).toBeCloseTo(p.relevance * p.margin, 12)
    expect(p.margin).toBeGreaterThan(0)
    expect(p.margin).toBeLessThanOrEqual(1)
  })

  it("predicts nothing for a message that shares no word with any plugin", () => {
    expect(Preload.predict(CapabilityIndex.forCatalog(smallCatalog()), "zzzz qqqq")).toBeUndefined()
  })
})

describe("Preload.decide", () => {
  const catalog = smallCatalog()

  it("off ranks nothing and preloads nothing", () => {
    const d = Preload.decide(catalog, [], WEATHER, { mode: "off" })
    expect(d).toEqual({ mode: "off", threshold: Preload.DEFAULT_THRESHOLD, reason: "off", preloaded: [] })
  })

  it("on preloads a confident top plugin; shadow reports it without preloading", () => {
    const on = Preload.decide(catalog, [], WEATHER, { mode: "on" })
    expect(on.reason).toBe("preloaded")
    expect(on.preloaded).toEqual(["weather"])
    const shadow = Preload.decide(catalog, [], WEATHER, { mode: "shadow" })
    expect(shadow.reason).toBe("shadow")
    expect(shadow.prediction?.plugin).toBe("weather")
    expect(shadow.preloaded).toEqual([])
  })

  it("does not preload below the threshold, a loaded plugin, or one the user may not use", () => {
    expect(Preload.decide(catalog, [], WEATHER, { mode: "on", threshold: 1 }).reason).toBe("not-confident")
    expect(Preload.decide(catalog, ["weather"], WEATHER, { mode: "on" }).reason).toBe("already-offered")
    const refused = Preload.decide(catalog, [], WEATHER, { mode: "on", available: (p) => p !== "weather" })
    expect(refused.reason).toBe("unavailable")
    expect(refused.preloaded).toEqual([])
    expect(Preload.decide(catalog, [], "zzzz qqqq", { mode: "on" }).reason).toBe("no-match")
  })

  it("does not preload an always-tier plugin (its tools are offered anyway)", () => {
    const d = Preload.decide(catalog, [], "remember this durable memory", { mode: "on", threshold: 0 })
    expect(d.prediction?.plugin).toBe("memory")
    expect(d.reason).toBe("already-offered")
  })

  it("never predicts a silent plugin", () => {
    const d = Preload.decide(catalog, [], "charge credits", { mode: "on", threshold: 0 })
    expect(d.prediction?.plugin).not.toBe("credits")
  })

  it("refuses a threshold outside [0, 1] with a clear error", () => {
    for (const threshold of [-0.1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => Preload.decide(catalog, [], WEATHER, { mode: "on", threshold })).toThrow(
        /Preload threshold must be a number between 0 and 1/
      )
    }
  })

  it("knows its modes", () => {
    expect(Preload.modes).toEqual(["off", "shadow", "on"])
    expect(Preload.isMode("shadow")).toBe(true)
    expect(Preload.isMode("always")).toBe(false)
  })
})

describe("Offer.preloadTools and the offer", () => {
  const catalog = smallCatalog()

  it("appends the preloaded tools after the stable prefix, without loading the plugin", () => {
    const loaded = LoadedPlugins.add([], ["maps"])
    const decision = Preload.decide(catalog, loaded, WEATHER, { mode: "on" })
    const base = Offer.offer(catalog, loaded)
    const withPreload = Offer.offer(catalog, loaded, Preload.tools(catalog, loaded, decision))
    expect(withPreload.slice(0, base.length)).toEqual(base)
    expect(withPreload.slice(base.length).map((t) => t.name)).toEqual(["get_weather", "get_forecast"])
    expect(loaded).toEqual(["maps"])
  })

  it("adds nothing for unknown, silent, loaded or repeated plugins", () => {
    expect(Offer.preloadTools(catalog, [], ["nope", "credits"])).toEqual([])
    expect(Offer.preloadTools(catalog, ["weather"], ["weather"])).toEqual([])
    expect(Offer.preloadTools(catalog, [], ["maps", "maps"]).map((t) => t.name)).toEqual(["route"])
  })

  it("a preloaded tool passes the gate on that call; without the preload it must be loaded", () => {
    const decision = Preload.decide(catalog, [], WEATHER, { mode: "on" })
    const offered = Offer.offer(catalog, [], Preload.tools(catalog, [], decision))
    expect(Offer.gate(catalog, offered, "get_weather")._tag).toBe("Offered")
    expect(Offer.gate(catalog, Offer.offer(catalog, []), "get_weather")._tag).toBe("NotLoaded")
  })

  it("offers only what the user's view allows, as the rest of the offer", () => {
    const ADMIN = { can: "admin/read", with: "ixo:oracle" }
    const gated = Catalog.unsafeMake([
      ...smallPlugins(),
      { ...plugin("audit", { tools: [tool("read_audit", "Reads the audit log.")] }), requires: [ADMIN] },
      plugin("ops", { tools: [tool("ops_status"), tool("ops_restart", "Restarts.", { requires: [ADMIN] })] })
    ])
    const granted = Access.view(gated, [ADMIN])
    const none = Access.view(gated, [])
    expect(Offer.preloadTools(gated, [], ["audit"], granted).map((t) => t.name)).toEqual(["read_audit"])
    expect(Offer.preloadTools(gated, [], ["audit"], none)).toEqual([])
    expect(Offer.preloadTools(gated, [], ["ops"], none).map((t) => t.name)).toEqual(["ops_status"])
    expect(Offer.preloadTools(gated, [], ["ops"], granted).map((t) => t.name)).toEqual([
      "ops_status",
      "ops_restart"
    ])
    // Without a view, as `offer` without one: no grants.
    expect(Offer.preloadTools(gated, [], ["audit"])).toEqual([])
    const decision = Preload.decide(gated, [], "read the audit log", { mode: "on", threshold: 0 })
    expect(decision.preloaded).toEqual(["audit"])
    expect(Preload.tools(gated, [], decision, granted).map((t) => t.name)).toEqual(["read_audit"])
  })

  it("property: for any loaded set and preloaded names, the offer without them is a prefix and nothing repeats", () => {
    const names = smallPlugins().map((p) => p.name)
    const name = fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 6 }))
    fc.assert(
      fc.property(fc.array(name, { maxLength: 6 }), fc.array(name, { maxLength: 4 }), (loaded, preload) => {
        const base = Offer.offer(catalog, loaded)
        const full = Offer.offer(catalog, loaded, Offer.preloadTools(catalog, loaded, preload))
        expect(full.slice(0, base.length)).toEqual(base)
        expect(new Set(full.map((t) => t.name)).size).toBe(full.length)
        for (const t of full.slice(base.length)) {
          expect(t.kind).toBe("plugin")
          expect(preload).toContain(t.plugin)
          expect(LoadedPlugins.has(loaded, t.plugin!)).toBe(false)
        }
      })
    )
  })
})

describe("Preload.agreement", () => {
  const catalog = smallCatalog()
  const shadow = Preload.decide(catalog, [], WEATHER, { mode: "shadow" })
  const on = Preload.decide(catalog, [], WEATHER, { mode: "on" })

  it("agrees when the model loads the predicted plugin (shadow)", () => {
    const a = Preload.agreement(catalog, shadow, [], ["weather"], [MetaTools.LOAD_CAPABILITY, "get_weather"])
    expect(a).toMatchObject({ kind: "agreed", predicted: "weather", used: ["weather"], mode: "shadow" })
  })

  it("agrees when the model calls a preloaded tool (on), which loads nothing", () => {
    expect(Preload.agreement(catalog, on, [], [], ["get_weather"])).toMatchObject({
      kind: "agreed",
      used: ["weather"]
    })
  })

  it("disagrees when the model loads another plugin, and says so when it loads none", () => {
    expect(Preload.agreement(catalog, shadow, [], ["maps"], []).kind).toBe("disagreed")
    expect(Preload.agreement(catalog, shadow, [], [], [MetaTools.LIST_CAPABILITIES]).kind).toBe("no-load")
  })

  it("reports no prediction when nothing was confident, and ignores plugins loaded before the turn", () => {
    const low = Preload.decide(catalog, [], WEATHER, { mode: "shadow", threshold: 1 })
    expect(Preload.agreement(catalog, low, [], ["weather"], []).kind).toBe("no-prediction")
    expect(Preload.agreement(catalog, shadow, ["maps"], ["maps"], []).used).toEqual([])
  })

  it("property: agreed exactly when the confident prediction is among the plugins used", () => {
    const names = smallPlugins().map((p) => p.name)
    const toolNames = [...catalog.toolsByName.keys()]
    fc.assert(
      fc.property(
        fc.constantFrom(shadow, on),
        fc.subarray(names),
        fc.subarray(names),
        fc.array(fc.constantFrom(...toolNames, MetaTools.LOAD_CAPABILITY)),
        (decision, before, extra, called) => {
          const after = LoadedPlugins.union(before, extra)
          const a = Preload.agreement(catalog, decision, before, after, called)
          for (const u of a.used) expect(LoadedPlugins.has(before, u)).toBe(false)
          expect(a.kind === "agreed").toBe(a.used.includes("weather"))
          expect(a.kind === "no-load").toBe(a.used.length === 0)
        }
      )
    )
  })
})

describe("Preload over a catalog of any size", () => {
  it("property: a plugin named only by its own rare words is preloaded, whatever the other plugins", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), (others) => {
        const plugins = [
          plugin("zephyrine-orbits", {
            tools: [tool("plot_orbit")],
            manifest: {
              title: "Zephyrine Orbits",
              summary: "Zephyrine orbit plots.",
              whenToUse: ["Zephyrine orbits."]
            }
          }),
          ...Array.from({ length: others }, (_, i) => plugin(`filler-${i}`, { tools: [tool(`filler_${i}`)] }))
        ]
        const d = Preload.decide(Catalog.unsafeMake(plugins), [], "plot the zephyrine orbits", { mode: "on" })
        expect(d.preloaded).toEqual(["zephyrine-orbits"])
      })
    )
  })
})

describe("Preload.decideNow (issue 37)", () => {
  const catalog = smallCatalog()
  const lexical = Ranking.lexical(catalog)
  const words = ["weather", "rain", "forecast", "Berlin", "remember", "note", "email", "the", "zzz", "crypt"]

  it("decides as decideWith does with the lexical ranking, for any message, mode, threshold and loads", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...words), { maxLength: 8 }).map((w) => w.join(" ")),
        fc.constantFrom(...Preload.modes),
        fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
        fc.subarray(catalog.entries.map((e) => e.name)),
        (message, mode, threshold, loaded) => {
          const options = { mode, threshold }
          const now = Preload.decideNow(lexical, catalog, loaded, message, options)
          expect(now).toEqual(Effect.runSync(Preload.decideWith(lexical, catalog, loaded, message, options)))
        }
      )
    )
  })

  it("leaves a ranking that must wait (no rankNow) to decideWith, unless the mode is off", () => {
    const waiting: Ranking.Ranking = { kind: "fused", label: "fused", rank: lexical.rank }
    expect(Preload.decideNow(waiting, catalog, [], WEATHER, { mode: "on" })).toBeUndefined()
    expect(Preload.decideNow(waiting, catalog, [], WEATHER, { mode: "off" })?.reason).toBe("off")
    expect(() => Preload.decideNow(lexical, catalog, [], WEATHER, { mode: "on", threshold: 2 })).toThrow()
  })

  it("the lexical ranking's rankNow ranks as its rank does, leave-one-out included", () => {
    for (const text of [WEATHER, "remember this note", "zzz"]) {
      expect(lexical.rankNow?.(text)).toEqual(Effect.runSync(lexical.rank(text)))
      expect(lexical.rankNow?.(text, { limit: 1 })).toEqual(Effect.runSync(lexical.rank(text, { limit: 1 })))
    }
  })
})
