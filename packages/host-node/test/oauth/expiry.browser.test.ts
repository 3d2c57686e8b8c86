/**
 * Expiry through the whole server (issue 38): the authorization server issues access tokens that
 * are due for renewal at once (60 s, the client's refresh skew), so every turn's call renews the
 * user's token; the user sees only the answer. A refresh token revoked at the authorization
 * server makes the next call answer the model with needs-connect, the connection is forgotten,
 * and the user's next turn lists the plugin as needs-connect with the link. Real components:
 * oidc-provider, the SDK's bearer-auth MCP server, Chromium for the consent.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
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
let app: OracleApp | undefined
let url = ""
/** The grants the authorization server answered, in order (`authorization_code`, `refresh_token`). */
const grants: Array<string> = []
/** The latest refresh token of each subject, and the client it was issued to. */
const latest = new Map<string, { readonly token: string; readonly clientId: string }>()

const whoamiTurn: Array<ScriptStep> = [
  { tool: "load_capability", args: { names: ["notes"] } },
  { tool: "whoami", args: {} },
  (t) => `whoami said: ${toolText(answerTo(t, "whoami"))}`
]
const listTurn: Array<ScriptStep> = [
  { tool: "list_capabilities", args: {} },
  (t) => `listed: ${toolText(answerTo(t, "list_capabilities"))}`
]

const boot = async () => {
  const config = join(dir, "mcp.json")
  writeFileSync(config, JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" } } }))
  app = await createOracleApp({
    plugins: [],
    logger: quietLogger,
    model: ScriptedChatModel.script([...whoamiTurn, ...whoamiTurn, ...whoamiTurn, ...listTurn]),
    env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000", MCP_CONFIG: config, CONNECTIONS_KEY: key }
  })
  url = (await app.listen(0, "127.0.0.1")).url
}

/** A turn's streamed answer (its message frames joined). */
const turn = async (headers: Record<string, string>) => {
  const session = await newSession(url, headers)
  const response = await fetch(`${url}/messages/${session}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ message: "who am I?", stream: true })
  })
  return (await response.text())
    .split("\n\n")
    .filter((frame) => frame.includes("event: message\n"))
    .map((frame) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6)).content as string)
    .join("")
}

const subjectOf = (jwt: string): string =>
  JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")).sub

beforeAll(async () => {
  if (missing !== undefined) return
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url, { accessTokenTtlSeconds: 60 })
  await mcp.serve(auth.issuer)
  auth.provider.on(
    "grant.success",
    (ctx: {
      oidc: { params?: { grant_type?: unknown }; client?: { clientId: string } }
      body?: { access_token?: string; refresh_token?: string }
    }) => {
      grants.push(String(ctx.oidc.params?.grant_type))
      const { access_token, refresh_token } = ctx.body ?? {}
      if (access_token !== undefined && refresh_token !== undefined && ctx.oidc.client !== undefined)
        latest.set(subjectOf(access_token), { token: refresh_token, clientId: ctx.oidc.client.clientId })
    }
  )
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-expiry-"))
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  await app?.close(2_000)
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(missing !== undefined)("expiry and refusal through the whole server", () => {
  it("a token due between turns is renewed without the user noticing; a revoked refresh gives needs-connect, then the link", async () => {
    await boot()
    const alice = await user(app!.oracleDid)
    const started = await call(`${url}/connections/notes`, { method: "POST", headers: alice.headers })
    expect(await signIn(browser, started.body.url, `${url}/oauth/callback`, "alice")).toBe(
      "Your account is connected to 'notes'. Its tools are offered from now on. You can close this page."
    )
    // The callback cached the tool list (and offered notes at once); the next boot reads it.
    await app!.close(2_000)
    await boot()
    const headers = await headersFor(alice.signer, app!.oracleDid)

    const before = grants.filter((g) => g === "refresh_token").length
    expect(await turn(headers)).toBe("whoami said: you are alice")
    expect(await turn(headers)).toBe("whoami said: you are alice")
    // Each turn's call renewed the due token (one refresh each), and the user saw only answers.
    expect(grants.filter((g) => g === "refresh_token").length - before).toBe(2)

    const current = latest.get("alice")!
    const revoked = await fetch(`${auth.issuer}/token/revocation`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        token: current.token,
        token_type_hint: "refresh_token",
        client_id: current.clientId
      })
    })
    expect(revoked.status).toBe(200)
    mcp.seen.length = 0
    expect(await turn(headers)).toBe(
      "whoami said: Tool 'whoami' failed: MCP server 'notes' needs you to connect your account: the authorization server refused to renew the connection (invalid_grant); connect your account to 'notes' (POST /connections/notes, or the console's Connect button) and try again."
    )
    expect(mcp.seen).toEqual([])
    const listed = await call(`${url}/connections`, { headers })
    expect(listed.body.connections).toMatchObject([{ server: "notes", plugin: "notes", connected: false }])
    const next = await turn(headers)
    const notes = JSON.parse(next.slice("listed: ".length)).plugins.find(
      (p: { name: string }) => p.name === "notes"
    )
    expect(notes.loaded).toBe(false)
    expect(notes.needsConnect.url).toMatch(new RegExp(`^${url}/oauth/start\\?ticket=`))
  }, 180_000)
})
