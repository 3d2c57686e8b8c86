/**
 * A catalog of 200 MCP-derived plugins, one real server (`server-everything`) mounted under 200
 * names: booted from the tool-list cache (no server is spawned), every plugin is in the catalog
 * and loadable, and a turn with nothing loaded costs exactly the tokens it costs without them
 * (exact o200k counts): the catalog grows, the prompt does not.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Catalog, LoadedPlugins, MetaTools, Offer, SystemPrompt, TokenBudget } from "@plugboard/core"
import { McpCache, McpConfig, McpPool } from "@plugboard/mcp"
import { cachedCounter, loadTiktokenCounter } from "@plugboard/tokenizers"
import { Either } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { weather } from "../../../examples/plugins/weather.js"
import { loadSources } from "../src/Sources.js"
import { countingEverything } from "./mcpHelpers.js"

describe("200 MCP-derived plugins", () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-mcp-200-"))
  const cacheDir = join(dir, "cache")
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  // server-everything behind a wrapper that counts its starts, so the test sees any spawn.
  const { script: wrapper, starts } = countingEverything(dir)
  // 200 names for one server, each its own config key (and cache file).
  const config = {
    mcpServers: Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [
        `everything-${i}`,
        { command: process.execPath, args: [wrapper] }
      ])
    )
  }

  it("boots from the cache without spawning, and costs nothing until one is loaded", async () => {
    // Fill the cache from one real answer of the server, under every name.
    const parsed = McpConfig.parse(config)
    expect(parsed.errors).toEqual([])
    const pool = new McpPool()
    const description = await pool.describe(parsed.servers[0]!)
    await pool.close()
    expect(starts()).toBe(1)
    for (const server of parsed.servers) await McpCache.write(cacheDir, server, description)

    const started = performance.now()
    const sources = await loadSources([weather], { mcpServers: config, cwd: dir, cacheDir })
    const catalog = Either.getOrThrow(Catalog.make([weather, ...sources.plugins]))
    const bootMs = performance.now() - started
    await sources.close()
    expect(starts()).toBe(1)
    expect(sources.errors).toEqual([])
    // One clash warning for the whole group: 200 copies of one server share every tool name (issue 36, item 19).
    expect(sources.warnings).toEqual([
      expect.stringMatching(/^\[boot-warning\] 200 plugins \(.* and 196 more\) share \d+ tool names /)
    ])
    expect(catalog.entries).toHaveLength(201)
    // Every server's tools collide with the 199 others': each is offered under its own namespace.
    expect(catalog.toolsByName.has("everything-7__echo")).toBe(true)
    expect(catalog.byName.get("everything-7")?.unavailable).toBeUndefined()
    // Not a benchmark (`pnpm bench mcp` measures it): a bound only a hang would break.
    expect(bootMs).toBeLessThan(20_000)

    const counter = cachedCounter(await loadTiktokenCounter("o200k"))
    const without = Either.getOrThrow(Catalog.make([weather]))
    const cost = (c: Catalog.Catalog, loaded: LoadedPlugins.LoadedPlugins = LoadedPlugins.empty) =>
      TokenBudget.turnCost({ catalog: c, loadedPlugins: loaded, basePrompt: "You help.", counter })
    expect(cost(catalog)).toEqual(cost(without))
    expect(Offer.offer(catalog, LoadedPlugins.empty)).toEqual(Offer.offer(without, LoadedPlugins.empty))
    const prompt = (c: Catalog.Catalog) =>
      SystemPrompt.compose({ basePrompt: "You help.", catalog: c, loadedPlugins: LoadedPlugins.empty })
    expect(prompt(catalog)).toBe(prompt(without))

    // Loading one adds that server's tools, and only those.
    const load = Either.getOrThrow(MetaTools.loadCapability(catalog, [], { names: ["everything-42"] }))
    expect(load.newlyLoaded).toEqual(["everything-42"])
    const loaded = cost(catalog, load.loadedPlugins)
    const report = TokenBudget.budgetReport(catalog, { basePrompt: "You help.", counter, k: 1 })
    expect(loaded.total - cost(catalog).total).toBe(
      report.perPlugin.find((p) => p.name === "everything-42")!.cost
    )
    expect(Offer.offer(catalog, load.loadedPlugins).map((t) => t.name)).toContain("everything-42__echo")
  }, 60_000)
})
