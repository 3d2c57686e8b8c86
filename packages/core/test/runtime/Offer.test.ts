import { Catalog, MetaTools, Offer, type Plugin, type PluginTool, type Visibility } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, smallCatalog, smallPlugins, tool } from "./fixtures.js"

const names = (tools: ReadonlyArray<Offer.OfferedTool>) => tools.map((t) => t.name)

describe("Offer.offer", () => {
  it("offers meta-tools, then always-tier tools by plugin name, then loaded plugins' tools in load order", () => {
    const catalog = smallCatalog()
    expect(names(Offer.offer(catalog, []))).toEqual([
      "list_capabilities",
      "load_capability",
      "remember",
      "add_note"
    ])
    expect(names(Offer.offer(catalog, ["maps", "weather"]))).toEqual([
      "list_capabilities",
      "load_capability",
      "remember",
      "add_note",
      "route",
      "get_weather",
      "get_forecast"
    ])
  })

  it("binds an always plugin's on-demand tools once it is loaded; never a silent tool", () => {
    const catalog = smallCatalog()
    expect(names(Offer.offer(catalog, ["notes", "lab"])).slice(4)).toEqual(["export_notes", "experiment"])
  })

  it("ignores unknown, silent and repeated names", () => {
    const catalog = smallCatalog()
    expect(names(Offer.offer(catalog, ["nope", "credits", "maps", "maps"])).slice(4)).toEqual(["route"])
  })

  it("tags each tool's kind and owner, with descriptions prefixed by the manifest title", () => {
    const [meta, , always] = Offer.offer(smallCatalog(), [])
    expect(meta).toMatchObject({ kind: "meta", name: "list_capabilities" })
    expect(always).toEqual({
      name: "remember",
      description: "[Memory] Store a fact.",
      parameters: { type: "object" },
      kind: "plugin",
      plugin: "memory"
    })
  })

  it("appends per-request tools last, dropping one whose name is already offered", () => {
    const extra: Array<Offer.OfferedTool> = [
      { name: "browser_click", description: "Click.", parameters: {}, kind: "request" },
      { name: "remember", description: "Shadow.", parameters: {}, kind: "request" }
    ]
    const offered = Offer.offer(smallCatalog(), ["maps"], extra)
    expect(names(offered)).toEqual([
      "list_capabilities",
      "load_capability",
      "remember",
      "add_note",
      "route",
      "browser_click"
    ])
    expect(offered.find((t) => t.name === "remember")?.kind).toBe("plugin")
  })

  it("returns a fresh list each call (callers may not corrupt the cached prefix)", () => {
    const catalog = smallCatalog()
    const a = Offer.offer(catalog, []) as Array<Offer.OfferedTool>
    a.push({ name: "junk", description: "", parameters: {}, kind: "request" })
    expect(names(Offer.offer(catalog, []))).not.toContain("junk")
  })

  // A random catalog: plugins of every tier, with per-tool overrides a catalog accepts.
  const arbitraryCatalog = fc
    .array(
      fc.record({
        visibility: fc.constantFrom<Visibility | undefined>("always", "on-demand", "silent", undefined),
        tools: fc.array(fc.constantFrom<Visibility | undefined>("always", "on-demand", "silent", undefined), {
          maxLength: 3
        })
      }),
      { minLength: 1, maxLength: 8 }
    )
    .map((specs) =>
      Catalog.unsafeMake(
        specs.map(
          (s, i): Plugin =>
            plugin(`p${i}`, {
              ...(s.visibility === undefined ? {} : { visibility: s.visibility }),
              tools: s.tools.map((v, j) =>
                tool(
                  `t${i}_${j}`,
                  `Tool ${j}.`,
                  v === undefined || s.visibility === "silent" ? {} : { visibility: v }
                )
              )
            })
        )
      )
    )

  it("for any catalog and any load sequence, the offer before a load is a prefix of the offer after", () => {
    fc.assert(
      fc.property(
        arbitraryCatalog,
        fc.array(
          fc.array(fc.constantFrom("p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "zz"), { maxLength: 3 }),
          {
            maxLength: 8
          }
        ),
        (catalog, loads) => {
          let loaded: ReadonlyArray<string> = []
          let before = names(Offer.offer(catalog, loaded))
          for (const load of loads) {
            loaded = [...loaded, ...load.filter((n) => !loaded.includes(n))]
            const after = names(Offer.offer(catalog, loaded))
            expect(after.slice(0, before.length)).toEqual(before)
            expect(new Set(after).size).toBe(after.length)
            before = after
          }
          // Nothing silent is ever offered.
          for (const n of before) {
            const t = catalog.toolsByName.get(n)
            if (t !== undefined) expect(t.visibility).not.toBe("silent")
          }
        }
      )
    )
  })
})

describe("Offer.gate", () => {
  const catalog = smallCatalog()
  const offered = Offer.offer(catalog, ["maps"])

  it("runs an offered tool", () => {
    const d = Offer.gate(catalog, offered, "route")
    expect(d._tag).toBe("Offered")
    if (d._tag === "Offered") expect(d.tool.plugin).toBe("maps")
  })

  it("refuses a tool of an unloaded plugin and names the plugin to load", () => {
    const d = Offer.gate(catalog, offered, "get_weather")
    expect(d).toMatchObject({ _tag: "NotLoaded", plugin: "weather", tool: "get_weather" })
    if (d._tag === "NotLoaded") {
      expect(d.message).toContain(`Call ${MetaTools.LOAD_CAPABILITY} with {"names": ["weather"]}`)
      expect(d.message).toContain("plugin 'weather'")
    }
    // An always plugin's on-demand tool is refused the same way until the plugin is loaded.
    expect(Offer.gate(catalog, offered, "export_notes")).toMatchObject({ _tag: "NotLoaded", plugin: "notes" })
  })

  it("refuses a silent plugin's tool and a per-tool silent tool, without suggesting a load", () => {
    for (const [toolName, owner] of [
      ["charge", "credits"],
      ["lab_internal", "lab"]
    ] as const) {
      const d = Offer.gate(catalog, Offer.offer(catalog, ["lab"]), toolName)
      expect(d).toMatchObject({ _tag: "Silent", plugin: owner })
      if (d._tag === "Silent") expect(d.message).not.toContain(MetaTools.LOAD_CAPABILITY)
    }
  })

  it("answers an unknown tool with the closest names, never a silent one", () => {
    const d = Offer.gate(catalog, offered, "get_wether")
    expect(d._tag).toBe("Unknown")
    if (d._tag === "Unknown") {
      expect(d.suggestions[0]).toBe("get_weather")
      expect(d.suggestions).toHaveLength(3)
      expect(d.message).toContain("'get_weather'")
      expect(d.message).toContain(MetaTools.LIST_CAPABILITIES)
    }
    const c = Offer.gate(catalog, offered, "chargee")
    if (c._tag === "Unknown") expect(c.suggestions).not.toContain("charge")
    expect(Offer.GateDecision.$is("Unknown")(c)).toBe(true)
  })
})

describe("per-request tools (Offer.requestTools, Offer.gate)", () => {
  // `mcp`: on-demand with request tools; `pinned`: always, with an on-demand override; `quiet`:
  // silent. Resolved by core, as an adapter resolves what the hooks returned.
  const catalog = Catalog.unsafeMake([
    ...smallPlugins(),
    plugin("mcp", { tools: [tool("mcp_status")] }),
    plugin("pinned", { visibility: "always" }),
    plugin("quiet", { visibility: "silent" })
  ])
  const resolve = (pluginName: string, t: PluginTool): Offer.RequestTool => {
    const resolved = Catalog.resolveRequestTool(catalog, pluginName, t)
    if (Either.isLeft(resolved)) throw resolved.left
    return Offer.fromRequestTool(resolved.right)
  }
  const requestTools = [
    resolve("mcp", tool("mcp_search", "Search.")),
    resolve("pinned", tool("pinned_now", "Always there.")),
    resolve("pinned", tool("pinned_later", "After a load.", { visibility: "on-demand" })),
    resolve("quiet", tool("quiet_tool", "Internal."))
  ]

  it("offers always-tier request tools at once and on-demand ones once their plugin is loaded", () => {
    expect(names(Offer.requestTools(catalog, [], requestTools))).toEqual(["pinned_now"])
    expect(names(Offer.requestTools(catalog, ["mcp", "pinned", "quiet"], requestTools))).toEqual([
      "mcp_search",
      "pinned_now",
      "pinned_later"
    ])
    const offered = Offer.offer(catalog, ["mcp"], Offer.requestTools(catalog, ["mcp"], requestTools))
    expect(names(offered).slice(-3)).toEqual(["mcp_status", "mcp_search", "pinned_now"])
    expect(offered.at(-1)).toMatchObject({
      kind: "request",
      plugin: "pinned",
      description: "[Pinned] Always there."
    })
  })

  it("never offers a request tool of a plugin the catalog does not know", () => {
    const stray: Offer.RequestTool = { ...requestTools[1]!, plugin: "ghost" }
    expect(Offer.requestTools(catalog, ["ghost"], [stray])).toEqual([])
  })

  it("answers a request tool of an unloaded plugin with the plugin to load", () => {
    const offered = Offer.offer(catalog, [], Offer.requestTools(catalog, [], requestTools))
    for (const [name, owner] of [
      ["mcp_search", "mcp"],
      ["pinned_later", "pinned"]
    ] as const) {
      const d = Offer.gate(catalog, offered, name, requestTools)
      expect(d).toMatchObject({ _tag: "NotLoaded", plugin: owner, tool: name })
      if (d._tag === "NotLoaded") expect(d.message).toBe(Offer.notLoadedMessage(name, owner))
    }
    expect(Offer.gate(catalog, offered, "pinned_now", requestTools)._tag).toBe("Offered")
    expect(Offer.gate(catalog, offered, "quiet_tool", requestTools)).toMatchObject({
      _tag: "Silent",
      plugin: "quiet"
    })
    // Without the request's tools the gate cannot know them.
    expect(Offer.gate(catalog, offered, "mcp_search")._tag).toBe("Unknown")
  })

  it("suggests request tools for a typo, never a silent one", () => {
    const offered = Offer.offer(catalog, [], [])
    const d = Offer.gate(catalog, offered, "mcp_serch", requestTools)
    expect(d._tag === "Unknown" && d.suggestions[0]).toBe("mcp_search")
    const q = Offer.gate(catalog, offered, "quiet_tol", requestTools)
    expect(q._tag === "Unknown" && q.suggestions).not.toContain("quiet_tool")
  })
})

describe("Offer.gate never throws, whatever the model sends as a name", () => {
  const catalog = smallCatalog()
  const offered = Offer.offer(catalog, ["maps"])
  const offeredNames = new Set(names(offered))

  it("refuses a name that is not a string as an unknown tool, saying what it got", () => {
    for (const [value, type] of [
      [undefined, "undefined"],
      [null, "null"],
      [42, "number"],
      [["route"], "array"],
      [{ name: "route" }, "object"]
    ] as const) {
      const d = Offer.gate(catalog, offered, value)
      expect(d).toMatchObject({ _tag: "Unknown", tool: "", suggestions: [] })
      if (d._tag === "Unknown") expect(d.message).toContain(`this call's name was ${type}`)
    }
  })

  it("clips and escapes a huge or hostile name in its message, and suggests nothing for it", () => {
    const d = Offer.gate(catalog, offered, `get_weather\n${"x".repeat(100_000)}`)
    expect(d._tag).toBe("Unknown")
    if (d._tag === "Unknown") {
      expect(d.suggestions).toEqual([])
      expect(d.message.length).toBeLessThan(400)
      expect(d.message).toContain("get_weather\\u000a")
    }
  })

  it("property: any value gives a decision, Offered exactly when it is an offered name", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything(),
          fc.string({ unit: "binary", maxLength: 300 }),
          fc.constantFrom(...offeredNames, "get_weather", "charge", "__proto__", "constructor", "")
        ),
        (value) => {
          const d = Offer.gate(catalog, offered, value)
          expect(d._tag === "Offered").toBe(typeof value === "string" && offeredNames.has(value))
          if (d._tag !== "Offered") expect(typeof d.message).toBe("string")
        }
      ),
      { numRuns: 300 }
    )
  })
})
