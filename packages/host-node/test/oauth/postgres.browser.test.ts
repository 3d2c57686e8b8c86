/**
 * OAuth connections on Postgres (`DATABASE_URL`, docs/oauth.md#in-the-host): the host keeps them
 * in the shared `connections` table, so a user who connected through one host is served as
 * themselves by another. Real components only: a PostgreSQL cluster of this file's own,
 * oidc-provider, the SDK's bearer-auth MCP server, Chromium for the consent.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RuntimeLogger } from "@plugboard/core"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createOracleApp, type OracleApp, quietLogger } from "../../src/index.js"
import { chromiumMissing, launch } from "../console/browser.js"
import { call, headersFor, newSession, user } from "../helpers.js"
import { answerTo, toolText } from "../mcpHelpers.js"
import { installed, type OwnEngine, ownPostgres } from "../ownEngines.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"

const skip = chromiumMissing() !== undefined || !installed.postgres
const key = randomBytes(32).toString("base64")
let pg: OwnEngine
let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let dir: string
const apps: Array<OracleApp> = []

/**
 * A host on the shared Postgres, with a data folder of its own and the shared tool-list cache
 * (or its own, `cache`); its model runs `turns` turns of load, whoami, answer.
 */
const host = async (
  name: string,
  options: { readonly cache?: string; readonly turns?: number; readonly logger?: RuntimeLogger } = {}
) => {
  const config = join(dir, "mcp.json")
  writeFileSync(config, JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" } } }))
  const app = await createOracleApp({
    plugins: [],
    logger: options.logger ?? quietLogger,
    model: ScriptedChatModel.script(
      Array.from(
        { length: options.turns ?? 1 },
        (): Array<ScriptStep> => [
          { tool: "load_capability", args: { names: ["notes"] } },
          { tool: "whoami", args: {} },
          (t) => `whoami said: ${toolText(answerTo(t, "whoami"))}`
        ]
      ).flat()
    ),
    env: {
      PLUGBOARD_DATA_DIR: join(dir, name),
      MCP_CACHE_DIR: join(dir, options.cache ?? "mcp-cache"),
      MCP_CONFIG: config,
      CONNECTIONS_KEY: key,
      DATABASE_URL: pg.url,
      DATABASE_SCHEMA: "oauth_hosts",
      THROTTLE_LIMIT: "1000"
    }
  })
  apps.push(app)
  return { app, url: (await app.listen(0, "127.0.0.1")).url }
}

beforeAll(async () => {
  if (skip) return
  pg = await ownPostgres()
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-pg-"))
}, 120_000)

afterAll(async () => {
  if (skip) return
  for (const app of apps) await app.close(2_000)
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  await pg?.remove()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(skip)("OAuth connections on Postgres", () => {
  it("a user connects through host A; host B, on the same Postgres, calls the server as that user", async () => {
    const a = await host("a")
    const alice = await user(a.app.oracleDid)
    const started = await call(`${a.url}/connections/notes`, { method: "POST", headers: alice.headers })
    expect(started.status).toBe(200)
    expect(await signIn(browser, started.body.url, `${a.url}/oauth/callback`, "alice")).toBe(
      "Your account is connected to 'notes'. Its tools are offered from now on. You can close this page."
    )
    // B boots after A's callback cached the tool list, and reads alice's connection from Postgres.
    const b = await host("b")
    const headers = await headersFor(alice.signer, b.app.oracleDid)
    const listed = await call(`${b.url}/connections`, { headers })
    expect(listed.body.connections).toMatchObject([{ server: "notes", connected: true }])
    const session = await newSession(b.url, headers)
    const response = await fetch(`${b.url}/messages/${session}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ message: "who am I?", stream: true })
    })
    const body = await response.text()
    expect(body).toContain('"output":"you are alice"')
    expect(mcp.seen.at(-1)).toBe("alice")
  }, 180_000)

  it("a host that never read the list: a user connected through another host has it read at their turn there, and their next turn calls as them", async () => {
    // Two hosts booted before anyone connected, each with a tool-list cache of its own.
    const c = await host("c", { cache: "cache-c" })
    let offered: () => void = () => {}
    const offeredOnD = new Promise<void>((resolve) => {
      offered = resolve
    })
    const d = await host("d", {
      cache: "cache-d",
      turns: 2,
      logger: {
        ...quietLogger,
        info: (message) => {
          if (message.startsWith("an OAuth server's plugin is offered")) offered()
        }
      }
    })
    expect(d.app.catalog.byName.get("notes")?.unavailable).toContain("no list is cached yet")
    const ivan = await user(c.app.oracleDid)
    const started = await call(`${c.url}/connections/notes`, { method: "POST", headers: ivan.headers })
    expect(await signIn(browser, started.body.url, `${c.url}/oauth/callback`, "ivan")).toBe(
      "Your account is connected to 'notes'. Its tools are offered from now on. You can close this page."
    )
    const headers = await headersFor(ivan.signer, d.app.oracleDid)
    const turnOnD = async () => {
      const session = await newSession(d.url, headers)
      const response = await fetch(`${d.url}/messages/${session}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ message: "who am I?", stream: true })
      })
      return response.text()
    }
    // D's first turn for ivan: the plugin is unavailable there (the turn took D's catalog), and D
    // reads the list with ivan's token meanwhile.
    expect(await turnOnD()).toContain("is unavailable")
    await offeredOnD
    expect(d.app.catalog.byName.get("notes")?.unavailable).toBeUndefined()
    mcp.seen.length = 0
    expect(await turnOnD()).toContain('"output":"you are ivan"')
    expect(mcp.seen).toEqual(["ivan"])
  }, 180_000)
})
