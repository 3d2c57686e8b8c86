/**
 * `plugboard mcp`'s command line: its help says what the credential is; a bad command line is a
 * usage error (exit 2) saying what to do; boot refuses what it must (no credential off loopback, a
 * short token, a catalog that does not boot, with serve's very lines); and off loopback, with its
 * token, an unauthenticated request is refused while the token's holder is served.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, gatewayCommand, META, runCliWith, startHttpGateway, WEATHER } from "./mcpGatewayHelpers.js"

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-mcp-cli-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const TOKEN = "0123456789abcdef0123456789abcdef0123"

describe("plugboard mcp --help", () => {
  it("lists the options and says which credential HTTP off loopback needs", async () => {
    const help = await runCliWith(dir, {}, "mcp", "--help")
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("Usage: plugboard mcp [module] [options]")
    for (const flag of [
      "--mcp FILE",
      "--skills DIR",
      "--thread ID",
      "--http PORT",
      "--host H",
      "--token-file FILE"
    ]) {
      expect(help.stdout).toContain(flag)
    }
    expect(help.stdout).toContain("PLUGBOARD_MCP_TOKEN")
    expect(help.stdout).toContain("Any non-loopback address needs a bearer token")
  })
})

describe("a command line that cannot run is a usage error saying what to do", () => {
  const cases: ReadonlyArray<[ReadonlyArray<string>, string]> = [
    [["--thread", "no spaces"], "--thread: a thread key is 1 to 128 characters"],
    [["--http", "0", "--thread", "work"], "--thread is for stdio: over HTTP each client names its thread"],
    [["--token", "x"], "There is no --token: a command line is visible to every user of the machine."],
    [["--http", "99999"], "--http must be a port from 0 to 65535"],
    [["--host", "0.0.0.0"], "--host is for --http"],
    [["--http", "0", "--callback-port", "8765"], "--callback-port is for stdio"],
    [["--callback-port", "http"], '--callback-port must be a whole number from 0 to 65535, got "http".'],
    [["--open=yes"], "Option --open takes no value."],
    [["--nope", "1"], "Unknown option --nope."]
  ]
  for (const [args, message] of cases) {
    it(args.join(" "), async () => {
      const run = await runCliWith(dir, {}, "mcp", WEATHER, ...args)
      expect(run.code).toBe(2)
      expect(run.stderr).toContain(message)
      expect(run.stderr).toContain("Run 'plugboard mcp --help' for its options.")
      expect(run.stdout).toBe("")
    })
  }
})

describe("boot refuses what it must", () => {
  it("HTTP off loopback without a credential: names the variable and the header", async () => {
    const run = await runCliWith(dir, {}, "mcp", WEATHER, "--http", "0", "--host", "0.0.0.0")
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(
      "[boot-error] plugboard mcp --http on 0.0.0.0 needs a credential: set PLUGBOARD_MCP_TOKEN (or --token-file FILE) to a token of at least 32 characters; every request must then carry Authorization: Bearer <token>."
    )
  })

  it("a token too short to guess is not one", async () => {
    const run = await runCliWith(
      dir,
      { PLUGBOARD_MCP_TOKEN: "secret" },
      "mcp",
      WEATHER,
      "--http",
      "0",
      "--host",
      "0.0.0.0"
    )
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("[boot-error] The MCP gateway's token must be at least 32 characters")
  })

  it("a catalog that does not boot: the same [boot-error] lines as serve", async () => {
    const broken = join(import.meta.dirname, "inspect/fixtures/hard-errors.ts")
    const gateway = await runCliWith(dir, {}, "mcp", broken)
    const serve = await runCliWith(dir, {}, "serve", broken, "--port", "0")
    expect(gateway.code).toBe(1)
    const lines = (text: string) => text.split("\n").filter((l) => l.startsWith("[boot-error]"))
    expect(lines(gateway.stderr)).toContain(
      "[boot-error] Plugin 'weather' manifest example references unknown tool 'foo'."
    )
    expect(lines(gateway.stderr)).toEqual(lines(serve.stderr))
    // And an MCP config that does not parse, as serve words it too.
    const servers = join(dir, "bad-servers.json")
    writeFileSync(servers, JSON.stringify({ mcpServers: { "Bad Name": { command: "x" } } }))
    const badConfig = await runCliWith(dir, {}, "mcp", WEATHER, "--mcp", servers)
    const serveConfig = await runCliWith(dir, {}, "serve", WEATHER, "--mcp", servers, "--port", "0")
    expect(badConfig.code).toBe(1)
    expect(lines(badConfig.stderr).length).toBeGreaterThan(0)
    expect(lines(badConfig.stderr)).toEqual(lines(serveConfig.stderr))
  }, 90_000)
})

describe("HTTP off loopback, with its token", () => {
  it("refuses a request without it (401) and serves its holder", async () => {
    const gateway = await startHttpGateway(dir, [WEATHER, "--http", "0", "--host", "0.0.0.0"], {
      PLUGBOARD_MCP_TOKEN: TOKEN
    })
    try {
      expect(gateway.output()).toContain("credential  Authorization: Bearer <token> on every request")
      const url = gateway.url.replace("0.0.0.0", "127.0.0.1")
      const refused = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
      })
      expect(refused.status).toBe(401)
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="plugboard-mcp"')
      const client = new Client({ name: "holder", version: "0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } }
        })
      )
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(META)
      await client.close()
    } finally {
      expect(await gateway.stop()).toBe(0)
    }
  }, 60_000)
})

describe("over stdio, a client that closes its end right after its requests", () => {
  /** Writes `messages` to a fresh gateway's stdin, ends it at once, and reads every line it answers. */
  const oneShot = (messages: ReadonlyArray<unknown>) =>
    new Promise<{ code: number | null; answers: Array<Record<string, unknown>> }>((resolve) => {
      const { command, args } = gatewayCommand(WEATHER)
      const child = spawn(command, args, { cwd: dir, env: cleanEnv(dir), stdio: ["pipe", "pipe", "ignore"] })
      let out = ""
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8")
      })
      child.once("exit", (code) =>
        resolve({
          code,
          answers: out
            .split("\n")
            .filter((l) => l.trim() !== "")
            .map((l) => JSON.parse(l))
        })
      )
      child.stdin.end(messages.map((m) => `${JSON.stringify(m)}\n`).join(""))
    })
  const envelope = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "one-shot", version: "0" },
    "io.modelcontextprotocol/clientCapabilities": {}
  }

  it("gets every answer before the gateway exits, on 2025-11-25 and on 2026-07-28", async () => {
    const legacy = await oneShot([
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "one-shot", version: "0" }
        }
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "load_capability", arguments: { names: ["weather"] } }
      },
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} }
    ])
    expect(legacy.code).toBe(0)
    const byId = (answers: Array<Record<string, unknown>>, id: number) =>
      answers.find((a) => a.id === id)?.result as Record<string, unknown> & { tools: Array<{ name: string }> }
    expect(byId(legacy.answers, 1).protocolVersion).toBe("2025-11-25")
    // The requests run at once (JSON-RPC does not order them): each is answered, the load done.
    const loaded = (answers: Array<Record<string, unknown>>) =>
      JSON.parse((byId(answers, 2).content as Array<{ text: string }>)[0]!.text).newlyLoaded
    expect(loaded(legacy.answers)).toEqual(["weather"])
    expect(
      byId(legacy.answers, 3)
        .tools.map((t) => t.name)
        .slice(0, 3)
    ).toEqual(META)

    const modern = await oneShot([
      { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: envelope } },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { _meta: envelope, name: "load_capability", arguments: { names: ["weather"] } }
      },
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: envelope } }
    ])
    expect(modern.code).toBe(0)
    expect(byId(modern.answers, 1).supportedVersions).toEqual(["2026-07-28"])
    expect(loaded(modern.answers)).toEqual(["weather"])
    expect(
      byId(modern.answers, 3)
        .tools.map((t) => t.name)
        .slice(0, 3)
    ).toEqual(META)
    expect(byId(modern.answers, 3)).toMatchObject({ resultType: "complete", ttlMs: 0, cacheScope: "private" })
  }, 60_000)
})
