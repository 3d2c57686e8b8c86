/**
 * The examples' catalog: it builds clean, its manifests follow the house rules a newcomer copies,
 * routing over it is good (issue 5: leave-one-out recall@5 >= 0.9), and every tool of every
 * plugin runs on its manifest example's arguments, deterministically and without error.
 */
import { Catalog, MetaTools, makeRuntimeContext, Offer, type Plugin, Tier1 } from "@plugboard/core"
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import {
  AUDIT_LOG_LIMIT,
  auditRecords,
  ExampleStore,
  exampleCatalog,
  examplePlugins,
  makeExamplePlugins
} from "./index.js"
import { evaluateRouting } from "./routing.js"

const FIXED_NOW = () => new Date("2025-06-02T10:30:00Z")

const context = (did = "did:key:z6MkExampleUser") =>
  makeRuntimeContext({
    state: { messages: [], config: { did }, loadedPlugins: [] } as never,
    sessionId: "session-1",
    did
  })

/** Runs each tool of `plugin` once: first its examples' calls in manifest order, then any tool left. */
const runEveryTool = async (plugin: Plugin, did?: string) => {
  const tools = plugin.tools ?? []
  const calls: Array<{ tool: string; args: Record<string, unknown> }> = []
  for (const example of plugin.manifest.examples ?? []) {
    if (!calls.some((c) => c.tool === example.tool))
      calls.push({ tool: example.tool, args: example.args ?? {} })
  }
  const ctx = context(did)
  const results: Array<{ tool: string; output: string }> = []
  for (const call of calls) {
    const tool = tools.find((t) => t.name === call.tool)!
    // Exactly what the agent's tool node does: decode with the tool's schema, then run.
    const input = Schema.decodeUnknownSync(tool.input)(call.args)
    results.push({ tool: call.tool, output: JSON.stringify(await tool.handler(input, ctx)) })
  }
  return results
}

describe("the examples' catalog", () => {
  it("builds with no errors and no warnings", () => {
    const built = Catalog.make(examplePlugins)
    expect(Either.isRight(built) ? [] : built.left.lines).toEqual([])
    expect(Either.getOrThrow(built).warnings).toEqual([])
    expect(exampleCatalog.entries).toHaveLength(examplePlugins.length)
  })

  it("has at least 50 on-demand plugins, two always plugins, one silent and one mixed", () => {
    const by = (v: string) => exampleCatalog.entries.filter((e) => e.visibility === v).map((e) => e.name)
    expect(by("on-demand").length).toBeGreaterThanOrEqual(50)
    expect(by("on-demand")).toContain("weather")
    expect(by("always")).toEqual(["notes", "clock"])
    expect(by("silent")).toEqual(["audit-log"])
    const prefs = exampleCatalog.byName.get("user-preferences")!
    expect(prefs.alwaysTools.map((t) => t.name)).toEqual(["get_preferences"])
    expect(prefs.onDemandTools.map((t) => t.name)).toEqual(["set_preference", "reset_preferences"])
  })

  it("keeps the house rules on every on-demand and always manifest", () => {
    for (const entry of exampleCatalog.entries) {
      if (entry.visibility === "silent") continue
      const m = entry.manifest
      const where = `plugin '${entry.name}'`
      expect(m.summary.length, where).toBeLessThanOrEqual(120)
      expect(m.whenToUse?.length ?? 0, where).toBeGreaterThanOrEqual(2)
      expect(m.whenToUse?.length ?? 0, where).toBeLessThanOrEqual(5)
      expect(m.examples?.length ?? 0, where).toBeGreaterThanOrEqual(2)
      expect(m.examples?.length ?? 0, where).toBeLessThanOrEqual(4)
      expect(m.category, where).toBeDefined()
      expect(m.stability, where).toBeDefined()
      for (const tag of m.tags ?? []) expect(tag, where).toBe(tag.toLowerCase())
      expect(entry.tools.length, where).toBeGreaterThanOrEqual(2)
      expect(entry.tools.length, where).toBeLessThanOrEqual(4)
      // Every tool is taught by at least one example, so the router and the tests can call it.
      for (const tool of entry.tools) {
        expect(
          m.examples?.some((e) => e.tool === tool.name),
          `${where} tool '${tool.name}' has no example`
        ).toBe(true)
      }
    }
  })

  it("routes its own examples: leave-one-out recall@5 >= 0.9 (issue 5)", () => {
    const report = evaluateRouting(exampleCatalog)
    expect(report.queries).toBeGreaterThanOrEqual(100)
    expect(report.recallAt5, JSON.stringify(report.misses, null, 1)).toBeGreaterThanOrEqual(0.9)
    expect(report.recallAt1).toBeGreaterThanOrEqual(0.8)
  })

  it("lists only the always plugins in the Tier-1 block", () => {
    const block = Tier1.render(exampleCatalog)
    const lines = block.split("\n").filter((l) => l.startsWith("- "))
    expect(lines.map((l) => l.slice(2, l.indexOf(":")))).toEqual(["clock", "notes"])
  })

  it("offers the mixed plugin's always tool without a load, the rest only after load_capability", () => {
    const before = Offer.offer(exampleCatalog, []).map((t) => t.name)
    expect(before).toContain("get_preferences")
    expect(before).not.toContain("set_preference")
    const load = Either.getOrThrow(
      MetaTools.loadCapability(exampleCatalog, [], { names: ["user-preferences"] })
    )
    const after = Offer.offer(exampleCatalog, load.loadedPlugins).map((t) => t.name)
    expect(after).toContain("set_preference")
    expect(after.slice(0, before.length)).toEqual(before)
    // Silent plugins are never loadable.
    const silent = MetaTools.loadCapability(exampleCatalog, [], { names: ["audit-log"] })
    expect(Either.isRight(silent) && silent.right.results[0]?.status).toBe("error")
  })

  it("runs every tool on its example arguments, the same way in two fresh catalogs", async () => {
    const first = makeExamplePlugins({ now: FIXED_NOW })
    const second = makeExamplePlugins({ now: FIXED_NOW })
    let ran = 0
    for (const [i, plugin] of first.entries()) {
      if (plugin.manifest.visibility === "silent") continue
      const a = await runEveryTool(plugin)
      const b = await runEveryTool(second[i]!)
      expect(a.map((r) => r.tool).sort(), plugin.name).toEqual((plugin.tools ?? []).map((t) => t.name).sort())
      expect(a, plugin.name).toEqual(b)
      for (const r of a) expect(r.output, `${plugin.name}.${r.tool}`).not.toMatch(/^"?$/)
      ran += a.length
    }
    expect(ran).toBe(exampleCatalog.toolsByName.size)
  })

  it("keeps each catalog's writes in its own store, and each user's notes apart", async () => {
    const storeA = new ExampleStore()
    const a = makeExamplePlugins({ store: storeA, now: FIXED_NOW })
    const b = makeExamplePlugins({ now: FIXED_NOW })
    const tool = (plugins: ReadonlyArray<Plugin>, name: string) =>
      plugins.flatMap((p) => p.tools ?? []).find((t) => t.name === name)!
    await tool(a, "save_note").handler({ text: "gate code 4471", tags: [] }, context("did:key:alice"))
    const mine = (await tool(a, "search_notes").handler({ query: "gate" }, context("did:key:alice"))) as {
      matches: ReadonlyArray<unknown>
    }
    const theirs = (await tool(a, "search_notes").handler({ query: "gate" }, context("did:key:bob"))) as {
      matches: ReadonlyArray<unknown>
    }
    const otherCatalog = (await tool(b, "search_notes").handler(
      { query: "gate" },
      context("did:key:alice")
    )) as {
      matches: ReadonlyArray<unknown>
    }
    expect([mine.matches.length, theirs.matches.length, otherCatalog.matches.length]).toEqual([1, 0, 0])
    expect(storeA.list("notes:did:key:alice")).toHaveLength(1)
  })

  it("serves each user only their own audit records on the audit-log route", async () => {
    const store = new ExampleStore()
    const audit = makeExamplePlugins({ store }).find((p) => p.name === "audit-log")!
    const [middleware] = audit.middlewares!
    await middleware!.beforeModel!(
      { system: "", messages: [], tools: [{ name: "a" }, { name: "b" }] },
      context("did:key:alice")
    )
    await middleware!.afterModel!(
      { message: {}, usage: { inputTokens: 10, outputTokens: 2 } },
      context("did:key:alice")
    )
    await middleware!.beforeModel!(
      { system: "", messages: [], tools: [{ name: "a" }] },
      context("did:key:bob")
    )
    const route = audit.routes![0]!
    const request = {
      method: "GET",
      path: route.path,
      params: {},
      query: {},
      headers: {},
      body: undefined,
      shared: {}
    }
    const alice = await route.handler({ ...request, userDid: "did:key:alice" })
    expect(alice.body).toEqual({
      records: [
        {
          did: "did:key:alice",
          sessionId: "session-1",
          offeredTools: 2,
          usage: { inputTokens: 10, outputTokens: 2 }
        }
      ]
    })
    const bob = await route.handler({ ...request, userDid: "did:key:bob" })
    expect((bob.body as { records: ReadonlyArray<unknown> }).records).toHaveLength(1)
  })

  it("keeps only the most recent AUDIT_LOG_LIMIT audit records (a long-running server does not grow)", async () => {
    const store = new ExampleStore()
    const [middleware] = makeExamplePlugins({ store }).find((p) => p.name === "audit-log")!.middlewares!
    for (let i = 0; i < AUDIT_LOG_LIMIT + 5; i++) {
      await middleware!.beforeModel!(
        { system: "", messages: [], tools: Array.from({ length: i % 7 }, () => ({ name: "t" })) },
        context()
      )
    }
    const records = auditRecords(store)
    expect(records).toHaveLength(AUDIT_LOG_LIMIT)
    // The oldest five went; the newest is last.
    expect(records[0]!.offeredTools).toBe(5 % 7)
    expect(records.at(-1)!.offeredTools).toBe((AUDIT_LOG_LIMIT + 4) % 7)
    // However long it runs, what it stores stays bounded (a quarter of slack between trims).
    for (let i = AUDIT_LOG_LIMIT + 5; i < 4 * AUDIT_LOG_LIMIT; i++) {
      await middleware!.beforeModel!(
        { system: "", messages: [], tools: Array.from({ length: i % 7 }, () => ({ name: "t" })) },
        context()
      )
      expect(store.list("audit-log").length).toBeLessThanOrEqual(AUDIT_LOG_LIMIT * 1.25)
    }
    const later = auditRecords(store)
    expect(later).toHaveLength(AUDIT_LOG_LIMIT)
    expect(later.at(-1)!.offeredTools).toBe((4 * AUDIT_LOG_LIMIT - 1) % 7)
    expect(later[0]!.offeredTools).toBe((3 * AUDIT_LOG_LIMIT) % 7)
  })

  it("answers bad input with a clear error and changes nothing", async () => {
    const plugins = makeExamplePlugins({ now: FIXED_NOW })
    const tool = (name: string) => plugins.flatMap((p) => p.tools ?? []).find((t) => t.name === name)!
    // An unknown key names the known ones.
    await expect(async () => tool("get_invoice").handler({ id: "INV-9" }, context())).rejects.toThrow(
      /Unknown invoice 'INV-9'.*INV-1001/
    )
    // The schema refuses a malformed date before any handler runs.
    expect(Either.isLeft(Schema.decodeUnknownEither(tool("list_events").input)({ date: "June 2nd" }))).toBe(
      true
    )
    // A failed stock adjustment leaves the stock as it was.
    await expect(async () =>
      tool("adjust_stock").handler({ sku: "SKU-103", delta: -1000, reason: "shipped" }, context())
    ).rejects.toThrow(/only 3 in stock/)
    expect(await tool("check_stock").handler({ product: "SKU-103" }, context())).toMatchObject({
      quantity: 3
    })
  })
})
