import { Catalog, type Plugin, SystemPrompt, Tier1, TokenCounter } from "@plugboard/core"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, smallCatalog, smallPlugins, tool } from "./fixtures.js"

describe("Tier1.render", () => {
  it("renders the spec's shape: heading, one line per always plugin by name, the hint", () => {
    expect(Tier1.render(smallCatalog())).toBe(
      [
        "## Available Capabilities",
        "",
        "- memory: Durable memory.",
        "- notes: Quick notes.",
        "",
        "For more capabilities, call list_capabilities to discover what else",
        "you can use, then load_capability to make tools available."
      ].join("\n")
    )
  })

  it("never lists on-demand or silent plugins, and keeps a multi-line summary on one line", () => {
    const c = Catalog.unsafeMake([
      plugin("a", { visibility: "always", manifest: { summary: "First line\n  second   line." } }),
      plugin("b"),
      plugin("c", { visibility: "silent" })
    ])
    const text = Tier1.render(c)
    expect(text).toContain("- a: First line second line.")
    expect(text).not.toContain("- b:")
    expect(text).not.toContain("- c:")
  })

  it("with no always plugin, keeps the heading and the hint", () => {
    const c = Catalog.unsafeMake([plugin("b")])
    expect(Tier1.render(c)).toBe(`${Tier1.HEADING}\n\n${Tier1.HINT}`)
  })

  it("does not depend on the order plugins are registered in", () => {
    const plugins = [
      ...smallPlugins(),
      plugin("zeta", { visibility: "always", manifest: { summary: "Z." } }),
      plugin("alpha", { visibility: "always", manifest: { summary: "A." } }),
      plugin("alpha-2", { visibility: "always", manifest: { summary: "A2." } }),
      plugin("beta-tools", { visibility: "always", tools: [tool("beta_x")] })
    ]
    const expected = Tier1.render(Catalog.unsafeMake(plugins))
    fc.assert(
      fc.property(fc.shuffledSubarray(plugins, { minLength: plugins.length }), (shuffled: Array<Plugin>) => {
        expect(Tier1.render(Catalog.unsafeMake(shuffled))).toBe(expected)
      })
    )
  })
})

describe("SystemPrompt.compose", () => {
  it("joins base prompt, Tier-1 block, always-tier prompts, then loaded plugins' prompts in load order", () => {
    const catalog = Catalog.unsafeMake([
      ...smallPlugins(),
      plugin("zz-always", { visibility: "always", prompt: "Always Z." }),
      plugin("guide", { prompt: "  Guide prompt.  " })
    ])
    const text = SystemPrompt.compose({
      basePrompt: "You are Oracle.",
      catalog,
      loadedPlugins: ["guide", "maps", "memory", "credits", "maps"]
    })
    expect(text).toBe(
      [
        "You are Oracle.",
        Tier1.render(catalog),
        "Use memory wisely.",
        "Always Z.",
        "Guide prompt.",
        "Prefer walking."
      ].join("\n\n")
    )
  })

  it("loading only appends to the prompt", () => {
    const catalog = smallCatalog()
    const before = SystemPrompt.compose({ basePrompt: "Base.", catalog, loadedPlugins: [] })
    const after = SystemPrompt.compose({ basePrompt: "Base.", catalog, loadedPlugins: ["maps"] })
    expect(after.startsWith(before)).toBe(true)
    expect(after).not.toBe(before)
  })

  it("leaves out an empty base prompt", () => {
    const catalog = smallCatalog()
    expect(
      SystemPrompt.compose({ basePrompt: "  ", catalog, loadedPlugins: [] }).startsWith(Tier1.HEADING)
    ).toBe(true)
  })
})

describe("TokenCounter.heuristic", () => {
  it("counts words, digit groups, punctuation and newlines like a BPE vocabulary would, roughly", () => {
    const count = TokenCounter.heuristic.count
    expect(count("")).toBe(0)
    expect(count("Hello, world!")).toBe(4)
    expect(count("internationalization")).toBe(3)
    expect(count("12345")).toBe(2)
    expect(count('{"type":"object"}')).toBe(5)
    expect(count("a\nb")).toBe(3)
  })

  it("is provided by layerHeuristic under the TokenCounter tag", () => {
    const n = Effect.runSync(
      Effect.provide(
        Effect.map(TokenCounter.TokenCounter, (c) => c.count("two words")),
        TokenCounter.layerHeuristic
      )
    )
    expect(n).toBe(2)
  })
})
