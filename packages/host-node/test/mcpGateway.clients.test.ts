/**
 * `plugboard mcp` driven by real MCP clients from the npm registry, none written here: the official
 * SDK client v1 (`@modelcontextprotocol/sdk`, MCP 2025-11-25) and v2 (`@modelcontextprotocol/client`,
 * on 2025-11-25 by default and on 2026-07-28 when it negotiates), each over stdio (the client starts
 * the gateway, as Claude Code or Cursor do) and over Streamable HTTP; and the MCP Inspector's CLI,
 * whose every command is a fresh connection (over stdio, a fresh process). Each connects (the
 * revision asserted), lists the meta-tools only, loads the weather plugin, sees its tools (after
 * `list_changed`, or through `call_tool`), calls one and reads the answer.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client"
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  cleanEnv,
  deferred,
  gatewayCommand,
  type HttpGateway,
  inspect,
  inspectorRuns,
  META,
  startHttpGateway,
  WEATHER
} from "./mcpGatewayHelpers.js"

let dir: string
let http: HttpGateway
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-mcp-clients-"))
  http = await startHttpGateway(dir, [WEATHER, "--http", "0"])
}, 60_000)
afterAll(async () => {
  expect(await http?.stop()).toBe(0)
  rmSync(dir, { recursive: true, force: true })
})

/**
 * The protocol version the server answered `initialize` with, read off the client's transport as
 * the messages arrive (the v1 client keeps it to itself).
 */
const initializedWith = (transport: {
  start: () => Promise<void>
  onmessage?: ((...args: never[]) => void) | undefined
}) => {
  let version: string | undefined
  const start = transport.start.bind(transport)
  transport.start = () => {
    const handler = transport.onmessage as ((...args: unknown[]) => void) | undefined
    transport.onmessage = ((...args: unknown[]) => {
      const v = (args[0] as { result?: { protocolVersion?: unknown } }).result?.protocolVersion
      if (typeof v === "string") version = v
      handler?.(...args)
    }) as never
    return start()
  }
  return () => version
}

const names = (listed: { tools: ReadonlyArray<{ name: string }> }) => listed.tools.map((t) => t.name)
const text = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text
const WEATHER_TOOLS = [...META, "get_current_weather", "get_weather_forecast"]

describe("the official SDK client v1", () => {
  const drive = async (client: ClientV1) => {
    let told = deferred()
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => told.resolve())
    expect(names(await client.listTools())).toEqual(META)
    const load = await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    expect(JSON.parse(text(load)).newlyLoaded).toEqual(["weather"])
    await told.promise
    told = deferred()
    expect(names(await client.listTools())).toEqual(WEATHER_TOOLS)
    const answer = await client.callTool({ name: "get_current_weather", arguments: { city: "Berlin" } })
    expect(JSON.parse(text(answer))).toMatchObject({ city: "Berlin", source: "offline fixture" })
    // The fallback reaches the same tool for a client that never reads the list again.
    const fallback = await client.callTool({
      name: "call_tool",
      arguments: { name: "get_weather_forecast", arguments: { city: "Berlin", days: 2 } }
    })
    expect(JSON.parse(text(fallback)).days).toHaveLength(2)
  }

  it("over stdio: the client starts the gateway", async () => {
    const client = new ClientV1({ name: "sdk-v1", version: "1.32" })
    const { command, args } = gatewayCommand(WEATHER)
    const transport = new StdioV1({ command, args, cwd: dir, env: cleanEnv(dir), stderr: "pipe" })
    const version = initializedWith(transport)
    await client.connect(transport)
    try {
      expect(version()).toBe("2025-11-25")
      await drive(client)
    } finally {
      await client.close()
    }
  })

  it("over Streamable HTTP", async () => {
    const client = new ClientV1({ name: "sdk-v1", version: "1.32" })
    const transport = new HttpV1(new URL(http.url))
    await client.connect(transport)
    try {
      expect(transport.protocolVersion).toBe("2025-11-25")
      await drive(client)
    } finally {
      await client.close()
    }
  })
})

describe("the official SDK client v2", () => {
  /** A v2 client whose listChanged handler re-lists on its own and hands over the new list. */
  const clientV2 = () => {
    let listed = deferred<ReadonlyArray<string>>()
    const client = new ClientV2(
      { name: "sdk-v2", version: "2.4.0" },
      {
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (error === null && tools !== null) listed.resolve(tools.map((t) => t.name))
            }
          }
        }
      }
    )
    return {
      client,
      nextList: () => {
        const waiting = listed.promise
        return waiting.finally(() => {
          listed = deferred()
        })
      }
    }
  }

  const drive = async ({ client, nextList }: ReturnType<typeof clientV2>) => {
    expect(names(await client.listTools())).toEqual(META)
    const relisted = nextList()
    const load = await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
    expect(JSON.parse(text(load)).newlyLoaded).toEqual(["weather"])
    // The client read list_changed and listed the tools again by itself.
    expect(await relisted).toEqual(WEATHER_TOOLS)
    const answer = await client.callTool({
      name: "get_weather_forecast",
      arguments: { city: "Tokyo", days: 3 }
    })
    expect(JSON.parse(text(answer)).days).toHaveLength(3)
  }

  it("over stdio (by default it speaks 2025-11-25: initialize, no probe)", async () => {
    const v2 = clientV2()
    const { command, args } = gatewayCommand(WEATHER)
    await v2.client.connect(new StdioV2({ command, args, cwd: dir, env: cleanEnv(dir), stderr: "pipe" }))
    try {
      expect(v2.client.getNegotiatedProtocolVersion()).toBe("2025-11-25")
      await drive(v2)
    } finally {
      await v2.client.close()
    }
  })

  it("over Streamable HTTP", async () => {
    const v2 = clientV2()
    await v2.client.connect(new HttpV2(new URL(http.url)))
    try {
      expect(v2.client.getNegotiatedProtocolVersion()).toBe("2025-11-25")
      await drive(v2)
    } finally {
      await v2.client.close()
    }
  })
})

describe("the official SDK client v2 on MCP 2026-07-28 (it negotiates: server/discover first)", () => {
  /** A client that negotiates, and is told of a load on the subscriptions/listen stream it opens. */
  const drive = async (connect: (client: ClientV2) => Promise<void>) => {
    const client = new ClientV2(
      { name: "sdk-v2", version: "2.4.0" },
      { versionNegotiation: { mode: "auto" } }
    )
    let told = deferred()
    client.setNotificationHandler("notifications/tools/list_changed", () => told.resolve())
    await connect(client)
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28")
      expect(client.getInstructions()).toContain("list_capabilities")
      const subscription = await client.listen({ toolsListChanged: true })
      expect(subscription.honoredFilter).toEqual({ toolsListChanged: true })
      expect(names(await client.listTools())).toEqual(META)
      const load = await client.callTool({ name: "load_capability", arguments: { names: ["weather"] } })
      expect(JSON.parse(text(load)).newlyLoaded).toEqual(["weather"])
      await told.promise
      told = deferred()
      expect(names(await client.listTools())).toEqual(WEATHER_TOOLS)
      const answer = await client.callTool({ name: "get_current_weather", arguments: { city: "Lima" } })
      expect(JSON.parse(text(answer))).toMatchObject({ city: "Lima", source: "offline fixture" })
    } finally {
      await client.close()
    }
  }

  it("over stdio (the probe runs on a throwaway process, then the client's own speaks 2026-07-28)", async () => {
    const { command, args } = gatewayCommand(WEATHER)
    await drive((client) =>
      client.connect(new StdioV2({ command, args, cwd: dir, env: cleanEnv(dir), stderr: "pipe" }))
    )
  }, 60_000)

  it("over Streamable HTTP, the thread named in the URL (the revision has no sessions)", async () => {
    await drive((client) => client.connect(new HttpV2(new URL(`${http.url}?thread=modern`))))
  })
})

describe.skipIf(!inspectorRuns())("the MCP Inspector's CLI (every command a fresh connection)", () => {
  /** The four commands, each its own connection: a thread key carries the load between them. */
  const drive = async (target: ReadonlyArray<string>, trailing: ReadonlyArray<string> = []) => {
    const run = (...args: ReadonlyArray<string>) => inspect(dir, [...target, ...args, ...trailing])
    expect(names(await run("--method", "tools/list"))).toEqual(META)
    const load = await run(
      "--method",
      "tools/call",
      "--tool-name",
      "load_capability",
      "--tool-arg",
      "names=weather"
    )
    expect(JSON.parse(text(load)).newlyLoaded).toEqual(["weather"])
    expect(names(await run("--method", "tools/list"))).toEqual(WEATHER_TOOLS)
    const answer = await run(
      "--method",
      "tools/call",
      "--tool-name",
      "get_current_weather",
      "--tool-arg",
      "city=Oslo"
    )
    expect(JSON.parse(text(answer))).toMatchObject({ city: "Oslo" })
  }

  it("over stdio, each command a new gateway process, the thread named with --thread", async () => {
    const { command, args } = gatewayCommand(WEATHER, "--thread", "inspector-stdio")
    // `--` ends the Inspector's options: what follows is the command that starts the server.
    await drive([], ["--", command, ...args])
  }, 120_000)

  it("over Streamable HTTP, the thread named in the URL", async () => {
    await drive([`${http.url}?thread=inspector-http`, "--transport", "http"])
  }, 60_000)

  it("without a thread, a fresh connection starts empty; call_tool gets core's refusal", async () => {
    const target = [http.url, "--transport", "http"]
    await inspect(dir, [
      ...target,
      "--method",
      "tools/call",
      "--tool-name",
      "load_capability",
      "--tool-arg",
      "names=weather"
    ])
    expect(names(await inspect(dir, [...target, "--method", "tools/list"]))).toEqual(META)
    // The Inspector calls only what the server lists: through call_tool, the gate answers.
    const refused = await inspect(dir, [
      ...target,
      "--method",
      "tools/call",
      "--tool-name",
      "call_tool",
      "--tool-args-json",
      JSON.stringify({ name: "get_current_weather", arguments: { city: "Oslo" } })
    ])
    expect(refused.isError).toBe(true)
    expect(text(refused)).toContain(`Call load_capability with {"names": ["weather"]}`)
  }, 60_000)
})
