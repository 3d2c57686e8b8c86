/**
 * The gateway in front of real MCP servers from npm (server-everything and server-memory over
 * stdio, through the pool as a host mounts them): every result a client gets through the gateway
 * equals, field for field, what the same client gets calling the server directly (content blocks
 * of every kind, annotations, structured content, isError); the client's progress token gets the
 * server's progress; the client's cancellation reaches the server as `notifications/cancelled`.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Catalog, CatalogSource } from "@plugboard/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  discoverMcpServers,
  type Gateway,
  McpPool,
  type McpServerConfig,
  makeGateway,
  mcpSpecs
} from "../src/index.js"
import { deferred, memoryClient } from "./fixtures/gateway.js"
import {
  everythingEntry,
  memoryEntry,
  readLog,
  stdioFixture,
  stdioServer,
  waitFor
} from "./fixtures/servers.js"

let dir: string
let pool: McpPool
let gateway: Gateway
let through: Client
let direct: { everything: Client; memory: Client }
let servers: Record<"everything" | "memory" | "failing", McpServerConfig>
let fixtureLog: string

const directClient = async (server: McpServerConfig): Promise<Client> => {
  const t = server.transport as { command: string; args: ReadonlyArray<string>; env: Record<string, string> }
  const client = new Client({ name: "direct", version: "0.0.0" })
  await client.connect(
    new StdioClientTransport({
      command: t.command,
      args: [...t.args],
      env: { ...process.env, ...t.env } as never,
      stderr: "pipe"
    })
  )
  return client
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-gateway-upstream-"))
  fixtureLog = join(dir, "fixture.log")
  servers = {
    everything: stdioServer("everything", [everythingEntry(), "stdio"]),
    memory: stdioServer("memory", [memoryEntry()], { env: { MEMORY_FILE_PATH: join(dir, "through.json") } }),
    failing: stdioServer("failing", [stdioFixture], { env: { FIXTURE_LOG: fixtureLog } })
  }
  pool = new McpPool()
  // The catalog as a host boots it: discovery, core's derivation, Catalog.make.
  const discovered = await discoverMcpServers(Object.values(servers), { pool, cacheDir: join(dir, "cache") })
  const derived = CatalogSource.toPlugins(mcpSpecs(discovered, { pool }))
  expect(derived.errors).toEqual([])
  gateway = makeGateway({ catalog: Catalog.unsafeMake(derived.plugins), did: "did:key:test" })
  through = (await memoryClient(gateway)).client
  await through.callTool({
    name: "load_capability",
    arguments: { names: ["everything", "memory", "failing"] }
  })
  direct = {
    everything: await directClient(servers.everything),
    memory: await directClient(
      stdioServer("memory", [memoryEntry()], { env: { MEMORY_FILE_PATH: join(dir, "direct.json") } })
    )
  }
}, 120_000)

afterAll(async () => {
  await through?.close()
  await gateway?.close()
  await pool?.close()
  await direct?.everything.close()
  await direct?.memory.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("results through the gateway equal the server's own", () => {
  const cases: ReadonlyArray<[string, Record<string, unknown>]> = [
    ["echo", { message: "hello gateway" }],
    ["get-tiny-image", {}],
    ["get-resource-links", { count: 4 }],
    ["get-resource-reference", { resourceType: "Text", resourceId: 2 }],
    ["get-resource-reference", { resourceType: "Blob", resourceId: 3 }],
    ["get-structured-content", { location: "Chicago" }],
    ["get-annotated-message", { messageType: "error", includeImage: true }],
    ["get-annotated-message", { messageType: "debug" }],
    ["get-sum", { a: 2, b: 40 }],
    // The tool's own failure: isError and its words.
    ["get-resource-reference", { resourceType: "Text", resourceId: 0 }]
  ]
  for (const [tool, args] of cases) {
    it(`server-everything ${tool} ${JSON.stringify(args)}`, async () => {
      const expected = await direct.everything.callTool({ name: tool, arguments: args })
      const got = await through.callTool({ name: tool, arguments: args })
      expect(got).toEqual(expected)
    })
  }

  it("server-memory: a sequence of writes and reads answers the same", async () => {
    const steps: ReadonlyArray<[string, Record<string, unknown>]> = [
      [
        "create_entities",
        {
          entities: [
            { name: "Ada", entityType: "person", observations: ["wrote the first program"] },
            { name: "Engine", entityType: "machine", observations: [] }
          ]
        }
      ],
      ["create_relations", { relations: [{ from: "Ada", to: "Engine", relationType: "programmed" }] }],
      ["search_nodes", { query: "Ada" }],
      ["read_graph", {}]
    ]
    for (const [tool, args] of steps) {
      const expected = await direct.memory.callTool({ name: tool, arguments: args })
      const got = await through.callTool({ name: tool, arguments: args })
      expect(got, tool).toEqual(expected)
    }
  })
})

describe("progress and cancellation reach across the gateway", () => {
  it("the client's progress token gets the server's progress notifications, as a direct call does", async () => {
    const args = { duration: 0.3, steps: 3 }
    const seenDirect: Array<unknown> = []
    const seenThrough: Array<unknown> = []
    const expected = await direct.everything.callTool(
      { name: "trigger-long-running-operation", arguments: args },
      undefined,
      { onprogress: (p) => seenDirect.push(p) }
    )
    const got = await through.callTool(
      { name: "trigger-long-running-operation", arguments: args },
      undefined,
      {
        onprogress: (p) => seenThrough.push(p)
      }
    )
    expect(got).toEqual(expected)
    // The server reports each of its 3 steps. The SDK client runs progress handlers a microtask
    // late and settles the response at once, so a direct call may lose the last report, sent just
    // before the answer; the gateway relays each report as the pool reads it, before it answers.
    expect(seenThrough).toEqual([
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
      { progress: 3, total: 3 }
    ])
    expect(seenThrough.slice(0, seenDirect.length)).toEqual(seenDirect)
  })

  it("the client's notifications/cancelled aborts the upstream call: the server is sent its own", async () => {
    const controller = new AbortController()
    const stopped = deferred()
    const call = through.callTool({ name: "hang", arguments: {} }, undefined, { signal: controller.signal })
    call.catch(() => stopped.resolve())
    // The server logs the call once it has it; only then is there something to cancel.
    await waitFor(() => readLog(fixtureLog).some((e) => e.event === "hang"), 10_000, "the hang call")
    controller.abort("the user stopped it")
    await stopped.promise
    await waitFor(
      () => readLog(fixtureLog).some((e) => e.event === "cancelled"),
      10_000,
      "notifications/cancelled"
    )
    const hang = readLog(fixtureLog).find((e) => e.event === "hang")!
    expect(readLog(fixtureLog).find((e) => e.event === "cancelled")!.params).toMatchObject({
      requestId: hang.requestId
    })
  })
})
