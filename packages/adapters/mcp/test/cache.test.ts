import { readdir, readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import * as Cache from "../src/Cache.js"
import * as Discovery from "../src/Discovery.js"
import { McpPool } from "../src/Pool.js"
import { description, fixtures, scriptedPool, serverOf, tempDir } from "./fixtures-config/helpers.js"

let dir: string
let cleanup: () => Promise<void>
beforeEach(async () => {
  ;({ dir, cleanup } = await tempDir())
})
afterEach(() => cleanup())

const stdio = serverOf("files", {
  command: "node",
  args: ["server.js", "--root", "/data"],
  env: { API_TOKEN: "env-secret-value" },
  cwd: "/srv"
})
const http = serverOf("github", {
  url: "https://example.test/mcp",
  headers: { Authorization: "Bearer header-secret-value" }
})

describe("Cache", () => {
  it("reads back what it wrote, and finds nothing before", async () => {
    expect(await Cache.read(dir, stdio)).toEqual({})
    const written = await Cache.write(dir, stdio, description("files"), new Date("2026-11-25T10:00:00Z"))
    const { entry, warning } = await Cache.read(dir, stdio)
    expect(warning).toBeUndefined()
    expect(entry).toEqual(written)
    expect(entry).toMatchObject({
      version: Cache.CACHE_VERSION,
      name: "files",
      fetchedAt: "2026-11-25T10:00:00.000Z"
    })
    expect(entry?.description).toEqual(description("files"))
    // Written through a temporary file that is gone once renamed.
    expect(await readdir(dir)).toEqual(["files.json"])
  })

  it("keeps a tool's destructiveHint, so a tool read from the cache still waits for approval", async () => {
    const base = description("files", ["remove", "peek"])
    const marked = { ...base, tools: [{ ...base.tools[0]!, destructiveHint: true }, base.tools[1]!] }
    await Cache.write(dir, stdio, marked)
    const { entry } = await Cache.read(dir, stdio)
    expect(entry?.description.tools.map((t) => t.destructiveHint)).toEqual([true, undefined])
  })

  it("keeps no header or env value in the file", async () => {
    await Cache.write(dir, stdio, description("files"))
    await Cache.write(dir, http, description("github"))
    for (const name of ["files", "github"]) {
      const text = await readFile(Cache.cacheFile(dir, name), "utf8")
      expect(text).not.toContain("secret-value")
      expect(text).not.toContain("API_TOKEN")
      expect(text).not.toContain("Authorization")
      expect(JSON.parse(text).key).toMatch(/^[0-9a-f]{64}$/)
    }
  })

  it("keeps only the description's own fields", async () => {
    const extra = {
      ...description("files"),
      secretField: "x",
      tools: [{ ...description("files").tools[0]!, _meta: 1 }]
    }
    await Cache.write(dir, stdio, extra as never)
    const text = await readFile(Cache.cacheFile(dir, "files"), "utf8")
    expect(text).not.toContain("secretField")
    expect(text).not.toContain("_meta")
  })

  it("keys on what decides the server (transport), not on what plugboard does with it", () => {
    const base = { command: "node", args: ["a"], env: { A: "1" } }
    const key = Cache.cacheKey(serverOf("s", base))
    // Same config in another key order: same key.
    expect(Cache.cacheKey(serverOf("s", { env: { A: "1" }, args: ["a"], command: "node" }))).toBe(key)
    for (const changed of [
      { ...base, args: ["b"] },
      { ...base, args: ["a", "b"] },
      { ...base, env: { A: "2" } },
      { ...base, command: "deno" },
      { ...base, cwd: "/elsewhere" }
    ]) {
      expect(Cache.cacheKey(serverOf("s", changed))).not.toBe(key)
    }
    for (const same of [
      { ...base, manifest: { title: "Other" } },
      { ...base, tools: { deny: ["echo"] } },
      { ...base, timeoutMs: 1234 }
    ]) {
      expect(Cache.cacheKey(serverOf("s", same))).toBe(key)
    }
    const url = Cache.cacheKey(http)
    expect(
      Cache.cacheKey(
        serverOf("github", { url: "https://example.test/mcp", headers: { Authorization: "Bearer other" } })
      )
    ).not.toBe(url)
    expect(
      Cache.cacheKey(
        serverOf("github", {
          url: "https://example.test/mcp2",
          headers: { Authorization: "Bearer header-secret-value" }
        })
      )
    ).not.toBe(url)
    expect(
      Cache.cacheKey(
        serverOf("github", {
          url: "https://example.test/mcp",
          headers: { "X-Ucan": "v", Authorization: "Bearer header-secret-value" }
        })
      )
    ).not.toBe(url)
  })

  it("ignores a corrupt, wrong-version, wrong-key or incomplete file with a warning naming it", async () => {
    const file = Cache.cacheFile(dir, "files")
    const cases: Array<[string, RegExp]> = [
      ["{not json", /is not valid JSON/],
      ["[]", /is not a cache entry/],
      [JSON.stringify({ version: 99 }), /is of format version 99, not 1/],
      [
        JSON.stringify({ version: 1, key: "0".repeat(64) }),
        /was fetched with another config of server 'files'/
      ],
      [
        JSON.stringify({
          version: 1,
          key: Cache.cacheKey(stdio),
          name: "files",
          fetchedAt: "x",
          description: { tools: 3 }
        }),
        /is not a complete cache entry/
      ]
    ]
    for (const [text, why] of cases) {
      await writeFile(file, text)
      const read = await Cache.read(dir, stdio)
      expect(read.entry).toBeUndefined()
      expect(read.warning).toContain(file)
      expect(read.warning).toMatch(why)
    }
  })

  it("an unusable file is replaced at the next successful fetch, and discovery warns about it", async () => {
    const file = Cache.cacheFile(dir, "files")
    await writeFile(file, "\u0000garbage")
    const pool = scriptedPool({})
    const [found] = await Discovery.discover([stdio], { pool, cacheDir: dir })
    expect(found?.fromCache).toBe(false)
    expect(found?.description?.serverInfo.name).toBe("files")
    expect(found?.warnings[0]).toContain(file)
    expect((await Cache.read(dir, stdio)).entry?.description).toEqual(description("files"))
  })

  it("refuses a server name that could leave the directory", async () => {
    const odd = { ...stdio, name: "../escape" }
    expect((await Cache.read(dir, odd)).warning).toContain("not kebab-case")
    await expect(Cache.write(dir, odd, description("x"))).rejects.toThrow(/not kebab-case/)
  })

  it("a cache file that is a directory is a warning, not a crash", async () => {
    const { mkdir } = await import("node:fs/promises")
    await mkdir(Cache.cacheFile(dir, "files"))
    const read = await Cache.read(dir, stdio)
    expect(read.entry).toBeUndefined()
    expect(read.warning).toContain("cannot be read")
  })
})

describe("Cache with a real stdio server", () => {
  it("a boot from the cache starts no process; a refresh starts one", async () => {
    const counter = join(dir, "starts.txt")
    const server = serverOf("everything", {
      command: process.execPath,
      args: [join(fixtures, "counting-everything.mjs"), counter],
      timeoutMs: 20_000
    })
    const starts = async () =>
      (await readFile(counter, "utf8").catch(() => "")).split("\n").filter(Boolean).length
    const boot = async (refresh = false) => {
      // A pool per boot, closed after it: as a restarted host, `inspect` or CI would run.
      const pool = new McpPool()
      try {
        return await Discovery.discover([server], { pool, cacheDir: join(dir, "cache"), refresh })
      } finally {
        await pool.close()
      }
    }
    const [first] = await boot()
    expect(first?.fromCache).toBe(false)
    expect(first?.description?.tools.map((t) => t.name)).toContain("echo")
    expect(await starts()).toBe(1)
    const [second] = await boot()
    expect(second?.fromCache).toBe(true)
    expect(second?.description).toEqual(first?.description)
    expect(await starts()).toBe(1)
    await boot(true)
    expect(await starts()).toBe(2)
  })
})
