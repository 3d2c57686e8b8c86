/**
 * `requires` (docs/plugins.md#requiring-capabilities): one rule in core, applied by the listing, the
 * load, the offer, the gate and the system prompt.
 */
import { Access, Catalog, MetaTools, Offer, type Plugin, SystemPrompt } from "@plugboard/core"
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, tool } from "./fixtures.js"

const ADMIN = { can: "admin/read", with: "ixo:oracle" }
const OPS = { can: "ops/restart", with: "ixo:oracle" }

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected success, got ${String(e.left)}`)
  return e.right
}

const plugins = (): ReadonlyArray<Plugin> => [
  plugin("weather", { tools: [tool("get_weather")] }),
  {
    ...plugin("admin", { visibility: "always", tools: [tool("admin_stats")], prompt: "Admin prose." }),
    requires: [ADMIN],
    operatingGuide: "How to administer."
  },
  {
    ...plugin("audit", { tools: [tool("audit_log")] }),
    requires: [ADMIN]
  },
  plugin("ops", {
    visibility: "always",
    tools: [tool("ops_status"), tool("ops_restart", "Restarts the oracle.", { requires: [OPS] })]
  })
]

const messageOf = (d: Offer.GateDecision): string => ("message" in d ? d.message : "")

const catalog = Catalog.unsafeMake(plugins())
const nobody = Access.view(catalog, [])
const admins = Access.view(catalog, [ADMIN, OPS])

describe("Access.covers (UCAN ability rules)", () => {
  it("exact, `*` and `ns/*` cover; another resource never does", () => {
    expect(Access.covers(ADMIN, ADMIN)).toBe(true)
    expect(Access.covers({ can: "*", with: "ixo:oracle" }, ADMIN)).toBe(true)
    expect(Access.covers({ can: "admin/*", with: "ixo:oracle" }, ADMIN)).toBe(true)
    expect(Access.covers({ can: "adm/*", with: "ixo:oracle" }, ADMIN)).toBe(false)
    expect(Access.covers({ can: "admin/write", with: "ixo:oracle" }, ADMIN)).toBe(false)
    expect(Access.covers({ can: "*", with: "ixo:other" }, ADMIN)).toBe(false)
  })

  it("property: a grant of `*` on the resource covers any ability there, and nothing elsewhere", () => {
    const word = fc.stringMatching(/^[a-z]{1,6}$/)
    fc.assert(
      fc.property(word, word, word, word, (ns, action, r1, r2) => {
        const required = { can: `${ns}/${action}`, with: `x:${r1}` }
        expect(Access.covers({ can: "*", with: `x:${r1}` }, required)).toBe(true)
        expect(Access.covers({ can: `${ns}/*`, with: `x:${r1}` }, required)).toBe(true)
        expect(Access.covers({ can: "*", with: `x:${r2}` }, required)).toBe(r1 === r2)
        expect(Access.missing([], [required])).toEqual([required])
      })
    )
  })
})

describe("requires at boot", () => {
  it("a malformed requirement is a boot error naming the plugin or the tool", () => {
    const bad = Catalog.make([
      { ...plugin("a", { tools: [tool("a_t")] }), requires: [{ can: "admin/*", with: "ixo:oracle" }] },
      { ...plugin("b", { tools: [tool("b_t", "B.", { requires: [{ can: "read", with: "" } as never] })] }) },
      { ...plugin("c", { tools: [tool("c_t")] }), requires: "admin" as never }
    ])
    expect(Either.isLeft(bad)).toBe(true)
    if (Either.isRight(bad)) return
    expect(bad.left.errors).toEqual([
      "Plugin 'a' field 'requires' #0 has ability 'admin/*': an ability is 'namespace/action' (letters, digits, '.', '_', '-'; no wildcard).",
      "Plugin 'b' tool 'b_t' field 'requires' #0 has ability 'read': an ability is 'namespace/action' (letters, digits, '.', '_', '-'; no wildcard).",
      "Plugin 'c' field 'requires' must be a list of { can, with } capabilities."
    ])
  })
})

describe("a user who lacks the capabilities", () => {
  it("sees the plugin listed as unavailable, with the reason", () => {
    const r = right(MetaTools.listCapabilities(catalog, [], {}, nobody))
    const admin = r.plugins.find((p) => p.name === "admin")!
    expect(admin.unavailable).toBe(
      "It requires { can: 'admin/read', with: 'ixo:oracle' }, which your credentials do not grant."
    )
    expect(admin.loaded).toBe(false)
    expect(r.plugins.find((p) => p.name === "weather")!.unavailable).toBeUndefined()
  })

  it("is refused by load_capability, and nothing is loaded (even a name loaded earlier)", () => {
    const r = right(
      MetaTools.loadCapability(catalog, ["audit"], { names: ["audit", "admin", "weather"] }, [], nobody)
    )
    expect(r.results.map((o) => [o.name, o.status, o.status === "error" ? o.error : undefined])).toEqual([
      ["audit", "error", "not-granted"],
      ["admin", "error", "not-granted"],
      ["weather", "loaded", undefined]
    ])
    expect(r.newlyLoaded).toEqual(["weather"])
    const refused = r.results[0]
    expect(refused?.status === "error" && refused.message).toContain(
      "{ can: 'admin/read', with: 'ixo:oracle' }"
    )
  })

  it("is not offered its always-tier tools, nor a loaded plugin's, nor a tool hidden by its own requires", () => {
    const names = Offer.offer(catalog, ["audit", "weather"], [], nobody).map((t) => t.name)
    expect(names).toEqual(["list_capabilities", "load_capability", "ops_status", "get_weather"])
  })

  it("a call to such a tool is refused with the reason; a hidden admin tool is unknown and never suggested", () => {
    const offered = Offer.offer(catalog, [], [], nobody)
    const denied = Offer.gate(catalog, offered, "admin_stats", [], nobody)
    expect(denied._tag).toBe("NotGranted")
    expect(messageOf(denied)).toContain("which your credentials do not grant")
    const hidden = Offer.gate(catalog, offered, "ops_restart", [], nobody)
    expect(hidden._tag).toBe("Unknown")
    // Answered exactly as a name that does not exist: nothing says the tool is there.
    expect(messageOf(hidden)).toMatch(/^There is no tool named 'ops_restart'\./)
    expect(messageOf(hidden)).not.toContain("plugin 'ops'")
    const typo = Offer.gate(catalog, offered, "ops_restar", [], nobody)
    expect(typo._tag === "Unknown" && typo.suggestions).not.toContain("ops_restart")
  })

  it("its system prompt has no Tier-1 line, prompt nor guide of a denied always plugin", () => {
    const prompt = SystemPrompt.compose({ basePrompt: "", catalog, loadedPlugins: [], view: nobody })
    expect(prompt).not.toContain("- admin:")
    expect(prompt).not.toContain("Admin prose.")
    expect(prompt).not.toContain("How to administer.")
    expect(prompt).toContain("- ops:")
  })

  it("a loaded plugin's result lists no tool hidden by its own requires", () => {
    const loadedOps = right(
      MetaTools.loadCapability(
        Catalog.unsafeMake([
          plugin("ops", { tools: [tool("ops_status"), tool("ops_restart", "R.", { requires: [OPS] })] })
        ]),
        [],
        { names: ["ops"] }
      )
    )
    const outcome = loadedOps.results[0]
    expect(outcome?.status === "loaded" && outcome.tools.map((t) => t.name)).toEqual(["ops_status"])
  })
})

describe("a loaded plugin's manifest", () => {
  const ops = Catalog.unsafeMake([
    plugin("ops", {
      tools: [tool("ops_status"), tool("ops_restart", "R.", { requires: [OPS] })],
      manifest: {
        examples: [
          { user: "Is the oracle up?", tool: "ops_status" },
          { user: "Restart the oracle.", tool: "ops_restart" }
        ]
      }
    })
  ])
  const examplesFor = (view: Access.View) => {
    const outcome = right(MetaTools.loadCapability(ops, [], { names: ["ops"] }, [], view)).results[0]
    return outcome?.status === "loaded" ? outcome.manifest.examples?.map((e) => e.tool) : undefined
  }
  it("shows no example of a tool hidden from the user, and every example to a user granted it", () => {
    expect(examplesFor(Access.view(ops, []))).toEqual(["ops_status"])
    expect(examplesFor(Access.view(ops, [OPS]))).toEqual(["ops_status", "ops_restart"])
    expect(JSON.stringify(right(MetaTools.loadCapability(ops, [], { names: ["ops"] })))).not.toContain(
      "ops_restart"
    )
  })
})

describe("a user granted the capabilities", () => {
  it("is offered everything, and the prompt carries the always plugin's prompt and guide", () => {
    expect(Offer.offer(catalog, ["audit"], [], admins).map((t) => t.name)).toEqual([
      "list_capabilities",
      "load_capability",
      "admin_stats",
      "ops_status",
      "ops_restart",
      "audit_log"
    ])
    const r = right(MetaTools.loadCapability(catalog, [], { names: ["audit"] }, [], admins))
    expect(r.newlyLoaded).toEqual(["audit"])
    const prompt = SystemPrompt.compose({ basePrompt: "", catalog, loadedPlugins: [], view: admins })
    expect(prompt).toContain("- admin:")
    expect(prompt).toContain("Admin prose.\n\nHow to administer.")
  })

  it("views are cached per set of grants, in any order", () => {
    expect(Access.view(catalog, [OPS, ADMIN])).toBe(admins)
    expect(Access.view(catalog)).toBe(nobody)
  })

  it("a catalog without requirements is open to everybody, and the defaults change nothing", () => {
    const open = Catalog.unsafeMake([plugin("weather", { tools: [tool("get_weather")] })])
    expect(Access.view(open).open).toBe(true)
    expect(Offer.offer(open, ["weather"]).map((t) => t.name)).toContain("get_weather")
  })
})

describe("invariants (property)", () => {
  const all = [ADMIN, OPS]
  const pluginNames = ["weather", "admin", "audit", "ops"]
  const toolOwner = new Map(catalog.entries.flatMap((e) => e.tools.map((t) => [t.name, e] as const)))

  it("whatever the grants and loads: no tool of a denied plugin nor a hidden tool is offered, listed or loaded; full grants offer what the unrestricted view does", () => {
    fc.assert(
      fc.property(fc.subarray(all), fc.subarray(pluginNames), (grants, loaded) => {
        const v = Access.view(catalog, grants)
        const offered = Offer.offer(catalog, loaded, [], v)
        for (const t of offered) {
          if (t.kind === "meta") continue
          const owner = toolOwner.get(t.name)!
          expect(Access.missing(grants, owner.requires ?? [])).toEqual([])
          expect(Access.missing(grants, owner.tools.find((x) => x.name === t.name)!.requires ?? [])).toEqual(
            []
          )
        }
        const load = right(MetaTools.loadCapability(catalog, [], { names: pluginNames }, [], v))
        for (const name of load.newlyLoaded) {
          expect(Access.missing(grants, catalog.byName.get(name)!.requires ?? [])).toEqual([])
        }
        for (const r of load.results) {
          if (r.status === "loaded") for (const t of r.tools) expect(v.hiddenTools.has(t.name)).toBe(false)
        }
        const listed = right(MetaTools.listCapabilities(catalog, loaded, {}, v)).plugins
        for (const p of listed) {
          const lacks = Access.missing(grants, catalog.byName.get(p.name)!.requires ?? []).length > 0
          expect(p.unavailable !== undefined).toBe(lacks)
        }
        if (grants.length === all.length) {
          expect(offered).toEqual(Offer.offer(catalog, loaded, [], Access.unrestricted))
        }
        // Loading only appends, for every user: the offer with nothing loaded is a prefix.
        const base = Offer.offer(catalog, [], [], v)
        expect(offered.slice(0, base.length)).toEqual(base)
      })
    )
  })
})
