/**
 * The MetaTool benchmark fixture: 199 real ChatGPT plugins become a valid catalog (no errors, no
 * warnings), every tool says and returns "not available offline", names are kebab-case with
 * collisions resolved deterministically, a missing data file is a clear error, and ranking the
 * labelled dev queries beats the benchmark's plain-BM25 baseline (recall@5 0.548) by 10 points.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { CapabilityIndex, Catalog, isPluginName, makeRuntimeContext } from "@plugboard/core"
import { Either, Schema } from "effect"
import { afterAll, describe, expect, it } from "vitest"

const dir = mkdtempSync(join(tmpdir(), "plugboard-metatool-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// The benchmark data lives in ../shared beside the repository (CI clones it there). A clone
// without it skips this file and says why instead of failing on a missing fixture.
const DATA = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
  "shared",
  "benchmarks",
  "metatool",
  "plugins.json"
)
const present = existsSync(DATA)
if (!present) console.warn(`SKIPPED: MetaTool benchmark data not found at ${DATA}`)
const {
  kebabName,
  loadMetaToolPlugins,
  METATOOL_DIR,
  MetaToolDataMissingError,
  metatoolAliases,
  metatoolCatalog,
  metatoolPlugins,
  NOT_AVAILABLE_OFFLINE,
  readMetaToolEntries
} = present ? await import("./index.js") : ({} as typeof import("./index.js"))

describe.skipIf(!present)("the MetaTool benchmark catalog", () => {
  it("builds all 199 plugins with no errors and no warnings", () => {
    const built = Catalog.make(metatoolPlugins)
    expect(Either.isRight(built) ? [] : built.left.lines).toEqual([])
    expect(Either.getOrThrow(built).warnings).toEqual([])
    expect(metatoolCatalog.entries).toHaveLength(199)
    for (const p of metatoolPlugins) {
      expect(isPluginName(p.name), p.name).toBe(true)
      expect(p.manifest.visibility).toBe("on-demand")
    }
    expect(new Set(metatoolAliases.values()).size).toBe(199)
  })

  it("maps the benchmark's fields honestly", () => {
    const finance = metatoolCatalog.byName.get(metatoolAliases.get("FinanceTool")!)!
    expect(finance.name).toBe("finance-tool")
    expect(finance.manifest.title).toBe("Finance Tool")
    expect(finance.manifest.tags).toEqual(["finance"])
    const timeport = metatoolCatalog.byName.get("timeport")!
    expect(timeport.manifest.title).toBe("Timeport")
    // Summaries are the description, cut at a word boundary only when over 120 characters.
    const entries = readMetaToolEntries()
    let cut = 0
    entries.forEach((e, i) => {
      const description = e.description.replace(/\s+/g, " ").trim()
      const summary = metatoolPlugins[i]!.manifest.summary
      expect(summary.length).toBeLessThanOrEqual(120)
      if (description.length <= 120) expect(summary).toBe(description)
      else {
        cut++
        expect(summary.endsWith("…")).toBe(true)
        expect(description.startsWith(summary.slice(0, -1))).toBe(true)
      }
    })
    expect(cut).toBeGreaterThan(0)
    expect(timeport.manifest.whenToUse?.[0]).toMatch(/^An entertaining and educational time-travel game/)
    expect(kebabName("PDF&URLTool")).toBe("pdf-url-tool")
    expect(kebabName("Google_Ads_Shopping_Microsoft_Ads_pay_per_click")).toBe(
      "google-ads-shopping-microsoft-ads-pay-per-click"
    )
  })

  it("has one tool per plugin that says, and returns, 'not available offline'", async () => {
    const ctx = makeRuntimeContext({
      state: { messages: [], config: { did: "did:key:x" }, loadedPlugins: [] } as never,
      sessionId: "s",
      did: "did:key:x"
    })
    for (const p of metatoolPlugins) {
      expect(p.tools).toHaveLength(1)
      const tool = p.tools![0]!
      expect(tool.description).toContain(NOT_AVAILABLE_OFFLINE)
      expect(tool.description).toMatch(/^Benchmark fixture/)
      const input = Schema.decodeUnknownSync(tool.input)({ request: "anything" })
      const first = await tool.handler(input, ctx)
      expect(first).toEqual(await tool.handler(input, ctx))
      expect(first).toMatchObject({ available: false, result: NOT_AVAILABLE_OFFLINE })
    }
  })

  it("resolves name collisions deterministically, in file order", () => {
    const path = join(dir, "collide.json")
    const entry = (name: string) => ({ name, description: `The ${name} plugin.` })
    writeFileSync(
      path,
      JSON.stringify([entry("FooBar"), entry("foo_bar"), entry("foo-bar"), entry("42things")])
    )
    const { plugins, aliases } = loadMetaToolPlugins(path)
    expect(plugins.map((p) => p.name)).toEqual(["foo-bar", "foo-bar-2", "foo-bar-3", "plugin-42things"])
    expect(aliases.get("foo_bar")).toBe("foo-bar-2")
    expect(Either.isRight(Catalog.make(plugins))).toBe(true)
  })

  it("says where it looked when the data is missing, and rejects malformed data", () => {
    const missing = join(dir, "nope", "plugins.json")
    expect(() => loadMetaToolPlugins(missing)).toThrow(MetaToolDataMissingError)
    expect(() => loadMetaToolPlugins(missing)).toThrow(/not found at .*nope.*shared\/benchmarks\/metatool/)
    const bad = join(dir, "bad.json")
    writeFileSync(bad, JSON.stringify([{ name: 3 }]))
    expect(() => loadMetaToolPlugins(bad)).toThrow(/entry #0 needs string 'name' and 'description'/)
  })

  it("ranks the labelled dev queries at least 10 points above the plain-BM25 baseline (recall@5 0.548)", () => {
    const queries = readFileSync(join(METATOOL_DIR, "queries-dev.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { query: string; plugin: string })
    const index = CapabilityIndex.forCatalog(metatoolCatalog)
    let at5 = 0
    for (const q of queries) {
      const top = CapabilityIndex.rank(index, q.query, { limit: 5 }).map((r) => r.name)
      if (top.includes(metatoolAliases.get(q.plugin)!)) at5++
    }
    expect(queries.length).toBeGreaterThan(2000)
    expect(at5 / queries.length).toBeGreaterThanOrEqual(0.548 + 0.1)
  })
})
