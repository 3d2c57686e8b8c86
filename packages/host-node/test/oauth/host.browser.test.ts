/**
 * Per-user OAuth through the whole server (issue 38): `createOracleApp` with an MCP config whose
 * `notes` server has `auth: "oauth"`, real components only: oidc-provider as the authorization
 * server, the official SDK's bearer-auth MCP server as the resource, the consent clicked in
 * Chromium, and the host's own routes (`POST /connections/:server`, `GET /oauth/callback`,
 * `GET /connections`, `DELETE /connections/:server`).
 *
 * Shown: two users each connect their own account through the routes; after a restart (the tool
 * list cached by the first callback is what discovery reads, docs/oauth.md#the-tool-list) each
 * user's turn calls `whoami` and the server sees that user; a user who disconnected gets
 * needs-connect in the tool's answer; the routes' errors. Every access and refresh token the
 * authorization server issued is absent from every log line, raw SSE body, `/health/plugins`,
 * console API and connections answer of these tests.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createOracleApp, type OracleApp } from "../../src/index.js"
import { chromiumMissing, launch, type PageDocument } from "../console/browser.js"
import { bootLines, call, headersFor, newSession, user } from "../helpers.js"
import { answerTo, toolText } from "../mcpHelpers.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"
import { capturingLogger, trackIssuedTokens } from "./fixtures/outputs.js"

const missing = chromiumMissing()
// The page-side predicate below runs in the page; this project type-checks without DOM types.
declare const document: PageDocument
/** The console page has booted (its module ran). */
const READY = () => document.documentElement.dataset.ready === "true"

let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
let dir: string
let app: OracleApp | undefined
let url: string
const key = randomBytes(32).toString("base64")
/** Every access and refresh token the authorization server issued during these tests. */
const issued = new Set<string>()
/** Every text the host produced in these tests: log lines, raw SSE bodies, API answers, pages. */
const outputs: Array<string> = []
const logger = capturingLogger(outputs)

/** Each turn: load notes, call whoami, answer with what it said. */
const turnSteps: Array<ScriptStep> = [
  { tool: "load_capability", args: { names: ["notes"] } },
  { tool: "whoami", args: {} },
  (t) => `whoami said: ${toolText(answerTo(t, "whoami"))}`
]
/** A turn that only loads notes, answering with what the load said. */
const loadSteps: Array<ScriptStep> = [
  { tool: "load_capability", args: { names: ["notes"] } },
  (t) => `load said: ${toolText(answerTo(t, "load_capability"))}`
]
/** A turn that lists the catalog, then loads notes. */
const listSteps: Array<ScriptStep> = [
  { tool: "list_capabilities", args: {} },
  (t) => {
    listed.push(toolText(answerTo(t, "list_capabilities")))
    return { tool: "load_capability", args: { names: ["notes"] } }
  },
  (t) => `load said: ${toolText(answerTo(t, "load_capability"))}`
]
const listed: Array<string> = []
// Boot 2: alice, bob, bob after disconnecting, carol (never connected), carol after connecting.
const script: Array<ScriptStep> = [...turnSteps, ...turnSteps, ...loadSteps, ...listSteps, ...turnSteps]

const configFile = () => {
  const file = join(dir, "mcp.json")
  writeFileSync(
    file,
    JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" }, plain: { url: mcp.url } } })
  )
  return file
}

const boot = async (steps: Array<ScriptStep> = script, env: Record<string, string> = {}) => {
  app = await createOracleApp({
    plugins: [],
    logger,
    model: ScriptedChatModel.script(steps),
    env: {
      PLUGBOARD_DATA_DIR: dir,
      THROTTLE_LIMIT: "1000",
      MCP_CONFIG: configFile(),
      CONNECTIONS_KEY: key,
      ...env
    }
  })
  url = (await app.listen(0, "127.0.0.1")).url
  return app
}

/** A GET or other call whose answer joins `outputs`. */
const api = async (path: string, init: Parameters<typeof call>[1] = {}) => {
  const r = await call(`${url}${path}`, init)
  outputs.push(typeof r.body === "string" ? r.body : JSON.stringify(r.body))
  return r
}

/** One turn as the raw SSE body (every frame, as sent). */
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

/** The answer a raw SSE body streamed: its `message` frames' content, joined. */
const answerIn = (body: string): string =>
  body
    .split("\n\n")
    .filter((frame) => frame.includes("event: message\n"))
    .map((frame) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6)).content as string)
    .join("")

/** The user connects `login`'s account through the host's routes, in a browser of their own. */
const connect = async (headers: Record<string, string>, login: string) => {
  const started = await api("/connections/notes", { method: "POST", headers })
  expect(started.status).toBe(200)
  expect(started.body.server).toBe("notes")
  const page = await signIn(browser, started.body.url, `${url}/oauth/callback`, login)
  outputs.push(page)
  return page
}

beforeAll(async () => {
  if (missing !== undefined) return
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  trackIssuedTokens(auth, issued)
  browser = await launch()
  dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-host-"))
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  await app?.close(2_000)
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(missing !== undefined)(
  "per-user OAuth through the host's routes (oidc-provider, SDK server, Chromium)",
  () => {
    it("boot refuses an auth: oauth server without CONNECTIONS_KEY, naming it", async () => {
      const lines = await bootLines([], { MCP_CONFIG: configFile() })
      expect(lines).toEqual([
        "[boot-error] MCP server 'notes' signs each user in with OAuth (auth: \"oauth\"), and CONNECTIONS_KEY is unset: set it to 32 random bytes (`openssl rand -base64 32`) to keep users' connections (docs/oauth.md)."
      ])
    })

    let alice: Awaited<ReturnType<typeof user>>
    let bob: Awaited<ReturnType<typeof user>>

    it("two users connect their own accounts through the routes; the connections list them, without tokens", async () => {
      await boot()
      alice = await user(app!.oracleDid)
      bob = await user(app!.oracleDid)
      const before = await api("/connections", { headers: alice.headers })
      expect(before.status).toBe(200)
      expect(before.body).toEqual({ connections: [{ server: "notes", plugin: "notes", connected: false }] })
      // The first connect reads the tool list and offers the plugin (docs/oauth.md#the-tool-list).
      expect(await connect(alice.headers, "alice")).toBe(
        "Your account is connected to 'notes'. Its tools are offered from now on. You can close this page."
      )
      expect(await connect(bob.headers, "bob")).toBe(
        "Your account is connected to 'notes'. You can close this page."
      )
      const listed = await api("/connections", { headers: alice.headers })
      expect(listed.body.connections).toMatchObject([{ server: "notes", connected: true }])
      expect(listed.body.connections[0].scope).toContain("mcp:tools")
      expect(issued.size).toBeGreaterThanOrEqual(4)
    }, 120_000)

    it("the routes' errors: no credentials 401, an unknown server 404, a server without OAuth 400, a forged callback 400 page", async () => {
      expect((await api("/connections")).status).toBe(401)
      expect((await api("/connections/notes", { method: "POST" })).status).toBe(401)
      const unknown = await api("/connections/nope", { method: "POST", headers: alice.headers })
      expect(unknown.status).toBe(404)
      expect(unknown.body).toMatchObject({
        error: "unknown-server",
        message: "No MCP server 'nope' on this host."
      })
      const plain = await api("/connections/plain", { method: "DELETE", headers: alice.headers })
      expect(plain.status).toBe(400)
      expect(plain.body.error).toBe("not-oauth")
      const forged = await api("/oauth/callback?code=abc&state=pbc1.forged")
      expect(forged.status).toBe(400)
      expect(forged.body).toContain("Not connected")
      const none = await api("/oauth/callback")
      expect(none.status).toBe(400)
    })

    it("after a restart, each user's turn calls whoami and the server sees that user; a disconnected user gets needs-connect", async () => {
      await app!.close(2_000)
      app = undefined
      await boot()
      // The first callback cached the tool list: the plugin is available from boot on.
      expect(app!.catalog.byName.get("notes")?.unavailable).toBeUndefined()
      mcp.seen.length = 0
      const aliceHeaders = await headersFor(alice.signer, app!.oracleDid)
      const bobHeaders = await headersFor(bob.signer, app!.oracleDid)
      expect(answerIn(await turn(aliceHeaders, "who am I?"))).toBe("whoami said: you are alice")
      expect(answerIn(await turn(bobHeaders, "who am I?"))).toBe("whoami said: you are bob")
      expect(mcp.seen).toEqual(["alice", "bob"])

      const removed = await api("/connections/notes", { method: "DELETE", headers: bobHeaders })
      expect(removed.status).toBe(200)
      expect(removed.body).toEqual({ server: "notes", removed: true, revocation: { outcome: "revoked" } })
      expect((await api("/connections", { headers: bobHeaders })).body.connections).toEqual([
        { server: "notes", plugin: "notes", connected: false }
      ])
      const after = JSON.parse(answerIn(await turn(bobHeaders, "who am I?")).slice("load said: ".length))
      expect(after.results[0]).toMatchObject({ name: "notes", status: "error", error: "needs-connect" })
      expect(after.results[0].message).toContain(
        "Plugin 'notes' needs the user to connect their account first: MCP server 'notes' signs each user in with OAuth, and this user has not connected an account to it. Give the user this link to connect: "
      )
      expect(after.results[0].connectUrl).toMatch(new RegExp(`^${url}/oauth/start\\?ticket=`))
      expect(after.newlyLoaded).toEqual([])
      expect(mcp.seen).toEqual(["alice", "bob"])
    }, 120_000)

    it("a user who never connected sees notes as needs-connect; the link load_capability gives starts the flow in the browser; then their turn calls as them", async () => {
      const carol = await user(app!.oracleDid)
      const answer = JSON.parse(answerIn(await turn(carol.headers, "who am I?")).slice("load said: ".length))
      const listing = JSON.parse(listed.at(-1)!)
      const notes = listing.plugins.find((p: { name: string }) => p.name === "notes")
      expect(notes).toMatchObject({
        loaded: false,
        needsConnect: { reason: expect.stringContaining("has not connected") }
      })
      expect(notes.needsConnect.url).toMatch(new RegExp(`^${url}/oauth/start\\?ticket=`))
      const link: string = answer.results[0].connectUrl
      expect(answer.results[0].error).toBe("needs-connect")
      // A changed ticket starts nothing.
      const ticket = decodeURIComponent(link.split("ticket=")[1]!)
      const changed = `${ticket.slice(0, -4)}${ticket.endsWith("AAAA") ? "BBBB" : "AAAA"}`
      const forged = await api(`/oauth/start?ticket=${encodeURIComponent(changed)}`)
      expect(forged.status).toBe(400)
      expect(forged.body).toContain("This link cannot start a connection")
      expect(await signIn(browser, link, `${url}/oauth/callback`, "carol")).toBe(
        "Your account is connected to 'notes'. You can close this page."
      )
      mcp.seen.length = 0
      expect(answerIn(await turn(carol.headers, "who am I?"))).toBe("whoami said: you are carol")
      expect(mcp.seen).toEqual(["carol"])
    }, 120_000)

    it("the console shows notes as needs connect with a Connect button; the button opens the sign-in in a new tab; reloaded, it shows connected", async () => {
      const dave = await user(app!.oracleDid)
      const token = dave.headers.authorization.slice("Bearer ".length)
      const context = await browser.newContext()
      await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort())
      try {
        const page = await context.newPage()
        await page.goto(`${url}/console#token=${encodeURIComponent(token)}`)
        await page.click("#tab-Catalog")
        await page.waitForSelector('[data-needs-connect="notes"]')
        const [signInTab] = await Promise.all([
          context.waitForEvent("page"),
          page.click('button[data-connect="notes"]')
        ])
        await signInTab.waitForSelector('input[name="login"]')
        await signInTab.fill('input[name="login"]', "dave")
        await signInTab.fill('input[name="password"]', "any password")
        await signInTab.click('button[type="submit"]')
        await signInTab.waitForSelector('button:has-text("Continue")')
        await signInTab.click('button:has-text("Continue")')
        await signInTab.waitForURL((u) => u.href.startsWith(`${url}/oauth/callback`))
        expect(await signInTab.textContent("p")).toBe(
          "Your account is connected to 'notes'. You can close this page."
        )
        await page.reload()
        await page.click("#tab-Catalog")
        await page.waitForSelector('[data-connected="notes"]')
        expect(await page.locator('button[data-connect="notes"]').count()).toBe(0)
        outputs.push(await page.content())
      } finally {
        await context.close()
      }
      const listed = await api("/connections", { headers: await headersFor(dave.signer, app!.oracleDid) })
      expect(listed.body.connections).toMatchObject([{ server: "notes", plugin: "notes", connected: true }])
    }, 120_000)

    it("CONNECT_WAITS=on: the turn waits for the connect; the consent in the browser resumes it, and the resumed run calls as that user", async () => {
      await app!.close(2_000)
      app = undefined
      await boot([...turnSteps, ...turnSteps], { CONNECT_WAITS: "on" })
      const erin = await user(app!.oracleDid)
      const body = await turn(erin.headers, "who am I?")
      const frames = body
        .split("\n\n")
        .filter((f) => f.includes("data: "))
        .map((f) => ({
          event: f.match(/event: (\S+)/)?.[1],
          data: JSON.parse(f.slice(f.indexOf("data: ") + 6))
        }))
      const waiting = frames.find((f) => f.event === "waiting")?.data
      expect(waiting).toMatchObject({
        kind: "connect",
        plugin: "notes",
        tool: "load_capability",
        reason: expect.stringContaining("has not connected")
      })
      expect(waiting.url).toMatch(new RegExp(`^${url}/oauth/start\\?ticket=`))
      expect(frames.at(-1)?.data).toMatchObject({ status: "interrupted", reason: "waiting" })
      const runId: string = waiting.runId
      const before = await api(`/runs/${runId}/waits`, { headers: erin.headers })
      expect(before.body.waits[0]).toMatchObject({
        answered: null,
        request: { _tag: "connect", plugin: "notes" }
      })
      mcp.seen.length = 0
      expect(await signIn(browser, waiting.url, `${url}/oauth/callback`, "erin")).toBe(
        "Your account is connected to 'notes'. The conversation that waited for it goes on. You can close this page."
      )
      const after = await api(`/runs/${runId}/waits`, { headers: erin.headers })
      expect(after.body.waits[0].answered).toMatchObject({ answer: { _tag: "connected" }, by: "host" })
      // The resumed run (named by the audit record) streams the load and the call as erin.
      const resumed = await fetch(`${url}/runs/${after.body.waits[0].resumedRunId}?after=0`, {
        headers: erin.headers
      })
      const text = await resumed.text()
      outputs.push(text)
      expect(answerIn(text)).toBe("whoami said: you are erin")
      expect(mcp.seen).toEqual(["erin"])
      // A second callback for the same user starts nothing more: the wait is answered.
      expect((await api(`/runs/${runId}/waits`, { headers: erin.headers })).body.waits).toHaveLength(1)
    }, 120_000)

    it("CONNECT_WAITS=on in the console: the turn shows a Connect link; after the consent in its tab, the resumed run streams into the same turn", async () => {
      const gina = await user(app!.oracleDid)
      const token = gina.headers.authorization.slice("Bearer ".length)
      const context = await browser.newContext()
      await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort())
      try {
        const page = await context.newPage()
        await page.goto(`${url}/console#token=${encodeURIComponent(token)}`)
        await page.waitForFunction(READY)
        await page.getByLabel("Message").fill("who am I?")
        await page.keyboard.press("Enter")
        const box = page.getByRole("group", { name: "Connect" })
        await box.waitFor()
        expect(await box.textContent()).toContain("notes needs you to connect your account")
        expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0)
        mcp.seen.length = 0
        const [signInTab] = await Promise.all([
          context.waitForEvent("page"),
          page.click("a[data-connect-wait=notes]")
        ])
        await signInTab.waitForSelector('input[name="login"]')
        await signInTab.fill('input[name="login"]', "gina")
        await signInTab.fill('input[name="password"]', "any password")
        await signInTab.click('button[type="submit"]')
        await signInTab.waitForSelector('button:has-text("Continue")')
        await signInTab.click('button:has-text("Continue")')
        await signInTab.waitForURL((u) => u.href.startsWith(`${url}/oauth/callback`))
        await page.locator('.turn[data-status="finished"]').waitFor()
        expect(await page.locator(".turn").count()).toBe(1)
        expect(await page.getByTestId("answer").textContent()).toContain("whoami said: you are gina")
        expect(mcp.seen).toEqual(["gina"])
        outputs.push(await page.content())
      } finally {
        await context.close()
      }
    }, 120_000)

    it("no access or refresh token in any log line, SSE frame, /health/plugins, console or connections answer", async () => {
      const headers = await headersFor(alice.signer, app!.oracleDid)
      expect((await api("/health/plugins", { headers })).status).toBe(200)
      for (const path of [
        "/console/api/catalog",
        "/console/api/budget",
        "/console/api/offer",
        "/console/api/search?query=notes"
      ]) {
        expect((await api(path, { headers })).status).toBe(200)
      }
      expect((await api("/connections", { headers })).status).toBe(200)
      expect(issued.size).toBeGreaterThanOrEqual(4)
      const all = outputs.join("\n")
      expect(all).toContain("you are alice")
      expect(all).toContain("an OAuth connection was made")
      for (const token of issued)
        expect(all.includes(token), "a token appears in the host's outputs").toBe(false)
    })
  }
)
