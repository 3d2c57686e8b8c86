/**
 * The gateway over real Streamable HTTP (a Node server on a loopback port), driven by the official
 * SDK client (v1) and by raw requests for what a client may send wrong: sessions and their threads,
 * requests without a session (MCP 2026-07-28 sends no initialize), threads by key, and every
 * refusal (credential, host, origin, path, body size, thread key) with the session left intact.
 */
import { Catalog, LoadedPluginsStore } from "@plugboard/core"
import { afterEach, describe, expect, it } from "vitest"
import { makeGateway, NO_THREAD_NOTE } from "../src/index.js"
import {
  firstText,
  httpClient,
  listen,
  postWithHost,
  rawPost,
  toolNames,
  weather
} from "./fixtures/gateway.js"

const catalog = Catalog.unsafeMake([weather])
const META = ["list_capabilities", "load_capability", "call_tool"]
const TOKEN = "t".repeat(40)

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
const serve = async (options?: Parameters<typeof listen>[1], store = LoadedPluginsStore.makeMemory()) => {
  const gateway = makeGateway({ catalog, did: "did:key:test", threads: store })
  const served = await listen(gateway, options)
  cleanups.push(() => gateway.close())
  cleanups.push(served.close)
  return { ...served, gateway, store }
}
const connect = async (url: string, headers?: Record<string, string>) => {
  const c = await httpClient(url, headers)
  cleanups.push(() => c.client.close())
  return c
}

const call = (id: number, name: string, args: unknown = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args }
})
const list = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list", params: {} })

describe("sessions over Streamable HTTP", () => {
  it("a session lists the meta-tools, loads, is told list_changed, lists the new tools and calls one", async () => {
    const { url } = await serve()
    const { client, listChanged, transport } = await connect(url)
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/)
    expect(toolNames(await client.listTools())).toEqual(META)
    const told = listChanged.next()
    await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await told
    expect(toolNames(await client.listTools())).toEqual([
      ...META,
      "get_current_weather",
      "get_weather_forecast"
    ])
    const answer = await client.callTool({ name: "get_current_weather", arguments: { city: "Lima" } })
    expect(JSON.parse(firstText(answer)).city).toBe("Lima")
  })

  it("each session has its own thread; one naming a thread shares it with every connection naming it", async () => {
    const { url } = await serve()
    const a = await connect(url)
    const b = await connect(url)
    await a.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    expect(toolNames(await b.client.listTools())).toEqual(META)

    const kept = await connect(`${url}?thread=team.alpha`)
    await kept.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await kept.client.close()
    // A new connection (the header names the same thread) sees the load at once.
    const again = await connect(url, { "X-Plugboard-Thread": "team.alpha" })
    expect(toolNames(await again.client.listTools())).toContain("get_weather_forecast")
  })

  it("a request without a session is served on an empty thread it forgets, and says how to keep loads", async () => {
    const { url } = await serve()
    const listed = await rawPost(url, list(1))
    expect(listed.status).toBe(200)
    expect(toolNames(listed.json.result)).toEqual(META)
    const loaded = await rawPost(url, call(2, "load_capability", { names: ["weather"] }))
    expect(loaded.json.result.content[1]).toEqual({ type: "text", text: NO_THREAD_NOTE })
    const refused = await rawPost(url, call(3, "get_current_weather", { city: "Kyiv" }))
    expect(refused.json.result.isError).toBe(true)
    expect(refused.json.result.content[0].text).toContain("Call load_capability with")

    // Naming a thread, a one-shot client loads in one request and calls in the next.
    await rawPost(`${url}?thread=oneshot`, call(4, "load_capability", { names: ["weather"] }))
    const called = await rawPost(`${url}?thread=oneshot`, call(5, "get_current_weather", { city: "Kyiv" }))
    expect(JSON.parse(called.json.result.content[0].text).city).toBe("Kyiv")
  })
})

describe("refusals, each with the session left as it was", () => {
  it("without the credential: 401 with WWW-Authenticate; with it, served", async () => {
    const { url } = await serve({ bearerToken: TOKEN })
    const none = await rawPost(url, list(1))
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="plugboard-mcp"')
    expect(none.json.error.message).toContain("Authorization: Bearer <token>")
    expect((await rawPost(url, list(1), { Authorization: `Bearer ${"x".repeat(40)}` })).status).toBe(401)
    await expect(connect(url)).rejects.toThrow()
    const { client } = await connect(url, { Authorization: `Bearer ${TOKEN}` })
    expect(toolNames(await client.listTools())).toEqual(META)
  })

  it("a loopback gateway refuses another Host and a foreign Origin (DNS rebinding)", async () => {
    const { url, port } = await serve({ allowedHosts: ["127.0.0.1", "localhost", "::1"] })
    const wrongHost = await postWithHost(url, `evil.example:${port}`, list(1))
    expect(wrongHost.status).toBe(403)
    expect(wrongHost.json.error.message).toContain("listens on loopback")
    const foreign = await rawPost(url, list(1), { Origin: "https://evil.example" })
    expect(foreign.status).toBe(403)
    expect((await rawPost(url, list(1), { Origin: `http://localhost:${port}` })).status).toBe(200)
  })

  it("an oversized body is 413 and reads no further; a bad thread key, a wrong path, bad JSON: each said", async () => {
    const { url } = await serve({ maxBodyBytes: 2_000 })
    const { client, transport } = await connect(url)
    await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    const sessionHeaders = { "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-11-25" }
    const big = await rawPost(
      url,
      call(9, "get_current_weather", { city: "x".repeat(5_000) }),
      sessionHeaders
    )
    expect(big.status).toBe(413)
    expect(big.json.error.message).toBe(
      "Request body too large: this MCP gateway reads at most 2000 bytes per request."
    )
    const badKey = await rawPost(`${url}?thread=${encodeURIComponent("no spaces")}`, list(1))
    expect(badKey.status).toBe(400)
    expect(badKey.json.error.message).toContain("Bad thread key: a thread key is 1 to 128 characters")
    const switching = await rawPost(`${url}?thread=other`, list(1), sessionHeaders)
    expect(switching.status).toBe(400)
    expect(switching.json.error.message).toContain("This session keeps its own thread")
    const wrongPath = await rawPost(url.replace("/mcp", "/nope"), list(1))
    expect(wrongPath.status).toBe(404)
    expect((await rawPost(url, "{not json")).json.error).toMatchObject({ code: -32700 })
    const gone = await rawPost(url, list(1), { ...sessionHeaders, "mcp-session-id": "no-such-session" })
    expect(gone.status).toBe(404)
    // Nothing was lost: the session still has its load and calls through.
    expect(toolNames(await client.listTools())).toContain("get_current_weather")
    const answer = await client.callTool({ name: "get_current_weather", arguments: { city: "Quito" } })
    expect(answer.isError).toBeUndefined()
  })

  it("at most maxSessions sessions: one more initialize is 503", async () => {
    const { url, handler } = await serve({ maxSessions: 2 })
    await connect(url)
    await connect(url)
    expect(handler.sessionCount).toBe(2)
    await expect(connect(url)).rejects.toThrow(/Too many sessions|503/)
  })
})
