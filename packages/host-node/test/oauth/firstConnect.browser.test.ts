/**
 * The first connect of an OAuth server through the whole server (issue 38, docs/oauth.md#the-tool-list):
 * `createOracleApp` boots with an `auth: "oauth"` server and no tool list cached, so its plugin is
 * unavailable since boot. Real components only, as the other OAuth tests: oidc-provider, the SDK's
 * bearer-auth MCP server, the consent clicked in Chromium.
 *
 * Shown: before anyone connected, `list_capabilities` lists the plugin needs-connect with the
 * link (not "unavailable, do not retry") and `load_capability` answers the link; alice connects
 * through the link her own turn was given, and without a restart her next turn loads the plugin
 * and calls `whoami` as her, while bob's next turn sees it needs-connect; a turn already running
 * when the catalog is rebuilt keeps the catalog it started with. A server whose tools collide
 * with a plugin's stays unavailable with the reason, in the log, in `/health/plugins` and in
 * what the model is told; nothing else changes.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { type Catalog, Offer, type Plugin, type RuntimeLogger } from "@plugboard/core"
import { ScriptedChatModel, type ScriptedReply, type ScriptedTurn } from "@plugboard/models"
import { Schema } from "effect"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createOracleApp, type OracleApp } from "../../src/index.js"
import { chromiumMissing, launch } from "../console/browser.js"
import { call, newSession, user } from "../helpers.js"
import { type AuthServer, startAuthServer } from "./fixtures/authServer.js"
import { signIn } from "./fixtures/browserFlow.js"
import { type ProtectedMcpServer, startMcpServer } from "./fixtures/mcpServer.js"
import { stdioWhoami } from "./fixtures/stdioWhoami.js"

const missing = chromiumMissing()

let auth: AuthServer
let mcp: ProtectedMcpServer
let browser: Browser
const dirs: Array<string> = []
const apps: Array<OracleApp> = []
const key = randomBytes(32).toString("base64")
const logs: Array<{ level: string; message: string; fields: unknown }> = []
const logger: RuntimeLogger = {
  debug: () => {},
  info: (message, fields) => logs.push({ level: "info", message, fields }),
  warn: (message, fields) => logs.push({ level: "warn", message, fields }),
  error: (message, fields) => logs.push({ level: "error", message, fields })
}

/** Released by the test: the `hold` tool's call waits for it (a turn kept in flight). */
let release: () => void = () => {}
let held: Promise<void> = Promise.resolve()
let holding: () => void = () => {}
const gate: Plugin = {
  name: "gate",
  manifest: {
    title: "Gate",
    summary: "Holds a turn until the test lets it go.",
    visibility: "always",
    whenToUse: ["never: a test fixture"]
  },
  tools: [
    {
      name: "hold",
      description: "Waits until the test releases it.",
      input: Schema.Struct({}),
      handler: async () => {
        holding()
        await held
        return "released"
      }
    }
  ]
}

/** What each turn does, by its message: one reply per model call of the turn, in order. */
const plans: Record<string, ReadonlyArray<ScriptedReply | ((turn: ScriptedTurn) => ScriptedReply)>> = {
  "list and load": [
    { tool: "list_capabilities", args: {} },
    { tool: "load_capability", args: { names: ["notes"] } },
    (t) => `${lastTool(t, "list_capabilities")}\n${lastTool(t, "load_capability")}`
  ],
  "who am I": [
    { tool: "load_capability", args: { names: ["notes"] } },
    { tool: "whoami", args: {} },
    (t) => `whoami said: ${lastTool(t, "whoami")}`
  ],
  "hold then whoami": [
    { tool: "hold", args: {} },
    { tool: "whoami", args: {} },
    (t) => `whoami said: ${lastTool(t, "whoami")}`
  ]
}

const lastTool = (turn: ScriptedTurn, tool: string): string => {
  const found = [...turn.messages].reverse().find((m) => ToolMessage.isInstance(m) && m.name === tool)
  return typeof found?.content === "string" ? found.content : JSON.stringify(found?.content)
}

/** Routes each invocation by its turn's message and the calls the turn made so far. */
const model = () =>
  new ScriptedChatModel({
    respond: (turn) => {
      const human = turn.messages.findLastIndex((m) => HumanMessage.isInstance(m))
      const text = String(turn.messages[human]?.content)
      const step = turn.messages.slice(human).filter((m) => AIMessage.isInstance(m)).length
      const reply = plans[text]?.[step]
      if (reply === undefined) return `no plan for ${text} step ${step}`
      return typeof reply === "function" ? reply(turn) : reply
    }
  })

/** The names core's offer gives a thread that loaded `loaded` (every user's view). */
const offerOf = (catalog: Catalog.Catalog, loaded: ReadonlyArray<string>) =>
  Offer.offer(catalog, loaded).map((t) => t.name)

const boot = async (
  plugins: ReadonlyArray<Plugin>,
  others: (dir: string) => Record<string, unknown> = () => ({}),
  env: Record<string, string> = {}
) => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-oauth-first-"))
  dirs.push(dir)
  const file = join(dir, "mcp.json")
  writeFileSync(
    file,
    JSON.stringify({ mcpServers: { notes: { url: mcp.url, auth: "oauth" }, ...others(dir) } })
  )
  const app = await createOracleApp({
    plugins,
    logger,
    model: model(),
    env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000", MCP_CONFIG: file, CONNECTIONS_KEY: key, ...env }
  })
  apps.push(app)
  return { app, url: (await app.listen(0, "127.0.0.1")).url }
}

/** One streamed turn's answer (its `message` frames joined). */
const turn = async (url: string, headers: Record<string, string>, message: string): Promise<string> => {
  const session = await newSession(url, headers)
  const response = await fetch(`${url}/messages/${session}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ message, stream: true })
  })
  return (await response.text())
    .split("\n\n")
    .filter((frame) => frame.includes("event: message\n"))
    .map((frame) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6)).content as string)
    .join("")
}

/** The two meta-tool results a "list and load" turn answers with. */
const listAndLoad = async (url: string, headers: Record<string, string>) => {
  const [listed, loaded] = (await turn(url, headers, "list and load")).split("\n")
  const notes = JSON.parse(listed!).plugins.find((p: { name: string }) => p.name === "notes")
  return { notes, load: JSON.parse(loaded!).results[0] }
}

beforeAll(async () => {
  if (missing !== undefined) return
  mcp = await startMcpServer()
  auth = await startAuthServer(() => mcp.url)
  await mcp.serve(auth.issuer)
  browser = await launch()
}, 120_000)

afterAll(async () => {
  if (missing !== undefined) return
  for (const app of apps) await app.close(2_000)
  await browser?.close()
  await mcp?.close()
  await auth?.close()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(missing !== undefined)(
  "an OAuth server's first connect offers its plugin without a restart (oidc-provider, SDK server, Chromium)",
  () => {
    it("before anyone connected the plugin is needs-connect with a link; alice connects through it and her next turn calls as her; bob's sees needs-connect; a turn in flight keeps its catalog", async () => {
      const { app, url } = await boot([gate])
      const booted = app.catalog
      expect(booted.byName.get("notes")?.unavailable).toContain("no list is cached yet")
      const alice = await user(app.oracleDid)
      const bob = await user(app.oracleDid)
      const bootHealth = await call(`${url}/health/plugins`, { headers: alice.headers })
      expect(bootHealth.body.plugins.find((p: { name: string }) => p.name === "notes").unavailable).toContain(
        "no list is cached yet"
      )

      // Before anyone connected: listed needs-connect with the link, and the load answers it.
      const before = await listAndLoad(url, alice.headers)
      expect(before.notes).toMatchObject({
        name: "notes",
        loaded: false,
        needsConnect: { reason: expect.stringContaining("Its tools are listed once a user connects.") }
      })
      expect(before.notes.unavailable).toBeUndefined()
      expect(before.notes.needsConnect.url).toMatch(new RegExp(`^${url}/oauth/start\\?ticket=`))
      expect(before.load).toMatchObject({ name: "notes", status: "error", error: "needs-connect" })
      expect(before.load.message).toContain("Give the user this link to connect: ")
      expect(before.load.connectUrl).toMatch(new RegExp(`^${url}/oauth/start\\?ticket=`))

      // A turn of alice's starts on the boot catalog and is held in flight.
      held = new Promise<void>((resolve) => {
        release = resolve
      })
      const holdingNow = new Promise<void>((resolve) => {
        holding = resolve
      })
      const inFlight = turn(url, alice.headers, "hold then whoami")
      await holdingNow

      // Alice opens the link the model was given, and consents.
      expect(await signIn(browser, before.load.connectUrl, `${url}/oauth/callback`, "alice")).toBe(
        "Your account is connected to 'notes'. Its tools are offered from now on. You can close this page."
      )
      expect(app.catalog).not.toBe(booted)
      expect(app.catalog.byName.get("notes")?.unavailable).toBeUndefined()
      expect(app.catalog.byName.get("notes")?.tools.map((t) => t.name)).toEqual(["whoami"])
      expect(app.catalog.byName.get("gate")?.tools.map((t) => t.name)).toEqual(["hold"])
      // The offer's prefix is unchanged: what a thread was offered is offered again, and a load of
      // the new plugin appends its tools.
      for (const loaded of [[], ["gate"]])
        expect(offerOf(app.catalog, loaded)).toEqual(offerOf(booted, loaded))
      expect(offerOf(app.catalog, ["notes"])).toEqual([...offerOf(booted, []), "whoami"])
      expect(logs).toContainEqual({
        level: "info",
        message: "an OAuth server's plugin is offered: its tool list was read when a user connected",
        fields: { server: "notes", plugin: "notes", tools: 1 }
      })

      // The held turn goes on with the catalog it started with, where no plugin has `whoami`
      // (in the new one, the gate would say it belongs to 'notes', to load first).
      release()
      const heldAnswer = await inFlight
      expect(heldAnswer).toMatch(/^whoami said: /)
      expect(heldAnswer).not.toContain("belongs to plugin 'notes'")
      expect(mcp.seen).toEqual([])

      // Alice's next turn: the plugin loads and whoami runs as her.
      mcp.seen.length = 0
      expect(await turn(url, alice.headers, "who am I")).toBe("whoami said: you are alice")
      expect(mcp.seen).toEqual(["alice"])

      // Bob has not connected: needs-connect with his own link (the list is read now).
      const bobSees = await listAndLoad(url, bob.headers)
      expect(bobSees.notes).toMatchObject({ loaded: false, needsConnect: { url: expect.any(String) } })
      expect(bobSees.notes.needsConnect.reason).not.toContain("Its tools are listed once")
      expect(bobSees.load).toMatchObject({ status: "error", error: "needs-connect" })
      expect(mcp.seen).toEqual(["alice"])

      // /health/plugins reports the catalog as it is now.
      const health = await call(`${url}/health/plugins`, { headers: alice.headers })
      const reported = health.body.plugins.find((p: { name: string }) => p.name === "notes")
      expect(reported.unavailable).toBeNull()
      // So does the console (on: the host listens on loopback).
      const consoled = await call(`${url}/console/api/catalog`, { headers: alice.headers })
      expect(consoled.body.plugins.find((p: { name: string }) => p.name === "notes")).toMatchObject({
        unavailable: null,
        tools: [expect.objectContaining({ name: "whoami" })]
      })
    }, 180_000)

    it("a server whose tools collide with a plugin's stays unavailable with the reason (log, /health/plugins, the model); nothing else changes", async () => {
      // `whoami` is taken, so the server's is namespaced `notes__whoami`, which is taken too.
      const clash: Plugin = {
        name: "clash",
        manifest: {
          title: "Clash",
          summary: "Has the names the server's tool would get.",
          whenToUse: ["a test"]
        },
        tools: ["whoami", "notes__whoami"].map((name) => ({
          name,
          description: `The plugin's own ${name}.`,
          input: Schema.Struct({}),
          handler: () => name
        }))
      }
      const { app, url } = await boot([clash])
      const booted = app.catalog
      const dave = await user(app.oracleDid)
      const erin = await user(app.oracleDid)
      const started = await call(`${url}/connections/notes`, { method: "POST", headers: dave.headers })
      expect(await signIn(browser, started.body.url, `${url}/oauth/callback`, "dave")).toBe(
        "Your account is connected to 'notes'. Its tools could not be offered: the host's log and /health/plugins say why. You can close this page."
      )
      const reason = app.catalog.byName.get("notes")?.unavailable
      expect(reason).toContain(
        "MCP server 'notes' listed its tools when a user connected, and they cannot join the catalog:"
      )
      expect(reason).toContain("notes__whoami")
      expect(logs).toContainEqual({
        level: "warn",
        message: reason,
        fields: { server: "notes", plugin: "notes" }
      })
      // Nothing else changed: the other plugin, and the catalog's plugins and their order.
      expect(app.catalog.entries.map((e) => e.name)).toEqual(booted.entries.map((e) => e.name))
      expect(app.catalog.byName.get("clash")?.tools.map((t) => t.name)).toEqual(["whoami", "notes__whoami"])
      expect(app.catalog.byName.get("notes")?.tools).toEqual([])

      const health = await call(`${url}/health/plugins`, { headers: dave.headers })
      expect(health.body.plugins.find((p: { name: string }) => p.name === "notes").unavailable).toBe(reason)

      // Connecting does not cure it: the model is told it is unavailable, with the reason.
      for (const headers of [dave.headers, erin.headers]) {
        const { notes, load } = await listAndLoad(url, headers)
        expect(notes.unavailable).toBe(reason)
        expect(notes.needsConnect).toBeUndefined()
        expect(load).toMatchObject({ status: "error", error: "unavailable" })
        expect(load.message).toContain(reason)
      }
    }, 180_000)

    it("a server sharing a tool name with an available server's plugin stays unavailable: taking it would rename that plugin's tool", async () => {
      const { app, url } = await boot([], (dir) => ({ other: stdioWhoami(dir) }))
      const booted = app.catalog
      expect(booted.byName.get("other")?.tools.map((t) => t.name)).toEqual(["whoami"])
      const frank = await user(app.oracleDid)
      const started = await call(`${url}/connections/notes`, { method: "POST", headers: frank.headers })
      expect(await signIn(browser, started.body.url, `${url}/oauth/callback`, "frank")).toContain(
        "Its tools could not be offered"
      )
      const reason = app.catalog.byName.get("notes")?.unavailable
      expect(reason).toBe(
        "MCP server 'notes' listed its tools when a user connected, and they cannot join the catalog: they share tool names with 'other', whose tools would be renamed under the threads that loaded them; the host offers it from its next start (docs/oauth.md#the-tool-list)."
      )
      expect(app.catalog.byName.get("other")?.tools.map((t) => t.name)).toEqual(["whoami"])
      expect(offerOf(app.catalog, ["other"])).toEqual(offerOf(booted, ["other"]))
      expect(logs).toContainEqual({
        level: "warn",
        message: reason,
        fields: { server: "notes", plugin: "notes" }
      })
    }, 180_000)

    it("CONNECT_WAITS=on: the first user's turn waits for the connect; the consent lists the tools, and the resumed run loads the plugin and calls as them", async () => {
      const { app, url } = await boot([], () => ({}), { CONNECT_WAITS: "on" })
      const gina = await user(app.oracleDid)
      const session = await newSession(url, gina.headers)
      const response = await fetch(`${url}/messages/${session}`, {
        method: "POST",
        headers: gina.headers,
        body: JSON.stringify({ message: "who am I", stream: true })
      })
      const frames = (await response.text())
        .split("\n\n")
        .filter((f) => f.includes("data: "))
        .map((f) => ({
          event: f.match(/event: (\S+)/)?.[1],
          data: JSON.parse(f.slice(f.indexOf("data: ") + 6))
        }))
      const waiting = frames.find((f) => f.event === "waiting")?.data
      expect(waiting).toMatchObject({ kind: "connect", plugin: "notes", tool: "load_capability" })
      mcp.seen.length = 0
      expect(await signIn(browser, waiting.url, `${url}/oauth/callback`, "gina")).toBe(
        "Your account is connected to 'notes'. Its tools are offered from now on. The conversation that waited for it goes on. You can close this page."
      )
      const waits = await call(`${url}/runs/${waiting.runId}/waits`, { headers: gina.headers })
      const resumed = await fetch(`${url}/runs/${waits.body.waits[0].resumedRunId}?after=0`, {
        headers: gina.headers
      })
      const text = await resumed.text()
      expect(text).toContain('"output":"you are gina"')
      expect(mcp.seen).toEqual(["gina"])
    }, 180_000)

    it("two OAuth servers: each first connect offers its plugin, and the second keeps the first's", async () => {
      const tasks = await startMcpServer({ tool: "whoareyou" })
      const tasksAuth = await startAuthServer(() => tasks.url)
      await tasks.serve(tasksAuth.issuer)
      try {
        const { app, url } = await boot([], () => ({ tasks: { url: tasks.url, auth: "oauth" } }))
        const hank = await user(app.oracleDid)
        for (const server of ["notes", "tasks"]) {
          const started = await call(`${url}/connections/${server}`, {
            method: "POST",
            headers: hank.headers
          })
          expect(await signIn(browser, started.body.url, `${url}/oauth/callback`, "hank")).toBe(
            `Your account is connected to '${server}'. Its tools are offered from now on. You can close this page.`
          )
        }
        expect(app.catalog.byName.get("notes")?.tools.map((t) => t.name)).toEqual(["whoami"])
        expect(app.catalog.byName.get("tasks")?.tools.map((t) => t.name)).toEqual(["whoareyou"])
        mcp.seen.length = 0
        expect(await turn(url, hank.headers, "who am I")).toBe("whoami said: you are hank")
        expect(mcp.seen).toEqual(["hank"])
      } finally {
        await tasks.close()
        await tasksAuth.close()
      }
    }, 180_000)
  }
)
