/**
 * The gateway driven by the official SDK client (v1), in memory: what a session lists and how it
 * grows, the gate (through direct calls and `call_tool`), threads held by a session and kept by
 * key, cancellation and progress seen from the handler, and blocks passed as the tool gave them.
 */

import { PassThrough } from "node:stream"
import {
  Access,
  CallTool,
  Catalog,
  definePlugin,
  defineTool,
  LoadedPlugins,
  LoadedPluginsStore,
  MetaTools,
  Offer
} from "@plugboard/core"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import { afterEach, describe, expect, it } from "vitest"
import { makeGateway } from "../src/index.js"
import { deferred, firstText, memoryClient, probes, toolNames, weather } from "./fixtures/gateway.js"

const plugin = (
  name: string,
  tools: ReadonlyArray<string>,
  extra: { visibility?: "always" | "silent" } = {}
) =>
  definePlugin({
    name,
    manifest: {
      title: name.toUpperCase(),
      summary: `The ${name} plugin.`,
      whenToUse: [`When ${name} helps.`],
      ...(extra.visibility === undefined ? {} : { visibility: extra.visibility })
    },
    tools: tools.map((t) =>
      defineTool({ name: t, description: `Does ${t}.`, input: Schema.Struct({}), handler: () => `${t} done` })
    )
  })

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})
const gatewayOf = (...args: Parameters<typeof makeGateway>) => {
  const gateway = makeGateway(...args)
  cleanups.push(() => gateway.close())
  return gateway
}

describe("a session's list", () => {
  it("holds the meta-tools only on a catalog without always-tier tools, and grows by a load", async () => {
    const gateway = gatewayOf({ catalog: Catalog.unsafeMake([weather]), did: "did:key:test" })
    const { client, listChanged } = await memoryClient(gateway)
    expect(toolNames(await client.listTools())).toEqual(["list_capabilities", "load_capability", "call_tool"])
    const changed = listChanged.next()
    const loaded = await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await changed
    expect(loaded.isError).toBeUndefined()
    expect(JSON.parse(firstText(loaded)).newlyLoaded).toEqual(["weather"])
    const tools = (await client.listTools()).tools
    expect(tools.map((t) => t.name)).toEqual([
      "list_capabilities",
      "load_capability",
      "call_tool",
      "get_current_weather",
      "get_weather_forecast"
    ])
    expect(tools[3]).toMatchObject({
      description: "[Weather] Current temperature, conditions, precipitation and wind for a city.",
      inputSchema: { type: "object", required: ["city"] }
    })
    const answer = await client.callTool({ name: "get_current_weather", arguments: { city: "Berlin" } })
    expect(JSON.parse(firstText(answer))).toMatchObject({ city: "Berlin", source: "offline fixture" })
  })

  it("is core's offer with call_tool, for any sequence of loads: it only grows, in core's order (property)", async () => {
    const plugins = [
      plugin("alpha", ["a_one", "a_two"]),
      plugin("beta", ["b_one"]),
      plugin("gamma", ["g_one", "g_two", "g_three"]),
      plugin("pinned", ["p_one"], { visibility: "always" }),
      plugin("hidden", ["h_one"], { visibility: "silent" })
    ]
    const catalog = Catalog.unsafeMake(plugins)
    const names = ["alpha", "beta", "gamma", "pinned", "hidden", "nope"]
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }), { maxLength: 5 }),
        async (loads) => {
          const gateway = makeGateway({ catalog, did: "did:key:test" })
          try {
            const { client } = await memoryClient(gateway)
            let listed = toolNames(await client.listTools())
            let loaded = LoadedPlugins.empty
            for (const load of loads) {
              await client.callTool({ name: "load_capability", arguments: { names: load } })
              loaded = LoadedPlugins.add(
                loaded,
                load.filter((n) => catalog.byName.get(n)?.visibility === "on-demand")
              )
              const next = toolNames(await client.listTools())
              expect(next.slice(0, listed.length)).toEqual(listed)
              expect(next).toEqual(CallTool.offer(catalog, loaded).map((t) => t.name))
              listed = next
            }
          } finally {
            await gateway.close()
          }
        }
      ),
      { numRuns: 25 }
    )
  })

  it("each session has its own loadedPlugins", async () => {
    const gateway = gatewayOf({ catalog: Catalog.unsafeMake([weather]), did: "did:key:test" })
    const a = await memoryClient(gateway)
    const b = await memoryClient(gateway)
    await a.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    expect(toolNames(await a.client.listTools())).toContain("get_current_weather")
    expect(toolNames(await b.client.listTools())).toEqual([
      "list_capabilities",
      "load_capability",
      "call_tool"
    ])
  })

  it("offers what the user's grants allow (Access): a plugin that requires more is refused", async () => {
    const admin = definePlugin({
      ...plugin("admin", ["purge"]),
      requires: [{ can: "admin/purge", with: "ixo:oracle" }]
    })
    const catalog = Catalog.unsafeMake([weather, admin])
    const denied = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    const refused = await denied.client.callTool({ name: "load_capability", arguments: { names: ["admin"] } })
    expect(refused.isError).toBe(true)
    expect(firstText(refused)).toContain("Plugin 'admin' cannot be loaded for this user.")
    const granted = await memoryClient(
      gatewayOf({ catalog, did: "did:key:test", grants: [{ can: "admin/purge", with: "ixo:oracle" }] })
    )
    await granted.client.callTool({ name: "load_capability", arguments: { names: ["admin"] } })
    expect(firstText(await granted.client.callTool({ name: "purge", arguments: {} }))).toBe("purge done")
    expect(Access.view(catalog).open).toBe(false)
  })

  it("gives the Tier-1 block as the server's instructions, and lists always-tier tools at connect", async () => {
    const catalog = Catalog.unsafeMake([weather, plugin("pinned", ["p_one"], { visibility: "always" })])
    const { client } = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    expect(client.getInstructions()).toContain("- pinned: The pinned plugin.")
    expect(toolNames(await client.listTools())).toEqual([
      "list_capabilities",
      "load_capability",
      "call_tool",
      "p_one"
    ])
  })
})

describe("a replaced catalog (Gateway.replaceCatalog)", () => {
  it("serves the new catalog from the next request, tells the session its list changed, and keeps the thread's loads", async () => {
    const notes = plugin("notes", ["whoami"])
    const before = Catalog.unsafeMake([weather, { ...notes, tools: [], unavailable: "No list yet." }])
    const gateway = gatewayOf({ catalog: before, did: "did:key:test" })
    const { client, listChanged } = await memoryClient(gateway)
    const load = (names: Array<string>) =>
      client.callTool({ name: "load_capability", arguments: { names } }).then((r) => JSON.parse(firstText(r)))
    expect((await load(["weather", "notes"])).results[1]).toMatchObject({
      name: "notes",
      error: "unavailable"
    })
    const prefix = toolNames(await client.listTools())
    const changed = listChanged.next()
    gateway.replaceCatalog(Catalog.unsafeMake([weather, notes]))
    await changed
    expect(toolNames(await client.listTools())).toEqual(prefix)
    expect((await load(["notes"])).newlyLoaded).toEqual(["notes"])
    expect(toolNames(await client.listTools())).toEqual([...prefix, "whoami"])
    expect(firstText(await client.callTool({ name: "whoami", arguments: {} }))).toBe("whoami done")
  })
})

describe("the gate", () => {
  const catalog = Catalog.unsafeMake([weather])

  it("refuses a tool of a plugin not loaded with core's message, directly and through call_tool", async () => {
    const { client } = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    const direct = await client.callTool({ name: "get_current_weather", arguments: { city: "Rome" } })
    const through = await client.callTool({
      name: "call_tool",
      arguments: { name: "get_current_weather", arguments: { city: "Rome" } }
    })
    for (const result of [direct, through]) {
      expect(result.isError).toBe(true)
      expect(firstText(result)).toBe(Offer.notLoadedMessage("get_current_weather", "weather"))
    }
  })

  it("call_tool runs a loaded tool for a client that never reads the list again", async () => {
    const { client } = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    const load = JSON.parse(
      firstText(await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } }))
    )
    // The load's answer carries what the model needs to call through call_tool.
    expect(load.results[0].tools[0]).toMatchObject({
      name: "get_current_weather",
      inputSchema: { type: "object", required: ["city"] }
    })
    expect(load.note).toContain(MetaTools.CALL_TOOL)
    const result = await client.callTool({
      name: "call_tool",
      arguments: { name: "get_weather_forecast", arguments: { city: "Tokyo", days: 2 } }
    })
    expect(JSON.parse(firstText(result)).days).toHaveLength(2)
  })

  it("answers bad input clearly and loses nothing: unknown tool, bad arguments, bad call_tool input", async () => {
    const { client } = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    const unknown = await client.callTool({ name: "get_wether", arguments: {} })
    expect(unknown.isError).toBe(true)
    expect(firstText(unknown)).toMatch(/^There is no tool named 'get_wether'\. Closest tool names: /)
    await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    for (let i = 0; i < 3; i++) {
      // Never blocked after failures: the client's agent decides its retries.
      const bad = await client.callTool({ name: "get_current_weather", arguments: { town: "Rome" } })
      expect(bad.isError).toBe(true)
      expect(firstText(bad)).toMatch(/^Invalid arguments for tool 'get_current_weather':[\s\S]*is missing/)
    }
    const badInput = await client.callTool({ name: "call_tool", arguments: { arguments: {} } })
    expect(firstText(badInput)).toContain("call_tool: 'name' must be the name of a tool")
    // The session goes on as before.
    const good = await client.callTool({ name: "get_current_weather", arguments: { city: "Rome" } })
    expect(good.isError).toBeUndefined()
    expect(toolNames(await client.listTools())).toHaveLength(5)
  })
})

describe("threads", () => {
  const catalog = Catalog.unsafeMake([weather])

  it("a kept thread is seen by every connection naming it, and loads there announce to the others", async () => {
    const store = LoadedPluginsStore.makeMemory()
    const gateway = gatewayOf({ catalog, did: "did:key:test", threads: store })
    const a = await memoryClient(gateway, "work")
    const b = await memoryClient(gateway, "work")
    const other = await memoryClient(gateway, "home")
    const bTold = b.listChanged.next()
    await a.client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    await bTold
    expect(toolNames(await b.client.listTools())).toContain("get_current_weather")
    expect(toolNames(await other.client.listTools())).not.toContain("get_current_weather")
    // A connection made later, as a one-shot client's next command is, sees it too.
    const later = await memoryClient(gateway, "work")
    const answer = await later.client.callTool({ name: "get_current_weather", arguments: { city: "Oslo" } })
    expect(answer.isError).toBeUndefined()
    expect(await Effect.runPromise(store.get("work"))).toEqual(["weather"])
  })

  it("a gateway without a store refuses a thread key instead of forgetting it", async () => {
    const gateway = gatewayOf({ catalog, did: "did:key:test" })
    await expect(memoryClient(gateway, "work")).rejects.toThrow(/no thread store/)
  })
})

describe("what the handler is given", () => {
  it("the client's cancellation aborts the handler; its progress reaches the client's token", async () => {
    const started = deferred()
    const aborted = deferred<unknown>()
    const catalog = Catalog.unsafeMake([
      probes({ started: () => started.resolve(), aborted: (reason) => aborted.resolve(reason) })
    ])
    const { client } = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    await client.callTool({ name: "load_capability", arguments: { names: ["probe"] } })

    const controller = new AbortController()
    const call = client.callTool({ name: "wait_for_abort", arguments: {} }, undefined, {
      signal: controller.signal
    })
    call.catch(() => {})
    await started.promise
    controller.abort("the user stopped it")
    await aborted.promise
    await expect(call).rejects.toThrow()

    const progress: Array<{ progress: number; total?: number; message?: string }> = []
    const counted = await client.callTool({ name: "count_up", arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p)
    })
    expect(firstText(counted)).toBe("counted to 3")
    expect(progress).toEqual([
      { progress: 1, total: 3, message: "step 1" },
      { progress: 2, total: 3, message: "step 2" },
      { progress: 3, total: 3, message: "step 3" }
    ])
  })

  it("a ToolOutput goes back block for block: annotations, resource links, resources, structured content", async () => {
    const catalog = Catalog.unsafeMake([probes({ started: () => {}, aborted: () => {} })])
    const { client } = await memoryClient(gatewayOf({ catalog, did: "did:key:test" }))
    await client.callTool({ name: "load_capability", arguments: { names: ["probe"] } })
    expect(await client.callTool({ name: "blocks", arguments: {} })).toEqual({
      content: [
        { type: "text", text: "hello", annotations: { audience: ["user"], priority: 0.5 } },
        { type: "resource_link", uri: "file:///notes.txt", name: "notes", mimeType: "text/plain" },
        { type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "A" } }
      ],
      structuredContent: { n: 1 }
    })
  })
})

describe("over stdio (Gateway.stdio)", () => {
  it("a call in flight when the client closes its end is still answered, before the host closes the connection", async () => {
    const gate = deferred()
    const started = deferred()
    const slow = definePlugin({
      name: "slow",
      manifest: {
        title: "Slow",
        summary: "A tool that answers when the test says.",
        whenToUse: ["Testing."],
        visibility: "always"
      },
      tools: [
        defineTool({
          name: "when_told",
          description: "Answers once the test opens its gate.",
          input: Schema.Struct({}),
          handler: async () => {
            started.resolve()
            await gate.promise
            return "told"
          }
        })
      ]
    })
    const gateway = gatewayOf({ catalog: Catalog.unsafeMake([slow]), did: "did:key:test" })
    const stdin = new PassThrough()
    const stdout = new PassThrough()
    let out = ""
    stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
    })
    const connection = await gateway.stdio({ stdin, stdout })
    const answered = (id: number) =>
      out
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as { id?: number; result?: { content?: Array<{ text: string }> } })
        .find((m) => m.id === id)
    stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } } })}\n`
    )
    stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
    stdin.end(
      `${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "when_told", arguments: {} } })}\n`
    )
    await started.promise
    // The input's end is read before the call may answer (the SDK's transport would close on it).
    if (!stdin.readableEnded) await new Promise((resolve) => stdin.once("end", resolve))
    await new Promise((resolve) => setImmediate(resolve))
    gate.resolve()
    await connection.settled()
    await new Promise((resolve) => setImmediate(resolve))
    expect(answered(2)?.result?.content?.[0]?.text).toBe("told")
    await connection.close()
  })
})
