import { join } from "node:path"
import { Catalog, CatalogSource } from "@plugboard/core"
import { generateSigner } from "@plugboard/ucan"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import * as Cache from "../src/Cache.js"
import * as Discovery from "../src/Discovery.js"
import { mcpSpecs } from "../src/McpPlugins.js"
import { McpPool } from "../src/Pool.js"
import type { McpRequestOptions, McpServerConfig } from "../src/Types.js"
import { readInvocationUser } from "../src/Ucan.js"
import {
  description,
  everythingBin,
  fixtures,
  recordingLogger,
  scriptedPool,
  serverOf,
  serversOf,
  tempDir
} from "./fixtures-config/helpers.js"

let dir: string
let cleanup: () => Promise<void>
beforeEach(async () => {
  ;({ dir, cleanup } = await tempDir())
})
afterEach(() => cleanup())

describe("discover (scripted pool)", () => {
  it("asks at most `concurrency` servers at once and answers in config order", async () => {
    const config: Record<string, unknown> = {}
    for (let i = 0; i < 20; i++) config[`s-${i}`] = { command: "x", args: [String(i)] }
    const servers = serversOf(config)
    // Later servers answer sooner: order must come from the config, not from who finishes first.
    const pool = scriptedPool({ describe: (s) => ({ delayMs: 40 - 2 * Number(s.name.slice(2)) }) })
    const found = await Discovery.discover(servers, { pool, cacheDir: dir, concurrency: 3 })
    expect(pool.maxActive).toBe(3)
    expect(found.map((d) => d.server.name)).toEqual(servers.map((s) => s.name))
    expect(found.map((d) => d.description?.serverInfo.name)).toEqual(servers.map((s) => s.name))
    expect(found.every((d) => !d.fromCache && d.error === undefined)).toBe(true)
  })

  it("defaults to 8 at once", async () => {
    const config: Record<string, unknown> = {}
    for (let i = 0; i < 12; i++) config[`s-${i}`] = { command: "x", args: [String(i)] }
    const pool = scriptedPool({ describe: () => ({ delayMs: 20 }) })
    await Discovery.discover(serversOf(config), { pool, cacheDir: dir })
    expect(pool.maxActive).toBe(Discovery.DEFAULT_CONCURRENCY)
  })

  it("a cache hit asks nothing; refresh asks again", async () => {
    const servers = serversOf({ a: { command: "x" }, b: { command: "y" } })
    const pool = scriptedPool({})
    await Discovery.discover(servers, { pool, cacheDir: dir })
    expect([...pool.described].sort()).toEqual(["a", "b"])
    const again = await Discovery.discover(servers, { pool, cacheDir: dir })
    expect(pool.described).toHaveLength(2)
    expect(again.map((d) => d.fromCache)).toEqual([true, true])
    expect(again[0]?.description).toEqual(description("a"))
    await Discovery.discover(servers, { pool, cacheDir: dir, refresh: true })
    expect([...pool.described].sort()).toEqual(["a", "a", "b", "b"])
  })

  it("bounds a server that never answers by its timeoutMs, and aborts the request", async () => {
    const server = serverOf("slow", { command: "x", timeoutMs: 150 })
    let aborted = false
    const pool = scriptedPool({ describe: () => ({ hang: true }) })
    const describeAndWatch = pool.describe
    const watching = {
      ...pool,
      describe: (s: typeof server, o?: Parameters<typeof pool.describe>[1]) => {
        o?.signal?.addEventListener("abort", () => {
          aborted = true
        })
        return describeAndWatch(s, o)
      }
    }
    const started = Date.now()
    const [found] = await Discovery.discover([server], { pool: watching, cacheDir: dir })
    expect(Date.now() - started).toBeLessThan(2000)
    expect(found?.error).toBe("MCP server 'slow' did not answer within 150 ms.")
    expect(found?.description).toBeUndefined()
    expect(aborted).toBe(true)
  })

  it("a failure without a cache is an error sentence naming the server; others go on", async () => {
    const servers = serversOf({ nope: { command: "nope" }, fine: { command: "x" } })
    const logger = recordingLogger()
    const pool = scriptedPool({
      describe: (s) => (s.name === "nope" ? { fail: new Error("spawn nope ENOENT") } : {})
    })
    const found = await Discovery.discover(servers, { pool, cacheDir: dir, logger })
    expect(found[0]).toMatchObject({
      fromCache: false,
      error: "MCP server 'nope' failed: spawn nope ENOENT."
    })
    expect(found[1]?.description?.serverInfo.name).toBe("fine")
    expect(logger.lines).toContainEqual({
      level: "warn",
      message: "MCP server 'nope' failed: spawn nope ENOENT."
    })
  })

  it("a pool that throws instead of rejecting is still a result", async () => {
    const server = serverOf("odd", { command: "x" })
    const pool = {
      describe: () => {
        throw new Error("MCP server 'odd' could not be started: boom")
      }
    }
    const [found] = await Discovery.discover([server], { pool, cacheDir: dir })
    expect(found?.error).toBe("MCP server 'odd' could not be started: boom.")
  })

  it("a failure with a cache keeps the cached description, with a warning", async () => {
    const server = serverOf("flaky", { command: "x" })
    await Cache.write(dir, server, description("flaky", ["old_tool"]), new Date("2026-11-20T00:00:00Z"))
    const logger = recordingLogger()
    const pool = scriptedPool({
      describe: () => ({ fail: new Error("MCP server 'flaky' crashed (exit code 1)") })
    })
    const [found] = await Discovery.discover([server], { pool, cacheDir: dir, refresh: true, logger })
    expect(found?.fromCache).toBe(true)
    expect(found?.error).toBeUndefined()
    expect(found?.description?.tools.map((t) => t.name)).toEqual(["old_tool"])
    expect(found?.warnings).toEqual([
      "MCP server 'flaky' crashed (exit code 1). Using its tool list cached at 2026-11-20T00:00:00.000Z."
    ])
    expect(logger.lines.map((l) => l.message)).toEqual(found?.warnings)
  })

  it("a cache that cannot be written is a warning; the description is still used", async () => {
    const { writeFile } = await import("node:fs/promises")
    const blocked = `${dir}/file-not-dir`
    await writeFile(blocked, "")
    const [found] = await Discovery.discover([serverOf("a", { command: "x" })], {
      pool: scriptedPool({}),
      cacheDir: blocked
    })
    expect(found?.description?.serverInfo.name).toBe("a")
    expect(found?.warnings.some((w) => w.includes("could not be cached"))).toBe(true)
  })
})

describe("discover with forwardUcan", () => {
  it("lists a forwardUcan server with an invocation the oracle mints for itself, on its own connection", async () => {
    const oracle = await generateSigner()
    const [people, plain] = serversOf({
      people: { url: "http://127.0.0.1:1/mcp", forwardUcan: true },
      plain: { url: "http://127.0.0.1:2/mcp" }
    })
    const seen: Array<McpRequestOptions | undefined> = []
    const pool = {
      describe: async (server: McpServerConfig, options?: McpRequestOptions) => {
        seen.push(options)
        return description(server.name)
      }
    }
    await Discovery.discover([people!, plain!], { pool, cacheDir: dir, signer: oracle, concurrency: 1 })
    const auth = seen[0]?.headers?.Authorization
    expect(auth).toMatch(/^Bearer /)
    expect(
      await readInvocationUser(auth!.slice("Bearer ".length), { oracleDid: oracle.did(), server: "people" })
    ).toBe(oracle.did())
    expect(seen[0]?.connectionKey).toBe(`people\u0000${oracle.did()}`)
    expect(seen[1]?.headers).toBeUndefined()
    expect(seen[1]?.connectionKey).toBeUndefined()
  })
})

describe("discover (real pool, real servers)", () => {
  it("one server works, one is missing, one never answers initialize: boot goes on with two errors", async () => {
    const servers = serversOf({
      everything: { command: process.execPath, args: [everythingBin, "stdio"], timeoutMs: 20_000 },
      missing: { command: "plugboard-no-such-command" },
      silent: { command: process.execPath, args: [join(fixtures, "silent-server.mjs")], timeoutMs: 800 }
    })
    const pool = new McpPool()
    try {
      const started = Date.now()
      const [everything, missing, silent] = await Discovery.discover(servers, { pool, cacheDir: dir })
      expect(everything?.description?.tools.length).toBeGreaterThan(5)
      expect(missing?.description).toBeUndefined()
      expect(missing?.error).toMatch(/^MCP server 'missing' could not be started: .*ENOENT/)
      expect(silent?.description).toBeUndefined()
      expect(silent?.error).toMatch(/^MCP server 'silent' did not (answer|connect) within 800 ms/)
      // The silent one was bounded by its own timeout, not by the others'.
      expect(Date.now() - started).toBeLessThan(15_000)
      // The failures become plugins listed as unavailable, with the reason load_capability gives.
      const derived = CatalogSource.toPlugins(mcpSpecs([everything!, missing!, silent!], { pool }))
      expect(derived.errors).toEqual([])
      const catalog = Catalog.unsafeMake(derived.plugins)
      expect(catalog.byName.get("everything")?.unavailable).toBeUndefined()
      expect(catalog.byName.get("missing")?.unavailable).toBe(missing?.error)
      expect(catalog.byName.get("silent")?.unavailable).toBe(silent?.error)
      // Nothing was cached for the failures.
      expect((await Cache.read(dir, servers[1]!)).entry).toBeUndefined()
      expect((await Cache.read(dir, servers[2]!)).entry).toBeUndefined()
    } finally {
      await pool.close()
    }
  })

  it("a server that fails on refresh falls back to its cached tool list", async () => {
    const server = serverOf("gone", { command: "plugboard-no-such-command" })
    await Cache.write(dir, server, description("gone", ["kept"]))
    const pool = new McpPool()
    try {
      const [found] = await Discovery.discover([server], { pool, cacheDir: dir, refresh: true })
      expect(found?.fromCache).toBe(true)
      expect(found?.description?.tools.map((t) => t.name)).toEqual(["kept"])
      expect(found?.warnings[0]).toMatch(/could not be started.*Using its tool list cached at/)
    } finally {
      await pool.close()
    }
  })
})
