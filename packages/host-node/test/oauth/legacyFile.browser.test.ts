/**
 * An existing deployment loses no connection (docs/oauth.md#at-rest): a data folder whose
 * connections are in `<data>/connections.sqlite` (where an earlier build kept them, in the same
 * sealed format) boots, and the user's next turn calls the MCP server as that user with no new
 * connect; the record is then in the user's own database and no longer in the old file. Real
 * components only: oidc-provider, the SDK's bearer-auth MCP server, Chromium for the consent.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { ScriptedChatModel } from "@plugboard/models"
import { connectionsFile, databaseFileName, makeConnectionStore } from "@plugboard/sqlite"
import { Effect } from "effect"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createOracleApp, type OracleApp, quietLogger } from "../../src/index.js"
import { chromiumMissing, launch } from "../console/browser.js"
import { call, headersFor, newSession, user } from "../helpers.js"
import { answerTo, toolText } from "../mcpHelpers.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"

const missing = chromiumMissing()
const key = randomBytes(32).toString("base64")
let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let dir: string
const apps: Array<OracleApp> = []

const boot = async () => {
  const config = join(dir, "mcp.json")
  writeFileSync(config, JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" } } }))
  const app = await createOracleApp({
    plugins: [],
    logger: quietLogger,
    model: ScriptedChatModel.script([
      { tool: "load_capability", args: { names: ["notes"] } },
      { tool: "whoami", args: {} },
      (t) => `whoami said: ${toolText(answerTo(t, "whoami"))}`
    ]),
    env: {
      PLUGBOARD_DATA_DIR: join(dir, "data"),
      MCP_CONFIG: config,
      CONNECTIONS_KEY: key,
      THROTTLE_LIMIT: "1000"
    }
  })
  apps.push(app)
  return { app, url: (await app.listen(0, "127.0.0.1")).url }
}

type Row = { server: string; sealed: string; updated_at: number }
const rows = (file: string, sql: string): Array<Row> => {
  const db = new DatabaseSync(file)
  try {
    return db.prepare(sql).all() as unknown as Array<Row>
  } finally {
    db.close()
  }
}

beforeAll(async () => {
  if (missing !== undefined) return
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-legacy-"))
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  for (const app of apps.splice(0)) await app.close(2_000)
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(missing !== undefined)("connections of an earlier build's connections.sqlite", () => {
  it("are moved into the user's database at their first request, and their turn calls as them", async () => {
    // A connection made through the host, then put where an earlier build kept it: the record
    // leaves the user's database for `<data>/connections.sqlite`, sealed as it was.
    const first = await boot()
    const alice = await user(first.app.oracleDid)
    const started = await call(`${first.url}/connections/notes`, { method: "POST", headers: alice.headers })
    expect(started.status).toBe(200)
    expect(await signIn(browser, started.body.url, `${first.url}/oauth/callback`, "alice")).toContain(
      "Your account is connected to 'notes'."
    )
    await first.app.close(2_000)
    apps.splice(0)
    const userFile = join(dir, "data", "users", databaseFileName(alice.did))
    const [record] = rows(userFile, "SELECT server, sealed, updated_at FROM connections")
    expect(record?.server).toBe("notes")
    const legacy = connectionsFile(join(dir, "data"))
    await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(makeConnectionStore({ filename: legacy }), (s) =>
          s.put(alice.did, "notes", record!.sealed, record!.updated_at)
        )
      )
    )
    rows(userFile, "DELETE FROM connections RETURNING server")
    expect(rows(userFile, "SELECT server FROM connections")).toEqual([])

    // The next boot: alice is listed connected, and her turn calls whoami as her.
    const next = await boot()
    const headers = await headersFor(alice.signer, next.app.oracleDid)
    const listed = await call(`${next.url}/connections`, { headers })
    expect(listed.body.connections).toMatchObject([{ server: "notes", connected: true }])
    const session = await newSession(next.url, headers)
    const response = await fetch(`${next.url}/messages/${session}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ message: "who am I?", stream: true })
    })
    expect(await response.text()).toContain('"output":"you are alice"')
    expect(mcp.seen.at(-1)).toBe("alice")

    // The record now lives in her database (as sealed, or renewed), and the old file holds none.
    expect(rows(userFile, "SELECT server FROM connections")).toEqual([{ server: "notes" }])
    expect(rows(legacy, "SELECT user_did FROM connections")).toEqual([])
  }, 180_000)
})
