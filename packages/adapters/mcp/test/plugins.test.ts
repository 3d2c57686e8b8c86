import {
  Catalog,
  CatalogSource,
  GraphState,
  LoadedPlugins,
  makeRuntimeContext,
  type RuntimeContext,
  TokenBudget,
  TokenCounter,
  ToolOutput
} from "@plugboard/core"
import { generateSigner, type Signer } from "@plugboard/ucan"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Discovered } from "../src/Discovery.js"
import * as Discovery from "../src/Discovery.js"
import { MissingInvocationError, mcpSpecs } from "../src/McpPlugins.js"
import { McpPool } from "../src/Pool.js"
import type { McpDescription, McpServerConfig } from "../src/Types.js"
import { mintInvocations } from "../src/Ucan.js"
import {
  description,
  everythingBin,
  scriptedPool,
  serverOf,
  serversOf,
  tempDir
} from "./fixtures-config/helpers.js"
import { startWhoamiServer, type WhoamiServer } from "./fixtures-config/whoami-server.js"

const catalogOf = (specs: ReadonlyArray<CatalogSource.DerivedPluginSpec>) => {
  const derived = CatalogSource.toPlugins(specs)
  expect(derived.errors).toEqual([])
  const made = Catalog.make(derived.plugins)
  if (Either.isLeft(made)) throw new Error(made.left.errors.join("\n"))
  return { catalog: made.right, warnings: derived.warnings }
}

const contextFor = (
  did: string,
  options: {
    invocations?: Record<string, string>
    signal?: AbortSignal
    progress?: (p: unknown) => void
  } = {}
): RuntimeContext => {
  const state = {
    ...GraphState.initial({ did, client: "portal" }),
    ...(options.invocations === undefined ? {} : { mcpUcanContext: { invocations: options.invocations } })
  }
  const base = makeRuntimeContext({
    state,
    sessionId: "s1",
    did,
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
  return options.progress === undefined
    ? base
    : { ...base, toolCall: { id: "c1", name: "t", progress: options.progress } }
}

const found = (server: McpServerConfig, d?: McpDescription, error?: string): Discovered => ({
  server,
  ...(d === undefined ? {} : { description: d }),
  fromCache: false,
  ...(error === undefined ? {} : { error }),
  warnings: []
})

describe("mcpSpecs (scripted pool)", () => {
  it("one spec per server, through toPlugins into a catalog; an unreachable one is listed unavailable", () => {
    const [up, down] = serversOf({ up: { command: "x" }, down: { command: "nope" } })
    const pool = scriptedPool({})
    const specs = mcpSpecs(
      [
        found(up!, description("up", ["echo", "add"])),
        found(down!, undefined, "MCP server 'down' could not be started: ENOENT.")
      ],
      { pool }
    )
    expect(specs.map((s) => s.source)).toEqual([
      { kind: "mcp", server: "up" },
      { kind: "mcp", server: "down" }
    ])
    expect(specs[1]?.manifest).toEqual(CatalogSource.placeholderManifest("down"))
    const { catalog } = catalogOf(specs)
    expect(catalog.byName.get("up")?.manifest).toEqual(
      CatalogSource.deriveMcpManifest("up", description("up", ["echo", "add"]))
    )
    expect(catalog.byName.get("up")?.tools.map((t) => t.name)).toEqual(["echo", "add"])
    expect(catalog.byName.get("up")?.unavailable).toBeUndefined()
    expect(catalog.byName.get("down")?.unavailable).toBe("MCP server 'down' could not be started: ENOENT.")
    expect(catalog.byName.get("down")?.tools).toEqual([])
  })

  it("applies the operator's manifest override and tool policy", () => {
    const server = serverOf("demo", {
      command: "x",
      manifest: { title: "Demo Tools", visibility: "always", whenToUse: ["Testing."] },
      tools: { deny: ["add"], visibility: { secret: "silent" } }
    })
    const specs = mcpSpecs([found(server, description("demo", ["echo", "add", "secret"]))], {
      pool: scriptedPool({})
    })
    const { catalog } = catalogOf(specs)
    const entry = catalog.byName.get("demo")!
    expect(entry.manifest.title).toBe("Demo Tools")
    expect(entry.manifest.whenToUse).toEqual(["Testing."])
    expect(entry.visibility).toBe("always")
    expect(entry.tools.map((t) => [t.name, t.visibility])).toEqual([
      ["echo", "always"],
      ["secret", "silent"]
    ])
    expect(entry.tools[0]?.description).toBe("[Demo Tools] The echo tool.")
  })

  it("a wrong override is a boot error naming its key", () => {
    const server = serverOf("demo", { command: "x", manifest: { visibility: "loud" } })
    const specs = mcpSpecs([found(server, description("demo"))], { pool: scriptedPool({}) })
    expect(CatalogSource.toPlugins(specs).errors).toEqual([
      "mcpServers.demo.manifest.visibility must be one of always, on-demand, silent."
    ])
  })

  it("a tool call goes to the pool under the server's name, with the turn's signal, progress and timeout", async () => {
    const server = serverOf("demo", { command: "x", timeoutMs: 1234 })
    const pool = scriptedPool({})
    const [spec] = mcpSpecs([found(server, description("demo"))], { pool })
    const controller = new AbortController()
    const progress = () => {}
    const out = await spec!.tools[0]!.call(
      { message: "hi" },
      contextFor("did:key:alice", { signal: controller.signal, progress })
    )
    expect(ToolOutput.isToolOutput(out)).toBe(true)
    expect(pool.calls).toHaveLength(1)
    const [call] = pool.calls
    expect(call).toMatchObject({ server: "demo", tool: "echo", args: { message: "hi" } })
    expect(call?.options?.signal).toBe(controller.signal)
    expect(call?.options?.onProgress).toBe(progress)
    expect(call?.options?.timeoutMs).toBe(1234)
    // A server without forwardUcan shares one connection across users.
    expect(call?.options?.connectionKey).toBeUndefined()
    expect(call?.options?.headers).toBeUndefined()
  })

  it("a forwardUcan server's call carries the user's invocation on the user's own connection, and is refused without one", async () => {
    const [people, crm] = serversOf({
      people: { url: "http://127.0.0.1:1/mcp", forwardUcan: true },
      crm: { url: "http://127.0.0.1:2/mcp", forwardUcan: { header: "X-Ucan" } }
    })
    const pool = scriptedPool({})
    const specs = mcpSpecs([found(people!, description("people")), found(crm!, description("crm"))], { pool })
    const alice = contextFor("did:key:alice", { invocations: { people: "tok-people", crm: "tok-crm" } })
    await specs[0]!.tools[0]!.call({}, alice)
    await specs[1]!.tools[0]!.call({}, alice)
    expect(pool.calls.map((c) => [c.options?.headers, c.options?.connectionKey])).toEqual([
      [{ Authorization: "Bearer tok-people" }, "people\u0000did:key:alice"],
      [{ "X-Ucan": "tok-crm" }, "crm\u0000did:key:alice"]
    ])
    const bob = contextFor("did:key:bob", { invocations: { crm: "tok-crm" } })
    await expect(specs[0]!.tools[0]!.call({}, bob)).rejects.toThrow(MissingInvocationError)
    await expect(specs[0]!.tools[0]!.call({}, bob)).rejects.toThrow(/mcpUcanContext\.invocations\['people'\]/)
    expect(pool.calls).toHaveLength(2)
  })

  it("tools the server adds later are offered through the plugin's request tools, after the boot ones", () => {
    const server = serverOf("demo", { command: "x" })
    let current: McpDescription["tools"] | undefined
    const pool = scriptedPool({ currentTools: () => current })
    const { catalog } = catalogOf(mcpSpecs([found(server, description("demo", ["echo"]))], { pool }))
    const plugin = catalog.byName.get("demo")!.plugin
    const request = {
      sessionId: "s",
      did: "did:key:a",
      state: GraphState.initial({ did: "did:key:a", client: "portal" })
    }
    expect(plugin.getRequestTools?.(request as never)).toEqual([])
    current = [...description("demo", ["echo", "later"]).tools]
    const added = plugin.getRequestTools?.(request as never) as ReadonlyArray<{ name: string }>
    expect(added.map((t) => t.name)).toEqual(["later"])
  })
})

describe("mcpSpecs (real pool, server-everything)", () => {
  let pool: McpPool
  let dir: string
  let cleanup: () => Promise<void>
  let everything: Discovered
  beforeAll(async () => {
    ;({ dir, cleanup } = await tempDir())
    pool = new McpPool()
    const server = serverOf("everything", {
      command: process.execPath,
      args: [everythingBin, "stdio"],
      timeoutMs: 20_000
    })
    ;[everything] = (await Discovery.discover([server], { pool, cacheDir: dir })) as [Discovered]
    expect(everything.error).toBeUndefined()
  })
  afterAll(async () => {
    await pool?.close()
    await cleanup?.()
  })

  it("a tool of the catalog runs over MCP and answers a ToolOutput", async () => {
    const { catalog } = catalogOf(mcpSpecs([everything], { pool }))
    const echo = catalog.toolsByName.get("echo")
    expect(echo?.plugin).toBe("everything")
    const out = await echo!.tool.handler({ message: "hello over MCP" }, contextFor("did:key:alice"))
    expect(ToolOutput.isToolOutput(out)).toBe(true)
    expect(ToolOutput.toText(out as ToolOutput.ToolOutput)).toContain("hello over MCP")
  })

  it("200 plugins from one real description under 200 names build a valid catalog; with nothing loaded a turn costs the same as without them", () => {
    const description = everything.description!
    const many: Discovered[] = Array.from({ length: 200 }, (_, i) => ({
      ...everything,
      server: { ...everything.server, name: `everything-${String(i).padStart(3, "0")}` },
      description
    }))
    const started = performance.now()
    const specs = mcpSpecs(many, { pool })
    const { catalog, warnings } = catalogOf(specs)
    const elapsed = performance.now() - started
    expect(catalog.entries).toHaveLength(200)
    // Every tool name is shared by 200 plugins: each is namespaced, none collides.
    const perPlugin = catalog.byName.get("everything-000")!.tools.length
    expect(perPlugin).toBeGreaterThan(5)
    expect(catalog.toolsByName.size).toBe(200 * perPlugin)
    expect(catalog.toolsByName.has("everything-199__echo")).toBe(true)
    // The clash is told once, for the whole group (issue 36, item 19).
    expect(warnings).toEqual([
      expect.stringMatching(/^200 plugins \('everything-000', .* and 196 more\) share \d+ tool names echo, /)
    ])
    const cost = (c: Catalog.Catalog) =>
      TokenBudget.turnCost({
        catalog: c,
        loadedPlugins: LoadedPlugins.empty,
        basePrompt: "You are a helpful assistant.",
        counter: TokenCounter.heuristic
      }).total
    const empty = Catalog.make([])
    if (Either.isLeft(empty)) throw new Error("empty catalog")
    expect(cost(catalog)).toBe(cost(empty.right))
    expect(elapsed).toBeLessThan(5000)
  })
})

describe("mcpSpecs with forwardUcan (real pool, real HTTP server that reads the header)", () => {
  let oracle: Signer
  let whoami: WhoamiServer
  let pool: McpPool
  let dir: string
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    ;({ dir, cleanup } = await tempDir())
    oracle = await generateSigner()
    whoami = await startWhoamiServer({ oracleDid: oracle.did(), serverName: "people" })
    pool = new McpPool()
  })
  afterAll(async () => {
    await pool?.close()
    await whoami?.close()
    await cleanup?.()
  })

  it("two users calling the same tool are each seen as themselves, on connections of their own", async () => {
    const alice = (await generateSigner()).did()
    const bob = (await generateSigner()).did()
    const servers = serversOf({ people: { url: whoami.url, forwardUcan: true, timeoutMs: 10_000 } })
    // Boot: the oracle lists the server's tools with an invocation for itself.
    const discovered = await Discovery.discover(servers, { pool, cacheDir: dir, signer: oracle })
    expect(discovered[0]?.error).toBeUndefined()
    const { catalog } = catalogOf(mcpSpecs(discovered, { pool }))
    const tool = catalog.toolsByName.get("whoami")!.tool
    const turn = async (did: string) =>
      contextFor(did, { invocations: await mintInvocations(servers, { signer: oracle, userDid: did }) })
    const [a, b, a2] = await Promise.all([
      tool.handler({}, await turn(alice)),
      tool.handler({}, await turn(bob)),
      tool.handler({}, await turn(alice))
    ])
    expect(ToolOutput.toText(a as ToolOutput.ToolOutput)).toBe(alice)
    expect(ToolOutput.toText(b as ToolOutput.ToolOutput)).toBe(bob)
    expect(ToolOutput.toText(a2 as ToolOutput.ToolOutput)).toBe(alice)
    // No request reached the server without a valid invocation, and each user had a session of their own.
    expect(whoami.requests.filter((r) => r.status !== 200)).toEqual([])
    const owners = [...whoami.sessions.values()]
    expect(owners.filter((o) => o === alice)).toHaveLength(1)
    expect(owners.filter((o) => o === bob)).toHaveLength(1)
    // A turn without an invocation for the server is refused before any request is sent.
    const before = whoami.requests.length
    await expect(tool.handler({}, contextFor(bob))).rejects.toThrow(MissingInvocationError)
    expect(whoami.requests.length).toBe(before)
  })
})
