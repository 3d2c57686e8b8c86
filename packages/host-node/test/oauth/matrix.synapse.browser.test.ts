/**
 * A user's OAuth connections travel with the user through Matrix sync (docs/oauth.md#at-rest,
 * docs/oauth.md#in-the-host). Real components only: a Synapse homeserver
 * (scripts/synapse/synapse.sh), oidc-provider as the authorization server, the official SDK's
 * bearer-auth MCP server, the consent clicked in Chromium, and four `createOracleApp` hosts with
 * data folders of their own, one oracle identity and one Matrix account.
 *
 * Shown: alice connects through host A; A's close uploads her database to Synapse; the snapshot
 * downloaded back from Synapse (and decompressed) holds A's sealed record and no access or refresh
 * token; host B, with the same `CONNECTIONS_KEY`, restores her and her turn calls the MCP server
 * as alice without a new connect; host C, with another key, restores her too and finds her
 * `needs-connect` (nothing sent to the server, no crash); host D, with the same key, disconnects
 * her, and the next snapshot holds neither the record nor a piece of its sealed text. No token the
 * authorization server issued appears in any log line, raw SSE body, `/health/plugins`, console API or connections
 * answer, nor in the snapshot.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { gunzipSync } from "node:zlib"
import { type MatrixAccount, matrixSnapshotStore, registerWithSharedSecret } from "@plugboard/matrix"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import { databaseFileName, storageKey } from "@plugboard/sqlite"
import { generateSigner, type Signer } from "@plugboard/ucan"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SKIP_REASON, synapseEnv } from "../../../adapters/matrix/test/helpers.js"
import { createOracleApp, type OracleApp } from "../../src/index.js"
import { chromiumMissing, launch } from "../console/browser.js"
import { call, headersFor, newSession } from "../helpers.js"
import { answerTo, toolText } from "../mcpHelpers.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"
import { capturingLogger, trackIssuedTokens } from "./fixtures/outputs.js"

const env = synapseEnv()
const missing = chromiumMissing()
const skip = env === undefined || missing !== undefined
const why = env === undefined ? SKIP_REASON : (missing ?? "")

let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let account: MatrixAccount
let oracle: Signer
let dir: string
const apps: Array<OracleApp> = []
const key = randomBytes(32).toString("base64")
/** Every access and refresh token the authorization server issued during this test. */
const issued = new Set<string>()
/** Every text the hosts produced: log lines, raw SSE bodies, API answers, pages, the snapshot. */
const outputs: Array<string> = []
const logger = capturingLogger(outputs)

/** Each turn: load notes, call whoami, answer with what it said (or what the load said). */
const turnSteps: Array<ScriptStep> = [
  { tool: "load_capability", args: { names: ["notes"] } },
  (t) =>
    toolText(answerTo(t, "load_capability")).includes("needs-connect")
      ? `load said: ${toolText(answerTo(t, "load_capability"))}`
      : { tool: "whoami", args: {} },
  (t) => `whoami said: ${toolText(answerTo(t, "whoami"))}`
]

/** A host with a data folder of its own, the shared oracle, Matrix account and tool-list cache. */
const host = async (name: string, connectionsKey: string) => {
  const config = join(dir, "mcp.json")
  writeFileSync(config, JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" } } }))
  const data = join(dir, name)
  const app = await createOracleApp({
    plugins: [],
    identity: { signer: oracle },
    logger,
    model: ScriptedChatModel.script(turnSteps),
    env: {
      PLUGBOARD_DATA_DIR: data,
      MCP_CACHE_DIR: join(dir, "mcp-cache"),
      MCP_CONFIG: config,
      CONNECTIONS_KEY: connectionsKey,
      MATRIX_BASE_URL: account.baseUrl,
      MATRIX_USER_ID: account.userId,
      MATRIX_ACCESS_TOKEN: account.accessToken,
      MATRIX_REQUEST_TIMEOUT_MS: "10000",
      THROTTLE_LIMIT: "1000"
    }
  })
  apps.push(app)
  const url = (await app.listen(0, "127.0.0.1")).url
  /** A call whose answer joins `outputs`. */
  const api = async (path: string, init: Parameters<typeof call>[1] = {}) => {
    const r = await call(`${url}${path}`, init)
    outputs.push(typeof r.body === "string" ? r.body : JSON.stringify(r.body))
    return r
  }
  /** One turn as the raw SSE body. */
  const turn = async (headers: Record<string, string>, message: string): Promise<string> => {
    const session = await newSession(url, headers)
    const response = await fetch(`${url}/messages/${session}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ message, stream: true })
    })
    const body = await response.text()
    outputs.push(body)
    return body
  }
  const close = async () => {
    apps.splice(apps.indexOf(app), 1)
    await app.close(5_000)
  }
  return { app, url, data, api, turn, close }
}

/** The connections table of the SQLite database at `file`. */
const connectionsOf = (file: string): Array<{ server: string; sealed: string }> => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return db.prepare("SELECT server, sealed FROM connections ORDER BY server").all() as unknown as Array<{
      server: string
      sealed: string
    }>
  } finally {
    db.close()
  }
}

/** A SQLite database given as bytes, written to a file of its own. */
const asFile = (bytes: Uint8Array): string => {
  const file = join(dir, `snapshot-${randomUUID()}.sqlite`)
  writeFileSync(file, bytes)
  return file
}

/**
 * Every value of every row of every table of the database at `file`, as text (a blob as latin1):
 * a grep of the raw pages alone could miss a text split across an overflow page.
 */
const everyValue = (file: string): string => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
      .all() as unknown as Array<{
      name: string
    }>
    const texts: Array<string> = []
    for (const { name } of tables) {
      for (const row of db.prepare(`SELECT * FROM "${name.replaceAll('"', '""')}"`).all()) {
        for (const value of Object.values(row))
          texts.push(value instanceof Uint8Array ? Buffer.from(value).toString("latin1") : String(value))
      }
    }
    return texts.join("\n")
  } finally {
    db.close()
  }
}

beforeAll(async () => {
  if (skip) return
  account = await registerWithSharedSecret({
    baseUrl: env?.url ?? "",
    sharedSecret: env?.secret ?? "",
    username: `oracle-oauth-${randomUUID().slice(0, 8)}`,
    password: randomUUID()
  })
  oracle = await generateSigner()
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  trackIssuedTokens(auth, issued)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-matrix-"))
}, 120_000)

afterAll(async () => {
  if (skip) return
  for (const app of apps.splice(0)) await app.close(2_000)
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(skip)(`OAuth connections through Matrix sync${skip ? ` — SKIPPED: ${why}` : ""}`, () => {
  it("a connection made on host A travels sealed in the snapshot; B (same key) calls as the user, C (another key) asks to connect, D's disconnect leaves none in the room", async () => {
    const alice = await generateSigner()
    const room = matrixSnapshotStore(account, { requestTimeoutMs: 10_000 })
    const roomKey = storageKey(alice.did())
    /** The snapshot the room's pointer names now, downloaded from Synapse and decompressed. */
    const latestSnapshot = async () => {
      const pointer = await room.readPointer(await room.room(roomKey, { create: false }), roomKey)
      const compressed = await room.download(pointer.mxc)
      const snapshot = gunzipSync(compressed)
      expect(snapshot.subarray(0, 15).toString("latin1")).toBe("SQLite format 3")
      return { file: asFile(snapshot), raw: snapshot.toString("latin1"), compressed }
    }

    // Host A: alice connects her account through A's routes and A's callback.
    const a = await host("a", key)
    const headersA = await headersFor(alice, a.app.oracleDid)
    const started = await a.api("/connections/notes", { method: "POST", headers: headersA })
    expect(started.status).toBe(200)
    const page = await signIn(browser, started.body.url, `${a.url}/oauth/callback`, "alice")
    outputs.push(page)
    expect(page).toContain("Your account is connected to 'notes'.")
    expect((await a.api("/connections", { headers: headersA })).body.connections).toMatchObject([
      { server: "notes", connected: true }
    ])
    // Closing A flushes her database into the room.
    await a.close()
    // A's own file holds one sealed record (no token text, docs/oauth.md#at-rest).
    const local = connectionsOf(join(a.data, "users", databaseFileName(alice.did())))
    expect(local.map((r) => r.server)).toEqual(["notes"])
    expect(local[0]?.sealed.startsWith("pbc1.")).toBe(true)
    const { file, raw, compressed } = await latestSnapshot()
    const values = everyValue(file)
    outputs.push(raw, values, Buffer.from(compressed).toString("latin1"))
    // The sealed record is in the snapshot, as A wrote it; no token is, in its pages or its rows.
    expect(connectionsOf(file)).toEqual(local)
    expect(values).toContain(local[0]!.sealed)
    expect(issued.size).toBeGreaterThanOrEqual(2)
    for (const token of issued) {
      expect(raw.includes(token), "a token in the Matrix snapshot's pages").toBe(false)
      expect(values.includes(token), "a token in the Matrix snapshot's rows").toBe(false)
    }

    // Host B: another data folder, the same key. Alice's first request restores her from the
    // room, and her turn calls whoami with her token: no connect on B.
    const b = await host("b", key)
    const headersB = await headersFor(alice, b.app.oracleDid)
    const listedB = await b.api("/connections", { headers: headersB })
    expect(listedB.body.connections).toMatchObject([{ server: "notes", connected: true }])
    const seenBefore = mcp.seen.length
    const bodyB = await b.turn(headersB, "who am I?")
    expect(bodyB).toContain('"output":"you are alice"')
    expect(mcp.seen.slice(seenBefore)).toContain("alice")
    expect(mcp.seen.at(-1)).toBe("alice")
    expect(outputs.some((l) => l.includes("[matrix-sync] restored") && l.includes(alice.did()))).toBe(true)
    expect((await b.api("/health/plugins", { headers: headersB })).status).toBe(200)
    for (const path of ["/console/api/catalog", "/console/api/offer"]) {
      expect((await b.api(path, { headers: headersB })).status).toBe(200)
    }
    await b.close()

    // Host C: another data folder and another key. The restored record does not open there:
    // alice is asked to connect, and nothing reaches the MCP server.
    const c = await host("c", randomBytes(32).toString("base64"))
    const headersC = await headersFor(alice, c.app.oracleDid)
    const listedC = await c.api("/connections", { headers: headersC })
    expect(listedC.status).toBe(200)
    expect(listedC.body.connections).toMatchObject([{ server: "notes", connected: false }])
    const seenAtC = mcp.seen.length
    const bodyC = await c.turn(headersC, "who am I?")
    expect(bodyC).toContain("needs-connect")
    expect(bodyC).toContain("/oauth/start?ticket=")
    expect(mcp.seen.length).toBe(seenAtC)
    expect((await c.api("/health/plugins", { headers: headersC })).status).toBe(200)
    await c.close()

    // Host D, the same key: alice disconnects. The next snapshot holds no record, and no piece of
    // the sealed text the room held before (the database zeroes what it deletes).
    const before = await latestSnapshot()
    const [held] = connectionsOf(before.file)
    expect(held?.server).toBe("notes")
    const pieces = (text: string) =>
      Array.from({ length: Math.floor(text.length / 32) }, (_, i) => text.slice(i * 32, i * 32 + 32))
    // Most pieces are found in the pages while the record is there (a record longer than a page
    // is split, so a piece across a page boundary is not).
    const found = pieces(held!.sealed).filter((piece) => before.raw.includes(piece)).length
    expect(found).toBeGreaterThan(pieces(held!.sealed).length / 2)
    const d = await host("d", key)
    const headersD = await headersFor(alice, d.app.oracleDid)
    const removed = await d.api("/connections/notes", { method: "DELETE", headers: headersD })
    expect(removed.body).toMatchObject({ server: "notes", removed: true })
    await d.close()
    const after = await latestSnapshot()
    outputs.push(after.raw)
    expect(connectionsOf(after.file)).toEqual([])
    expect(pieces(held!.sealed).filter((piece) => after.raw.includes(piece))).toEqual([])

    // Every output of the four hosts, and the snapshots, without a token.
    const all = outputs.join("\n")
    expect(all).toContain("you are alice")
    for (const token of issued) expect(all.includes(token), "a token in the hosts' outputs").toBe(false)
  }, 240_000)

  it("a connect link opened on a host that never served the user restores them first: the connection joins their restored state, nothing is moved aside", async () => {
    const carol = await generateSigner()
    // Host E serves carol: a turn asks her to connect (the link, made on E) and her session is kept.
    const e = await host("e", key)
    const headersE = await headersFor(carol, e.app.oracleDid)
    const sessionsE = (await e.api("/sessions", { headers: headersE })).body.sessions
    expect(sessionsE).toEqual([])
    const bodyE = await e.turn(headersE, "who am I?")
    const ticket = /\/oauth\/start\?ticket=([A-Za-z0-9._~%-]+)/.exec(bodyE)?.[1]
    expect(ticket).toBeDefined()
    const keptSessions = (await e.api("/sessions", { headers: headersE })).body.sessions as Array<{
      sessionId: string
    }>
    expect(keptSessions).toHaveLength(1)
    await e.close()

    // Host F (same key, its own data folder) has never served carol. She opens the link there:
    // F restores her from the room before the flow writes to her store.
    const f = await host("f", key)
    const page = await signIn(
      browser,
      `${f.url}/oauth/start?ticket=${ticket}`,
      `${f.url}/oauth/callback`,
      "carol"
    )
    outputs.push(page)
    expect(page).toContain("Your account is connected to 'notes'.")
    expect(outputs.some((l) => l.includes("[matrix-sync] restored") && l.includes(carol.did()))).toBe(true)

    // Her next requests on F: connected, her session from E still there, and her turn calls as her.
    const headersF = await headersFor(carol, f.app.oracleDid)
    expect((await f.api("/connections", { headers: headersF })).body.connections).toMatchObject([
      { server: "notes", connected: true }
    ])
    const sessionsF = (await f.api("/sessions", { headers: headersF })).body.sessions as Array<{
      sessionId: string
    }>
    expect(sessionsF.map((x) => x.sessionId)).toContain(keptSessions[0]!.sessionId)
    expect(await f.turn(headersF, "who am I?")).toContain('"output":"you are carol"')
    expect(readdirSync(join(f.data, "users")).filter((name) => name.includes(".conflict-"))).toEqual([])
    await f.close()
    for (const token of issued) expect(outputs.join("\n").includes(token)).toBe(false)
  }, 240_000)
})
