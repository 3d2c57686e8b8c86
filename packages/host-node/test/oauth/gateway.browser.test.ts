/**
 * The gateway's single user connects an OAuth server (issue 38): `plugboard mcp` over stdio,
 * spawned by the official SDK's Client, with an MCP config whose server has `auth: "oauth"`;
 * `oidc-provider` as the authorization server, the SDK's bearer-auth MCP server as the resource,
 * the consent clicked in Chromium on the link the gateway gave (and printed to stderr).
 *
 * Shown: without CONNECTIONS_KEY the gateway refuses to boot, naming the server; the plugin is
 * needs-connect in list_capabilities and load_capability, with a link on the gateway's loopback
 * callback listener, before any tool list is cached too; consent there connects the local user,
 * and the first consent reads the tool list: the session is told its list changed and its call
 * reaches the MCP server as that user; the gateway the client starts next reads the cached list.
 */
import { randomBytes } from "node:crypto"
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  watch,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumMissing, launch } from "../console/browser.js"
import { cleanEnv, gatewayCommand, runCliWith, startHttpGateway } from "../mcpGatewayHelpers.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"

const missing = chromiumMissing()

let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let dir: string
let config: string
const key = randomBytes(32).toString("base64")
const clients: Array<Client> = []

/** Resolves once `read()` contains `pattern`'s match, with it (the gateway's stderr; no sleeps). */
const waitFor = async (read: () => string, pattern: RegExp, on: NodeJS.EventEmitter): Promise<string> => {
  for (;;) {
    const match = pattern.exec(read())
    if (match !== null) return match[1]!
    await new Promise((resolve) => on.once("data", resolve))
  }
}

/** A client that started the gateway over stdio; `stderr()` is what the gateway wrote there. */
const start = async (env: Record<string, string> = {}, ...flags: ReadonlyArray<string>) => {
  const { command, args } = gatewayCommand("--mcp", config, ...flags)
  const transport = new StdioClientTransport({
    command,
    args,
    cwd: dir,
    env: cleanEnv(dir, { CONNECTIONS_KEY: key, ...env }),
    stderr: "pipe"
  })
  let err = ""
  transport.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8")
  })
  const client = new Client({ name: "gateway-oauth-test", version: "0" })
  await client.connect(transport)
  clients.push(client)
  const read = () => err
  return {
    client,
    stderr: read,
    link: (plugin: string) =>
      waitFor(
        read,
        new RegExp(`plugin '${plugin}' needs you to connect your account; open (\\S+)`),
        transport.stderr!
      )
  }
}

const text = (result: Awaited<ReturnType<Client["callTool"]>>): string =>
  (result.content as Array<{ type: string; text: string }>).map((c) => c.text).join("")

beforeAll(async () => {
  if (missing !== undefined) return
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-gateway-"))
  config = join(dir, "mcp.json")
  writeFileSync(config, JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" } } }))
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  for (const client of clients) await client.close().catch(() => {})
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(missing !== undefined)(
  "plugboard mcp: the local user connects an OAuth server (oidc-provider, SDK server, Chromium)",
  () => {
    it("refuses to boot without CONNECTIONS_KEY, naming the server, and with a malformed one (or a malformed previous key)", async () => {
      const run = await runCliWith(dir, {}, "mcp", "--mcp", config)
      expect(run.code).not.toBe(0)
      expect(run.stdout).toBe("")
      expect(run.stderr).toContain(
        "[boot-error] MCP server 'notes' signs each user in with OAuth (auth: \"oauth\"), and CONNECTIONS_KEY is unset"
      )
      const bad = await runCliWith(dir, { CONNECTIONS_KEY: "not a key" }, "mcp", "--mcp", config)
      expect(bad.code).not.toBe(0)
      expect(bad.stderr).toContain("[config-error] CONNECTIONS_KEY must be 32 random bytes")
      expect(bad.stderr).not.toContain("not a key")
      // A rotation's previous key that is no key: named by its position, never quoted.
      const badPrevious = await runCliWith(
        dir,
        {
          CONNECTIONS_KEY: key,
          CONNECTIONS_KEY_PREVIOUS: `${randomBytes(32).toString("hex")},old-secret-text`
        },
        "mcp",
        "--mcp",
        config
      )
      expect(badPrevious.code).not.toBe(0)
      expect(badPrevious.stderr).toContain(
        "[config-error] CONNECTIONS_KEY_PREVIOUS (key 2 of 2) must be 32 random bytes"
      )
      expect(badPrevious.stderr).not.toContain("old-secret-text")
    }, 120_000)

    it("first start (no tool list yet): list_capabilities gives the link, also printed to stderr; after the consent the same session is told its list changed and calls as the local user; the next start reads the cached list", async () => {
      const first = await start()
      let changed: () => void = () => {}
      const listChanged = new Promise<void>((resolve) => {
        changed = resolve
      })
      first.client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed())
      // Unavailable until a connected user lists its tools, and a connect is what does it: the
      // meta-tools give the link (needs-connect), not "unavailable".
      const listed = JSON.parse(
        text(await first.client.callTool({ name: "list_capabilities", arguments: {} }))
      )
      expect(listed.plugins[0]).toMatchObject({
        name: "notes",
        loaded: false,
        needsConnect: { reason: expect.stringContaining("Its tools are listed once a user connects.") }
      })
      expect(listed.plugins[0].unavailable).toBeUndefined()
      const link = await first.link("notes")
      expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/start\?ticket=/)
      expect(new URL(listed.plugins[0].needsConnect.url).origin).toBe(new URL(link).origin)
      expect(await signIn(browser, link, `${new URL(link).origin}/oauth/callback`, "alice")).toBe(
        "Your account is connected to 'notes'. Its tools are offered from now on (your MCP client is told its tool list changed). You can close this page."
      )
      await listChanged
      mcp.seen.length = 0
      const now = JSON.parse(
        text(await first.client.callTool({ name: "load_capability", arguments: { names: ["notes"] } }))
      )
      expect(now.results[0]).toMatchObject({ name: "notes", status: "loaded" })
      expect((await first.client.listTools()).tools.map((t) => t.name)).toContain("whoami")
      expect(text(await first.client.callTool({ name: "whoami", arguments: {} }))).toBe("you are alice")
      expect(mcp.seen).toEqual(["alice"])
      await first.client.close()

      mcp.seen.length = 0
      const second = await start()
      const loaded = JSON.parse(
        text(await second.client.callTool({ name: "load_capability", arguments: { names: ["notes"] } }))
      )
      expect(loaded.results[0]).toMatchObject({ name: "notes", status: "loaded" })
      const whoami = await second.client.callTool({ name: "whoami", arguments: {} })
      expect(whoami.isError ?? false).toBe(false)
      expect(text(whoami)).toBe("you are alice")
      expect(mcp.seen).toEqual(["alice"])
      expect(second.stderr()).not.toContain("needs you to connect")
      await second.client.close()
    }, 180_000)

    it("a user who never connected (the tool list cached): needs-connect with the link in list and load; consent; the same session's next call runs as them", async () => {
      const other = mkdtempSync(join(tmpdir(), "plugboard-oauth-gateway-other-"))
      try {
        mcp.seen.length = 0
        const third = await start({
          PLUGBOARD_DATA_DIR: other,
          MCP_CACHE_DIR: join(dir, ".plugboard", "mcp-cache")
        })
        const listed = JSON.parse(
          text(await third.client.callTool({ name: "list_capabilities", arguments: {} }))
        )
        expect(listed.plugins[0].name).toBe("notes")
        expect(listed.plugins[0].needsConnect.url).toMatch(
          /^http:\/\/127\.0\.0\.1:\d+\/oauth\/start\?ticket=/
        )
        const refused = JSON.parse(
          text(await third.client.callTool({ name: "load_capability", arguments: { names: ["notes"] } }))
        )
        expect(refused.results[0]).toMatchObject({ name: "notes", status: "error", error: "needs-connect" })
        expect(refused.newlyLoaded).toEqual([])
        const link: string = refused.results[0].connectUrl
        expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/start\?ticket=/)
        // Printed once for the user on stderr (stdout is the MCP channel).
        await third.link("notes")
        expect(await signIn(browser, link, `${new URL(link).origin}/oauth/callback`, "bob")).toBe(
          "Your account is connected to 'notes'. You can close this page."
        )
        const loaded = JSON.parse(
          text(await third.client.callTool({ name: "load_capability", arguments: { names: ["notes"] } }))
        )
        expect(loaded.results[0]).toMatchObject({ name: "notes", status: "loaded" })
        const whoami = await third.client.callTool({ name: "whoami", arguments: {} })
        expect(text(whoami)).toBe("you are bob")
        expect(mcp.seen).toEqual(["bob"])
        await third.client.close()
      } finally {
        rmSync(other, { recursive: true, force: true })
      }
    }, 180_000)

    it("over --http the link and the callback are on the gateway's own port, beside /mcp", async () => {
      const other = mkdtempSync(join(tmpdir(), "plugboard-oauth-gateway-http-"))
      const gateway = await startHttpGateway(dir, ["--mcp", config, "--http", "0"], {
        CONNECTIONS_KEY: key,
        PLUGBOARD_DATA_DIR: other,
        MCP_CACHE_DIR: join(dir, ".plugboard", "mcp-cache")
      })
      const client = new Client({ name: "gateway-oauth-http-test", version: "0" })
      try {
        mcp.seen.length = 0
        await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)))
        const refused = JSON.parse(
          text(await client.callTool({ name: "load_capability", arguments: { names: ["notes"] } }))
        )
        expect(refused.results[0]).toMatchObject({ name: "notes", status: "error", error: "needs-connect" })
        const link: string = refused.results[0].connectUrl
        const origin = new URL(gateway.url).origin
        expect(link.startsWith(`${origin}/oauth/start?ticket=`)).toBe(true)
        expect(await signIn(browser, link, `${origin}/oauth/callback`, "carol")).toBe(
          "Your account is connected to 'notes'. You can close this page."
        )
        const loaded = JSON.parse(
          text(await client.callTool({ name: "load_capability", arguments: { names: ["notes"] } }))
        )
        expect(loaded.results[0]).toMatchObject({ name: "notes", status: "loaded" })
        expect(text(await client.callTool({ name: "whoami", arguments: {} }))).toBe("you are carol")
        expect(mcp.seen).toEqual(["carol"])
        // Any other path is still the gateway's: the OAuth routes take only their two.
        expect((await fetch(`${origin}/oauth/other`)).status).not.toBe(200)
      } finally {
        await client.close().catch(() => {})
        await gateway.stop()
        rmSync(other, { recursive: true, force: true })
      }
    }, 180_000)

    it.skipIf(process.platform !== "linux")(
      "--open hands the printed link to xdg-open (an opener on PATH that records what it was given)",
      async () => {
        const other = mkdtempSync(join(tmpdir(), "plugboard-oauth-gateway-open-"))
        const bin = join(other, "bin")
        mkdirSync(bin)
        const opened = join(other, "opened.txt")
        writeFileSync(
          join(bin, "xdg-open"),
          `#!/bin/sh\nprintf '%s' "$1" > "${opened}.part" && mv "${opened}.part" "${opened}"\n`
        )
        chmodSync(join(bin, "xdg-open"), 0o755)
        // Resolves once the opener wrote its file (watched, no sleeps).
        let resolveWritten: (text: string) => void = () => {}
        const written = new Promise<string>((resolve) => {
          resolveWritten = resolve
        })
        const watcher = watch(other, () => {
          if (existsSync(opened)) resolveWritten(readFileSync(opened, "utf8"))
        })
        try {
          const run = await start(
            {
              PATH: `${bin}:${process.env.PATH ?? ""}`,
              PLUGBOARD_DATA_DIR: other,
              MCP_CACHE_DIR: join(other, "mcp-cache")
            },
            "--open"
          )
          // No list cached in this cache folder: the link is printed and opened at start.
          const link = await run.link("notes")
          expect(await written).toBe(link)
          await run.client.close()
        } finally {
          watcher.close()
          rmSync(other, { recursive: true, force: true })
        }
      },
      120_000
    )
  }
)
