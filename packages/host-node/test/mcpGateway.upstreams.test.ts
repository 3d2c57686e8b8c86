/**
 * `plugboard mcp` in front of real MCP servers (server-everything, server-memory) and the examples'
 * catalog: answers through the gateway process equal the servers' own; and the claim that makes a
 * gateway worth mounting, measured on the wire: `tools/list` at connect costs the same o200k tokens
 * whether 1 or 200 upstream servers sit behind it, and exactly what `plugboard inspect` says.
 *
 * The 200 servers are one real server-everything asked once for its description, which then fills
 * the MCP tool-list cache for 200 configs of their own (each its own cache key): the gateway boots
 * them as it boots any cached server, without a process start (counted: none happens).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { McpCache, McpConfig, McpPool } from "@plugboard/mcp"
import { loadTiktokenCounter } from "@plugboard/tokenizers"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, gatewayCommand, META, runCliWith, startHttpGateway } from "./mcpGatewayHelpers.js"
import { countingEverything, everythingEntry } from "./mcpHelpers.js"
import { ROOT } from "./runCli.js"

let dir: string
let cacheDir: string
let counting: ReturnType<typeof countingEverything>

/** A servers.json of `n` copies of the counting server-everything, each a config of its own. */
const serversFile = (n: number): string => {
  const file = join(dir, `servers-${n}.json`)
  const mcpServers = Object.fromEntries(
    Array.from({ length: n }, (_, i) => [
      `everything-${i}`,
      { command: process.execPath, args: [counting.script], env: { COPY: String(i) } }
    ])
  )
  writeFileSync(file, JSON.stringify({ mcpServers }))
  return file
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-mcp-upstreams-"))
  cacheDir = join(dir, "mcp-cache")
  counting = countingEverything(dir)
  // One real description, asked once, cached for the 200 configs.
  const parsed = McpConfig.parse(JSON.parse(readFileSync(serversFile(200), "utf8")), {
    baseDir: dir
  })
  expect(parsed.errors).toEqual([])
  const pool = new McpPool()
  try {
    const description = await pool.describe(parsed.servers[0]!)
    for (const server of parsed.servers) await McpCache.write(cacheDir, server, description)
  } finally {
    await pool.close()
  }
}, 60_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The tools a session lists at connect, as raw JSON read off the wire. */
const listedAtConnect = async (args: ReadonlyArray<string>) => {
  const gateway = await startHttpGateway(dir, [...args, "--http", "0"], { MCP_CACHE_DIR: cacheDir })
  try {
    const response = await fetch(gateway.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
    })
    const data = (await response.text()).split("\n").find((l) => l.startsWith("data: "))!
    return (JSON.parse(data.slice(6)) as { result: { tools: Array<Record<string, unknown>> } }).result.tools
  } finally {
    expect(await gateway.stop()).toBe(0)
  }
}

describe("tools/list at connect, 1 or 200 upstream servers behind the gateway", () => {
  it("costs the same o200k tokens, what plugboard inspect reports, with no server started", async () => {
    const counter = await loadTiktokenCounter("o200k")
    // The convention of TokenBudget.toolCost: name, description, the JSON of the schema.
    const tokens = (tools: ReadonlyArray<Record<string, unknown>>) =>
      tools.reduce(
        (n, t) =>
          n +
          counter.count(String(t.name)) +
          counter.count(String(t.description)) +
          counter.count(JSON.stringify(t.inputSchema)),
        0
      )
    const startsBefore = counting.starts()
    for (const module of [[join(import.meta.dirname, "../../../examples/plugins/weather.ts")], []]) {
      const one = await listedAtConnect([...module, "--mcp", serversFile(1)])
      const many = await listedAtConnect([...module, "--mcp", serversFile(200)])
      expect(many).toEqual(one)
      expect(tokens(many)).toBe(tokens(one))
      const inspected = await runCliWith(
        dir,
        { MCP_CACHE_DIR: cacheDir },
        "inspect",
        ...module,
        "--mcp",
        serversFile(200),
        "--json"
      )
      expect(inspected.code, inspected.stderr).toBe(0)
      expect(JSON.parse(inspected.stdout).gateway.atConnect.total).toBe(tokens(many))
      if (module.length === 1) expect(many.map((t) => t.name)).toEqual(META)
    }
    // The examples' catalog lists its always-tier tools too, and still the same with 200 servers.
    expect(counting.starts()).toBe(startsBefore)
  }, 180_000)
})

describe("answers through the gateway process", () => {
  let through: Client
  let direct: { everything: Client; memory: Client }
  const memoryEntry = createRequire(import.meta.url).resolve(
    "@modelcontextprotocol/server-memory/dist/index.js"
  )

  beforeAll(async () => {
    const servers = join(dir, "faithful.json")
    writeFileSync(
      servers,
      JSON.stringify({
        mcpServers: {
          everything: { command: process.execPath, args: [everythingEntry, "stdio"] },
          memory: {
            command: process.execPath,
            args: [memoryEntry],
            env: { MEMORY_FILE_PATH: join(dir, "through.json") }
          }
        }
      })
    )
    // The examples' catalog named, since an MCP config alone mounts those servers alone (issue 36, item 16).
    const { command, args } = gatewayCommand(join(ROOT, "examples/catalog/index.ts"), "--mcp", servers)
    through = new Client({ name: "faithful", version: "0" })
    await through.connect(
      new StdioClientTransport({ command, args, cwd: dir, env: cleanEnv(dir), stderr: "pipe" })
    )
    await through.callTool({
      name: "load_capability",
      arguments: { names: ["everything", "memory", "weather"] }
    })
    const connect = async (args: Array<string>, env: Record<string, string> = {}) => {
      const client = new Client({ name: "direct", version: "0" })
      await client.connect(
        new StdioClientTransport({ command: process.execPath, args, env: cleanEnv(dir, env), stderr: "pipe" })
      )
      return client
    }
    direct = {
      everything: await connect([everythingEntry, "stdio"]),
      memory: await connect([memoryEntry], { MEMORY_FILE_PATH: join(dir, "direct.json") })
    }
  }, 120_000)
  afterAll(async () => {
    await through?.close()
    await direct?.everything.close()
    await direct?.memory.close()
  })

  it("server-everything: text, image, resource links, embedded resources, structured content, annotations, isError", async () => {
    const calls: ReadonlyArray<[string, Record<string, unknown>]> = [
      ["echo", { message: "through the gateway" }],
      ["get-tiny-image", {}],
      ["get-resource-links", { count: 3 }],
      ["get-resource-reference", { resourceType: "Blob", resourceId: 1 }],
      ["get-structured-content", { location: "Los Angeles" }],
      ["get-annotated-message", { messageType: "success", includeImage: true }],
      ["get-resource-reference", { resourceType: "Text", resourceId: -1 }]
    ]
    for (const [name, args] of calls) {
      expect(await through.callTool({ name, arguments: args }), name).toEqual(
        await direct.everything.callTool({ name, arguments: args })
      )
    }
  })

  it("server-memory writes and reads; progress of a long operation; the examples' weather", async () => {
    const entities = { entities: [{ name: "Grace", entityType: "person", observations: ["COBOL"] }] }
    for (const [name, args] of [
      ["create_entities", entities],
      ["read_graph", {}]
    ] as const) {
      expect(await through.callTool({ name, arguments: args })).toEqual(
        await direct.memory.callTool({ name, arguments: args })
      )
    }
    const progress: Array<unknown> = []
    const done = await through.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 0.2, steps: 2 } },
      undefined,
      { onprogress: (p) => progress.push(p) }
    )
    expect(done.isError).toBeUndefined()
    expect(progress.length).toBeGreaterThanOrEqual(1)
    expect(progress[0]).toEqual({ progress: 1, total: 2 })
    const weather = await through.callTool({ name: "get_current_weather", arguments: { city: "Lagos" } })
    expect(JSON.parse((weather.content as Array<{ text: string }>)[0]!.text).city).toBe("Lagos")
  })
})
