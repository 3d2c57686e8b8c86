/**
 * The gateway serves both eras of MCP to real SDK clients in the same run: the SDK v2 client
 * (`@modelcontextprotocol/client`) negotiating 2026-07-28 (`server/discover`, then every request
 * with its `_meta` envelope; told of a load on its `subscriptions/listen` stream) and the v1 client
 * (`@modelcontextprotocol/sdk`) on 2025-11-25 (`initialize`; told on its session). In memory (the
 * stdio entry, `Gateway.connect`) and over real HTTP (`GatewayHttp`): each lists the meta-tools,
 * loads, sees the tools appended, calls one; a thread shared by both eras tells each of the other's
 * loads; the cache hints of `tools/list` read off the wire.
 */
import {
  Client as ClientV2,
  InMemoryTransport,
  StreamableHTTPClientTransport
} from "@modelcontextprotocol/client"
import { Catalog, LoadedPluginsStore } from "@plugboard/core"
import { afterEach, describe, expect, it } from "vitest"
import { GATEWAY_CACHE_HINT, makeGateway } from "../src/index.js"
import {
  deferred,
  firstText,
  httpClient,
  listen,
  memoryClient,
  probes,
  rawPost,
  toolNames,
  weather
} from "./fixtures/gateway.js"

const catalog = Catalog.unsafeMake([weather])
const META = ["list_capabilities", "load_capability", "call_tool"]
const WEATHER_TOOLS = [...META, "get_current_weather", "get_weather_forecast"]
const MODERN = "2026-07-28"

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
const gatewayOf = () => {
  const gateway = makeGateway({ catalog, did: "did:key:test", threads: LoadedPluginsStore.makeMemory() })
  cleanups.push(() => gateway.close())
  return gateway
}

/**
 * A v2 client that negotiates (`auto`: `server/discover` first), listening for tool-list changes
 * once connected; `next()` waits for the next `list_changed` on that stream.
 */
const modernClient = async (transport: Parameters<ClientV2["connect"]>[0]) => {
  const client = new ClientV2({ name: "sdk-v2", version: "2.4.0" }, { versionNegotiation: { mode: "auto" } })
  let waiting = deferred()
  let told = 0
  client.setNotificationHandler("notifications/tools/list_changed", () => {
    told++
    waiting.resolve()
    waiting = deferred()
  })
  await client.connect(transport)
  cleanups.push(() => client.close())
  // Resolves once the gateway acknowledged it: a load after this is heard.
  const subscription = await client.listen({ toolsListChanged: true })
  return { client, subscription, next: () => waiting.promise, told: () => told }
}

/** Loads weather, waits to be told, and checks the list grew by its tools, then calls one. */
const loadAndCall = async (
  // Either SDK's client: only what both have in common.
  client: {
    callTool: (params: { name: string; arguments?: Record<string, unknown> }) => Promise<unknown>
    listTools: () => Promise<{ tools: Array<{ name: string }> }>
  },
  told: () => Promise<void>
) => {
  expect(toolNames(await client.listTools())).toEqual(META)
  const heard = told()
  const load = await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
  expect(JSON.parse(firstText(load)).newlyLoaded).toEqual(["weather"])
  await heard
  expect(toolNames(await client.listTools())).toEqual(WEATHER_TOOLS)
  const answer = await client.callTool({ name: "get_current_weather", arguments: { city: "Oslo" } })
  expect(JSON.parse(firstText(answer))).toMatchObject({ city: "Oslo", source: "offline fixture" })
}

describe("in memory (the stdio entry): each client in its own era", () => {
  it("the v2 client negotiates 2026-07-28, the v1 client 2025-11-25; each loads and sees its tools appended", async () => {
    const gateway = gatewayOf()
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await gateway.connect(serverSide)
    const modern = await modernClient(clientSide)
    expect(modern.client.getNegotiatedProtocolVersion()).toBe(MODERN)
    expect(modern.client.getInstructions()).toContain("## Available Capabilities")
    expect(modern.subscription.honoredFilter).toEqual({ toolsListChanged: true })
    await loadAndCall(modern.client, modern.next)

    const legacy = await memoryClient(gateway)
    cleanups.push(() => legacy.client.close())
    // Its own connection, its own thread: nothing loaded yet.
    await loadAndCall(legacy.client, legacy.listChanged.next)
    expect(legacy.versions()).toEqual(["2025-11-25"])
  })

  it("a kept thread shared by both eras: a load in either is told to the other", async () => {
    const plugins = Catalog.unsafeMake([weather, probes({ started: () => {}, aborted: () => {} })])
    const gateway = makeGateway({
      catalog: plugins,
      did: "did:key:test",
      threads: LoadedPluginsStore.makeMemory()
    })
    cleanups.push(() => gateway.close())
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await gateway.connect(serverSide, { thread: "both" })
    const modern = await modernClient(clientSide)
    const legacy = await memoryClient(gateway, "both")
    cleanups.push(() => legacy.client.close())
    // 2026-07-28 loads: the 2025 session is told on its own.
    const legacyTold = legacy.listChanged.next()
    await modern.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await legacyTold
    expect(toolNames(await legacy.client.listTools())).toEqual(WEATHER_TOOLS)
    // 2025 loads: the 2026-07-28 client hears it on its listen stream.
    const modernTold = modern.next()
    await legacy.client.callTool({ name: "load_capability", arguments: { names: ["probe"] } })
    await modernTold
    expect(toolNames(await modern.client.listTools())).toEqual([
      ...WEATHER_TOOLS,
      "wait_for_abort",
      "count_up",
      "blocks"
    ])
  })

  it("on 2026-07-28 the client's cancellation aborts the handler, and its progress token gets the progress", async () => {
    const started = deferred()
    const aborted = deferred<unknown>()
    const plugins = Catalog.unsafeMake([
      probes({ started: () => started.resolve(), aborted: (reason) => aborted.resolve(reason) })
    ])
    const gateway = makeGateway({ catalog: plugins, did: "did:key:test" })
    cleanups.push(() => gateway.close())
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await gateway.connect(serverSide)
    const { client } = await modernClient(clientSide)
    await client.callTool({ name: "load_capability", arguments: { names: ["probe"] } })
    const controller = new AbortController()
    const call = client.callTool({ name: "wait_for_abort", arguments: {} }, { signal: controller.signal })
    call.catch(() => {})
    await started.promise
    controller.abort("the user stopped it")
    await aborted.promise
    await expect(call).rejects.toThrow()
    const progress: Array<unknown> = []
    const counted = await client.callTool(
      { name: "count_up", arguments: { steps: 2 } },
      { onprogress: (p) => progress.push(p) }
    )
    expect(firstText(counted)).toBe("counted to 2")
    expect(progress).toEqual([
      { progress: 1, total: 2, message: "step 1" },
      { progress: 2, total: 2, message: "step 2" }
    ])
  })
})

describe("over Streamable HTTP: each request routed by its era", () => {
  it("the v2 client on 2026-07-28 (thread in the URL) and the v1 client's session, in one server", async () => {
    const { url } = await listen(gatewayOf())
    const modern = await modernClient(new StreamableHTTPClientTransport(new URL(`${url}?thread=modern`)))
    expect(modern.client.getNegotiatedProtocolVersion()).toBe(MODERN)
    await loadAndCall(modern.client, modern.next)

    const legacy = await httpClient(url)
    cleanups.push(() => legacy.client.close())
    expect(legacy.transport.protocolVersion).toBe("2025-11-25")
    await loadAndCall(legacy.client, legacy.listChanged.next)
  })

  it("a thread named by both eras: a v1 session's load is heard on the v2 client's listen stream, and back", async () => {
    const { url } = await listen(gatewayOf())
    const modern = await modernClient(new StreamableHTTPClientTransport(new URL(`${url}?thread=shared`)))
    const legacy = await httpClient(`${url}?thread=shared`)
    cleanups.push(() => legacy.client.close())
    const heard = modern.next()
    await legacy.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await heard
    expect(toolNames(await modern.client.listTools())).toEqual(WEATHER_TOOLS)
    // A thread of another name heard nothing, and lists what it loaded: nothing.
    const other = await modernClient(new StreamableHTTPClientTransport(new URL(`${url}?thread=other`)))
    expect(toolNames(await other.client.listTools())).toEqual(META)
    expect(other.told()).toBe(0)
  })

  it("on 2026-07-28 over HTTP: progress streams on the call's own response, and a cancelled call aborts its handler", async () => {
    const started = deferred()
    const aborted = deferred<unknown>()
    const plugins = Catalog.unsafeMake([
      probes({ started: () => started.resolve(), aborted: (reason) => aborted.resolve(reason) })
    ])
    const gateway = makeGateway({
      catalog: plugins,
      did: "did:key:test",
      threads: LoadedPluginsStore.makeMemory()
    })
    cleanups.push(() => gateway.close())
    const { url } = await listen(gateway)
    const { client } = await modernClient(new StreamableHTTPClientTransport(new URL(`${url}?thread=probe`)))
    await client.callTool({ name: "load_capability", arguments: { names: ["probe"] } })
    const progress: Array<unknown> = []
    const counted = await client.callTool(
      { name: "count_up", arguments: { steps: 3 } },
      { onprogress: (p) => progress.push(p) }
    )
    expect(firstText(counted)).toBe("counted to 3")
    expect(progress).toHaveLength(3)
    const controller = new AbortController()
    const call = client.callTool({ name: "wait_for_abort", arguments: {} }, { signal: controller.signal })
    call.catch(() => {})
    await started.promise
    controller.abort("the user stopped it")
    await aborted.promise
    await expect(call).rejects.toThrow()
  })

  it("2026-07-28 requests that name no thread share the endpoint's thread; a 2025 session keeps its own", async () => {
    const { url } = await listen(gatewayOf())
    const first = await modernClient(new StreamableHTTPClientTransport(new URL(url)))
    const second = await modernClient(new StreamableHTTPClientTransport(new URL(url)))
    const heard = second.next()
    await first.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await heard
    expect(toolNames(await second.client.listTools())).toEqual(WEATHER_TOOLS)
    const legacy = await httpClient(url)
    cleanups.push(() => legacy.client.close())
    expect(toolNames(await legacy.client.listTools())).toEqual(META)
  })

  it("tools/list and server/discover on 2026-07-28 say on the wire: complete, ttlMs 0, cacheScope private; the 2025 answer carries neither", async () => {
    const { url } = await listen(gatewayOf())
    const envelope = {
      "io.modelcontextprotocol/protocolVersion": MODERN,
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "0" },
      "io.modelcontextprotocol/clientCapabilities": {}
    }
    const modern = await rawPost(
      url,
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: envelope } },
      { "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list" }
    )
    expect(modern.status).toBe(200)
    expect(modern.json.result).toMatchObject({ resultType: "complete", ...GATEWAY_CACHE_HINT })
    expect(GATEWAY_CACHE_HINT).toEqual({ ttlMs: 0, cacheScope: "private" })
    expect(toolNames(modern.json.result)).toEqual(META)
    const discovered = await rawPost(
      url,
      { jsonrpc: "2.0", id: 3, method: "server/discover", params: { _meta: envelope } },
      { "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover" }
    )
    expect(discovered.json.result).toMatchObject({ supportedVersions: [MODERN], ...GATEWAY_CACHE_HINT })
    expect(discovered.json.result.instructions).toContain("list_capabilities")
    const legacy = await rawPost(url, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} })
    expect(legacy.json.result.ttlMs).toBeUndefined()
    expect(legacy.json.result.cacheScope).toBeUndefined()
  })

  it("a revision it does not serve, or a 2026-07-28 header without the envelope: the SDK's errors, said", async () => {
    const { url } = await listen(gatewayOf())
    const future = await rawPost(
      url,
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {}
          }
        }
      },
      { "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list" }
    )
    expect(future.status).toBe(400)
    expect(future.json.error.code).toBe(-32022)
    expect(future.json.error.data.supported).toEqual([MODERN])
    const bare = await rawPost(
      url,
      { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
      { "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list" }
    )
    expect(bare.status).toBe(400)
    expect(bare.json.error.code).toBe(-32602)
    expect(bare.json.error.message).toMatch(/envelope|_meta/)
  })

  it("a 2026-07-28 client naming a bad thread key is refused (400) as a 2025 one is", async () => {
    const { url } = await listen(gatewayOf())
    const client = new ClientV2(
      { name: "sdk-v2", version: "2.4.0" },
      { versionNegotiation: { mode: "auto" } }
    )
    await expect(
      client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}?thread=${encodeURIComponent("no spaces")}`))
      )
    ).rejects.toThrow(/Bad thread key|400/)
  })
})
