/**
 * An upstream server's question reaches the gateway's client (docs/mcp-gateway.md#questions): the
 * real SDK server `asking-server.mjs` elicits during `ask_name`; through the gateway, the SDK v2
 * client on 2026-07-28 answers it as an `input_required` round (its `elicitation/create` handler),
 * the v1 client on 2025-11-25 as an `elicitation/create` request (the SDK's shim); a client that
 * declared no elicitation is not asked, and the server is declined.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client as ClientV2, InMemoryTransport as MemoryV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport as MemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Catalog, CatalogSource } from "@plugboard/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { discoverMcpServers, type Gateway, McpPool, makeGateway, mcpSpecs } from "../src/index.js"
import { firstText } from "./fixtures/gateway.js"
import { stdioServer } from "./fixtures/servers.js"

const asking = stdioServer("asking", [
  join(dirname(fileURLToPath(import.meta.url)), "../../../host-node/test/fixtures/mcp/asking-server.mjs")
])
const ANSWER = { name: "Ada", age: 36, newsletter: true, colour: "red" }
let dir: string
let pool: McpPool
let gateway: Gateway
beforeAll(async () => {
  pool = new McpPool()
  dir = mkdtempSync(join(tmpdir(), "plugboard-gateway-questions-"))
  const discovered = await discoverMcpServers([asking], { pool, cacheDir: join(dir, "cache") })
  const derived = CatalogSource.toPlugins(mcpSpecs(discovered, { pool }))
  expect(derived.errors).toEqual([])
  gateway = makeGateway({ catalog: Catalog.unsafeMake(derived.plugins), did: "did:key:test" })
}, 60_000)
afterAll(async () => {
  await gateway?.close()
  await pool?.close()
  rmSync(dir, { recursive: true, force: true })
})

const elicited = (result: unknown) => JSON.parse(firstText(result).replace(/^elicited: /, ""))

describe("a question of an upstream server, asked of the gateway's client", () => {
  it("2026-07-28: the SDK v2 client answers the input_required round; its values reach the server", async () => {
    const [clientSide, serverSide] = MemoryV2.createLinkedPair()
    await gateway.connect(serverSide)
    const client = new ClientV2(
      { name: "sdk-v2", version: "2.4.0" },
      { versionNegotiation: { mode: "auto" }, capabilities: { elicitation: { form: {} } } }
    )
    const asked: Array<string> = []
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push((request.params as { message: string }).message)
      return { action: "accept", content: ANSWER }
    })
    await client.connect(clientSide)
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28")
      await client.callTool({ name: "load_capability", arguments: { names: ["asking"] } })
      const result = await client.callTool({ name: "ask_name", arguments: {} })
      expect(asked).toEqual(["Who are you?"])
      expect(elicited(result)).toEqual({ action: "accept", content: ANSWER })
    } finally {
      await client.close()
    }
  })

  it("2025-11-25: the v1 client gets elicitation/create and its decline reaches the server", async () => {
    const [clientSide, serverSide] = MemoryV1.createLinkedPair()
    await gateway.connect(serverSide)
    const client = new ClientV1({ name: "sdk-v1", version: "1.32" }, { capabilities: { elicitation: {} } })
    const asked: Array<string> = []
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message)
      return { action: "decline" }
    })
    await client.connect(clientSide)
    try {
      await client.callTool({ name: "load_capability", arguments: { names: ["asking"] } })
      const result = await client.callTool({ name: "ask_name", arguments: {} })
      expect(asked).toEqual(["Who are you?"])
      expect(elicited(result)).toEqual({ action: "decline" })
    } finally {
      await client.close()
    }
  })

  it("a client that declared no elicitation is not asked: the server is declined", async () => {
    const [clientSide, serverSide] = MemoryV1.createLinkedPair()
    await gateway.connect(serverSide)
    const client = new ClientV1({ name: "sdk-v1", version: "1.32" })
    await client.connect(clientSide)
    try {
      await client.callTool({ name: "load_capability", arguments: { names: ["asking"] } })
      expect(elicited(await client.callTool({ name: "ask_name", arguments: {} }))).toEqual({
        action: "decline"
      })
    } finally {
      await client.close()
    }
  })
})
