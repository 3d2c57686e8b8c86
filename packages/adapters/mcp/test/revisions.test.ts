/**
 * The protocol revisions, in one run (docs/mounting.md#protocol-revisions): the adapter speaks
 * 2026-07-28 to a server on the SDK v2 (`fixtures/modern-server.mjs`) and a 2025 revision to
 * the reference `server-everything`, on the same pool; the list a server gives a `ttlMs` is
 * served again until its ttl runs out, and shared across users only when `public`; an
 * `input_required` question reaches the call's `onElicit`, and one plugboard cannot answer
 * (sampling, roots) fails the call with a clear error.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ToolOutput, type Wait } from "@plugboard/core"
import { afterAll, describe, expect, it } from "vitest"
import * as Cache from "../src/Cache.js"
import * as Discovery from "../src/Discovery.js"
import { mountMcpServers } from "../src/Mount.js"
import { McpPool } from "../src/Pool.js"
import type { McpProgress, McpServerConfig } from "../src/Types.js"
import {
  everythingEntry,
  httpServer,
  modernFixture,
  recordingLogger,
  startProcess,
  stdioServer
} from "./fixtures/servers.js"

const text = (output: ToolOutput.ToolOutput): string => ToolOutput.toText(output)
const names = (description: { tools: ReadonlyArray<{ name: string }> }) =>
  description.tools.map((t) => t.name)

const here = dirname(fileURLToPath(import.meta.url))
const pools: Array<McpPool> = []
const dir = mkdtempSync(join(tmpdir(), "plugboard-revisions-"))
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()))
  rmSync(dir, { recursive: true, force: true })
})

/** A pool on a clock the test moves. */
const clocked = () => {
  const clock = { now: 1_000_000 }
  const pool = new McpPool({ now: () => clock.now })
  pools.push(pool)
  return { pool, clock }
}

const modern = (name: string, env: Record<string, string> = {}): McpServerConfig =>
  stdioServer(name, [modernFixture], { env })

describe("protocol revisions", () => {
  it("speaks 2026-07-28 to the SDK v2 server and a 2025 revision to server-everything, in one pool", async () => {
    const { pool } = clocked()
    const v2 = modern("modern")
    const everything = stdioServer("everything", [everythingEntry()])
    const [mine, theirs] = await Promise.all([pool.describe(v2), pool.describe(everything)])
    expect(mine.protocolVersion).toBe("2026-07-28")
    expect(mine.serverInfo).toMatchObject({ name: "modern-fixture", version: "2.0.0" })
    expect(names(mine)).toEqual(["echo", "grow", "steps", "ask_name", "sample", "roots"])
    expect(theirs.protocolVersion).toMatch(/^2025-\d\d-\d\d$/)
    expect(names(theirs)).toContain("echo")
    // A 2025 list carries no freshness; a 2026-07-28 one does (the SDK's default, 0 ms: stale at once).
    expect(theirs.ttlMs).toBeUndefined()
    expect(mine.ttlMs).toBe(0)
    expect(text(await pool.call(v2, "echo", { text: "over 2026" }))).toBe("echo: over 2026")
    expect(pool.protocolVersion("modern")).toBe("2026-07-28")
    expect(pool.protocolVersion("modern", "someone-else")).toBeUndefined()
    expect(text(await pool.call(everything, "echo", { message: "over 2025" }))).toContain("over 2025")
    const progress: Array<McpProgress> = []
    expect(text(await pool.call(v2, "steps", {}, { onProgress: (p) => progress.push(p) }))).toBe("stepped")
    expect(progress).toEqual([1, 2, 3].map((n) => ({ progress: n, total: 3, message: `step ${n}` })))
  })
})

describe("a stdio server that exits on the probe", () => {
  it("is started again and spoken to on the 2025 revisions", async () => {
    const logger = recordingLogger()
    const pool = new McpPool({ logger })
    pools.push(pool)
    const server = stdioServer("exits-on-probe", [join(here, "fixtures/exits-on-probe.mjs")])
    const description = await pool.describe(server)
    expect(logger.lines.map((l) => l.message)).toContain(
      "MCP server 'exits-on-probe' exited on server/discover; it is restarted on the 2025 revisions."
    )
    expect(description.protocolVersion).toBe("2025-11-25")
    expect(names(description)).toEqual(["ping"])
    expect(text(await pool.call(server, "ping", {}))).toBe("pong")
  })
})

describe("tools/list_changed on 2026-07-28", () => {
  it("reaches the client through its subscriptions/listen stream, and the list is read again", async () => {
    const { pool } = clocked()
    const server = modern("announcing", { FIXTURE_LIST_CHANGED: "1" })
    expect((await pool.describe(server)).protocolVersion).toBe("2026-07-28")
    const changed = new Promise<ReadonlyArray<string>>((resolve) => {
      const stop = pool.onToolsChanged((name, tools) => {
        if (name !== "announcing") return
        stop()
        resolve(tools.map((t) => t.name))
      })
    })
    await pool.call(server, "grow", {})
    expect(await changed).toContain("grown-1")
  })
})

describe("ttlMs and cacheScope drive the tools-list memory", () => {
  it("serves a list again while its ttl holds, and lists afresh after it", async () => {
    const { pool, clock } = clocked()
    const server = modern("kept", { FIXTURE_TTL_MS: "60000" })
    const first = await pool.describe(server)
    expect(first.ttlMs).toBe(60_000)
    expect(names(first)).not.toContain("grown-1")
    // The server's list changes, silently (it claims no listChanged).
    expect(text(await pool.call(server, "grow", {}))).toBe("added grown-1")
    clock.now += 59_999
    expect(names(await pool.describe(server))).not.toContain("grown-1")
    clock.now += 1
    expect(names(await pool.describe(server))).toContain("grown-1")
    // A bad timeout is refused even when a kept list could answer; a closed pool serves none.
    await expect(pool.describe(server, { timeoutMs: -1 })).rejects.toThrow(TypeError)
    await pool.close()
    await expect(pool.describe(server)).rejects.toMatchObject({ reason: "closed" })
  })

  it("lists every time a list that is stale at once (ttlMs 0)", async () => {
    const { pool } = clocked()
    const server = modern("fresh")
    expect(names(await pool.describe(server))).not.toContain("grown-1")
    await pool.call(server, "grow", {})
    expect(names(await pool.describe(server))).toContain("grown-1")
  })

  it("a call after the ttl ran out relists in the background: currentTools catches up", async () => {
    const { pool, clock } = clocked()
    const server = modern("background", { FIXTURE_TTL_MS: "1000" })
    await pool.describe(server)
    await pool.call(server, "grow", {})
    expect(pool.currentTools("background")?.map((t) => t.name)).not.toContain("grown-1")
    clock.now += 1_000
    const changed = new Promise<ReadonlyArray<string>>((resolve) => {
      const stop = pool.onToolsChanged((name, tools) => {
        if (name !== "background") return
        stop()
        resolve(tools.map((t) => t.name))
      })
    })
    await pool.call(server, "echo", { text: "after the ttl" })
    expect(await changed).toContain("grown-1")
  })

  it("a private list serves only the user who listed it; a public one serves every user", async () => {
    for (const scope of ["private", "public"] as const) {
      const { pool } = clocked()
      const state = join(dir, `${scope}.count`)
      const server = modern(`scoped-${scope}`, {
        FIXTURE_TTL_MS: "60000",
        FIXTURE_CACHE_SCOPE: scope,
        FIXTURE_STATE: state
      })
      const alice = { connectionKey: "alice" }
      const bob = { connectionKey: "bob" }
      expect((await pool.describe(server, alice)).cacheScope).toBe(scope)
      await pool.call(server, "grow", {}, alice)
      const bobs = names(await pool.describe(server, bob))
      // Public: bob is served alice's kept list (the grown tool is not in it yet). Private: bob's
      // own connection lists, and sees the change.
      if (scope === "public") expect(bobs).not.toContain("grown-1")
      else expect(bobs).toContain("grown-1")
      expect(names(await pool.describe(server, alice))).not.toContain("grown-1")
    }
  })
})

describe("input_required (2026-07-28)", () => {
  const { pool } = clocked()
  const server = modern("asking")

  it("reaches the call's onElicit, and the server receives the answer on that call", async () => {
    const asked: Array<Wait.InputQuestion> = []
    const output = await pool.call(
      server,
      "ask_name",
      {},
      {
        onElicit: async (question) => {
          asked.push(question)
          return { _tag: "values", values: { name: "Ada" } }
        }
      }
    )
    expect(text(output)).toBe("hello Ada")
    expect(asked).toHaveLength(1)
    expect(asked[0]?.message).toBe("What is your name?")
    expect(asked[0]?.schema).toMatchObject({ type: "object", properties: { name: { type: "string" } } })
  })

  it("a declined question, or a call that cannot ask, goes back as decline", async () => {
    const declined = await pool.call(server, "ask_name", {}, { onElicit: async () => ({ _tag: "declined" }) })
    expect(text(declined)).toBe("no name (decline)")
    expect(text(await pool.call(server, "ask_name", {}))).toBe("no name (decline)")
  })

  it("a question plugboard cannot answer (sampling, roots) fails the call clearly, without a hang", async () => {
    await expect(pool.call(server, "sample", {})).rejects.toMatchObject({
      reason: "protocol",
      tool: "sample",
      message: expect.stringContaining(
        "MCP server 'asking' needs a completion from the client's model (sampling/createMessage) to finish the call of tool 'sample', and plugboard cannot give it"
      )
    })
    await expect(pool.call(server, "roots", {})).rejects.toMatchObject({
      reason: "protocol",
      message: expect.stringContaining("needs the client's roots (roots/list)")
    })
  })
})

describe("ttlMs on disk (Cache.ts, Discovery.ts)", () => {
  it("a cached description is a hit while its ttl holds, is asked again after it, and stays the fallback", async () => {
    const { pool, clock } = clocked()
    const cacheDir = join(dir, "cache")
    const server = modern("on-disk", { FIXTURE_TTL_MS: "60000" })
    const now = () => clock.now
    const [first] = await Discovery.discover([server], { pool, cacheDir, now })
    expect(first?.fromCache).toBe(false)
    const { entry } = await Cache.read(cacheDir, server, new Date(clock.now))
    expect(entry?.expiresAt).toBe(new Date(clock.now + 60_000).toISOString())
    expect(entry?.description).toMatchObject({ protocolVersion: "2026-07-28", ttlMs: 60_000 })
    await pool.call(server, "grow", {})
    clock.now += 59_999
    const [hit] = await Discovery.discover([server], { pool, cacheDir, now })
    expect(hit?.fromCache).toBe(true)
    expect(names(hit!.description!)).not.toContain("grown-1")
    clock.now += 1
    const [asked] = await Discovery.discover([server], { pool, cacheDir, now })
    expect(asked?.fromCache).toBe(false)
    expect(names(asked!.description!)).toContain("grown-1")
    // Expired, and the server cannot be started: the expired entry still serves, with a warning.
    clock.now += 60_000
    const broken = {
      ...server,
      transport: { ...server.transport, command: join(dir, "missing") }
    } as McpServerConfig
    await Cache.write(cacheDir, broken, asked!.description!, new Date(clock.now - 60_000))
    const [fallback] = await Discovery.discover([broken], { pool, cacheDir, now })
    expect(fallback?.fromCache).toBe(true)
    expect(fallback?.warnings.join(" ")).toContain("past the ttl the server gave it")
  })

  it("a 2025 server's description has no expiry", async () => {
    const cacheDir = join(dir, "cache-2025")
    const server = stdioServer("everything-disk", [everythingEntry()])
    await Cache.write(cacheDir, server, { serverInfo: { name: "e" }, tools: [] }, new Date(0))
    const read = await Cache.read(cacheDir, server, new Date(8.64e15))
    expect(read.entry?.expiresAt).toBeUndefined()
    expect(read.expired).toBeUndefined()
  })
})

describe("2026-07-28 over Streamable HTTP (the SDK v2's createMcpHandler)", () => {
  it("negotiates the revision, lists, calls with the use's headers, and asks through input_required", async () => {
    const started = await startProcess([modernFixture, "--http"], /listening (\d+)/)
    try {
      const { pool } = clocked()
      const server = httpServer("modern-http", `http://127.0.0.1:${started.ready[1]}/mcp`)
      const description = await pool.describe(server)
      expect(description.protocolVersion).toBe("2026-07-28")
      expect(names(description)).toContain("whoami")
      expect(text(await pool.call(server, "echo", { text: "over HTTP" }))).toBe("echo: over HTTP")
      const alice = { connectionKey: "alice", headers: { "x-user": "alice" } }
      expect(text(await pool.call(server, "whoami", {}, alice))).toBe("user alice")
      const answered = await pool.call(
        server,
        "ask_name",
        {},
        { onElicit: async () => ({ _tag: "values", values: { name: "Grace" } }) }
      )
      expect(text(answered)).toBe("hello Grace")
      const progress: Array<McpProgress> = []
      expect(text(await pool.call(server, "steps", {}, { onProgress: (p) => progress.push(p) }))).toBe(
        "stepped"
      )
      expect(progress.map((p) => p.progress)).toEqual([1, 2, 3])
      // Cancelled on 2026-07-28 over HTTP: the SDK closes the request's stream.
      const controller = new AbortController()
      const aborted = pool.call(
        server,
        "ask_name",
        {},
        {
          signal: controller.signal,
          onElicit: async () => {
            controller.abort(new Error("the user left"))
            return { _tag: "declined" }
          }
        }
      )
      await expect(aborted).rejects.toMatchObject({
        reason: "aborted",
        message:
          "MCP server 'modern-http': the call of tool 'ask_name' was aborted; its HTTP stream was closed, which tells the server."
      })
    } finally {
      await started.stop()
    }
  })
})

describe("mountMcpServers", () => {
  it("says which revision each mounted server spoke (for the host's report)", async () => {
    const mounted = await mountMcpServers(
      {
        mcpServers: {
          modern: { command: process.execPath, args: [modernFixture] },
          everything: { command: process.execPath, args: [everythingEntry()] }
        }
      },
      { cacheDir: join(dir, "mount-cache") }
    )
    try {
      expect(mounted.errors).toEqual([])
      expect(mounted.protocolVersions?.modern).toBe("2026-07-28")
      expect(mounted.protocolVersions?.everything).toMatch(/^2025-\d\d-\d\d$/)
      // The catalog's entries carry it on their source, where the host's report reads it.
      const sources = Object.fromEntries(mounted.specs.map((s) => [s.name, s.source]))
      expect(sources.modern).toEqual({ kind: "mcp", server: "modern", protocolVersion: "2026-07-28" })
      expect(sources.everything).toMatchObject({ protocolVersion: mounted.protocolVersions?.everything })
    } finally {
      await mounted.close()
    }
  })
})
