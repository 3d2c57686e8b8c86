/**
 * `requires` end to end (docs/plugins.md#requiring-capabilities): real ucanto tokens through the server's
 * auth, carried to the turn; a user whose UCAN lacks a capability sees the plugin unavailable with
 * the reason, is refused by load_capability, is not offered its always-tier tools nor an admin
 * tool; a user the oracle delegated the capabilities to gets all of it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BaseMessage } from "@langchain/core/messages"
import { definePlugin, defineTool } from "@plugboard/core"
import { ScriptedChatModel, type ScriptedTurn } from "@plugboard/models"
import { formatSigner, generateSigner, mintDelegation, mintInvocation, type Signer } from "@plugboard/ucan"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, newSession, type Running, start, weather } from "./helpers.js"

const ADMIN = { can: "admin/read", with: "ixo:oracle" }
const OPS = { can: "ops/restart", with: "ixo:oracle" }
const input = Schema.Struct({})

const admin = definePlugin({
  name: "admin",
  manifest: {
    title: "Admin",
    summary: "Oracle statistics for administrators.",
    whenToUse: ["When an administrator asks for usage statistics."],
    visibility: "always"
  },
  requires: [ADMIN],
  operatingGuide: "Only report aggregate figures.",
  tools: [
    defineTool({
      name: "admin_stats",
      description: "Usage figures.",
      input,
      // The handler sees what the user was granted (RuntimeContext.user.capabilities).
      handler: (_, context) => `42 users (${context.user.capabilities.map((c) => c.can).join(", ")})`
    })
  ],
  routes: [{ method: "GET", path: "/admin/stats", handler: (r) => ({ body: { users: 42, for: r.userDid } }) }]
})

const audit = definePlugin({
  name: "audit",
  manifest: {
    title: "Audit",
    summary: "The oracle's audit log.",
    whenToUse: ["When an administrator asks who did what."]
  },
  requires: [ADMIN],
  tools: [defineTool({ name: "audit_log", description: "Audit entries.", input, handler: () => "[]" })]
})

const ops = definePlugin({
  name: "ops",
  manifest: {
    title: "Ops",
    summary: "Oracle status.",
    whenToUse: ["When someone asks whether the oracle is healthy."],
    visibility: "always"
  },
  tools: [
    defineTool({ name: "ops_status", description: "Status.", input, handler: () => "ok" }),
    defineTool({
      name: "ops_restart",
      description: "Restarts the oracle.",
      input,
      requires: [OPS],
      handler: () => "restarted"
    })
  ]
})

/** What each model call saw: the tools offered and the system prompt. */
const seen: Array<{ offered: ReadonlyArray<string>; system: string }> = []

const textOf = (m: BaseMessage): string =>
  typeof m.content === "string" ? m.content : JSON.stringify(m.content)

// Per turn: list everything, load audit and admin, call admin_stats and ops_restart, then answer.
const respond = (turn: ScriptedTurn) => {
  const system = turn.messages.find((m) => m._getType() === "system")
  seen.push({ offered: turn.offeredTools, system: system === undefined ? "" : textOf(system) })
  const tools = turn.messages.filter((m) => m._getType() === "tool").length
  const sinceUser = turn.messages.length - 1 - turn.messages.map((m) => m._getType()).lastIndexOf("human")
  if (sinceUser === 0) return { tool: "list_capabilities", args: {} }
  if (sinceUser === 2) return { tool: "load_capability", args: { names: ["audit", "admin"] } }
  if (sinceUser === 4) return [{ tool: "admin_stats" }, { tool: "ops_restart" }]
  return `Done after ${tools} tool messages.`
}

let running: Running
let oracle: Signer
let keyDir: string

beforeAll(async () => {
  oracle = await generateSigner()
  keyDir = mkdtempSync(join(tmpdir(), "plugboard-requires-"))
  const keyFile = join(keyDir, "oracle.key")
  writeFileSync(keyFile, `${formatSigner(oracle)}\n`, { mode: 0o600 })
  running = await start({
    plugins: [weather, admin, audit, ops],
    model: new ScriptedChatModel({ respond }),
    env: { ORACLE_KEY_FILE: keyFile }
  })
})

afterAll(async () => {
  await running?.stop()
  rmSync(keyDir, { recursive: true, force: true })
})

const headers = (token: string) => ({
  authorization: `Bearer ${token}`,
  "x-auth-type": "ucan",
  "content-type": "application/json"
})

/** Runs one turn and returns the tool messages of the thread, parsed, and what the model saw. */
const turn = async (h: Record<string, string>) => {
  const sessionId = await newSession(running.url, h)
  const from = seen.length
  const r = await call(`${running.url}/messages/${sessionId}`, {
    method: "POST",
    headers: h,
    body: { message: "Show me the admin figures." }
  })
  expect(r.status).toBe(200)
  const history = await call(`${running.url}/messages/${sessionId}`, { headers: h })
  // biome-ignore lint/suspicious/noExplicitAny: the wire's messages are read freely
  const tools = (history.body.messages as Array<any>).filter((m) => m.type === "tool").map((m) => m.content)
  return { tools: tools as Array<string>, seen: seen.slice(from), answer: r.body.message.content as string }
}

describe("a user whose UCAN lacks the capabilities (self-issued claims grant nothing)", () => {
  it("sees admin and audit unavailable with the reason, is refused by load_capability, and never gets their tools", async () => {
    // The user claims ADMIN and OPS in the token, signed by nobody the oracle trusts.
    const token = await mintInvocation({
      issuer: await generateSigner(),
      audience: running.app.oracleDid,
      capabilities: [ADMIN, OPS]
    })
    const t = await turn(headers(token))
    const listed = JSON.parse(t.tools[0]!)
    const byName = Object.fromEntries(listed.plugins.map((p: { name: string }) => [p.name, p]))
    const reason =
      "It requires { can: 'admin/read', with: 'ixo:oracle' }, which your credentials do not grant."
    expect(byName.admin.unavailable).toBe(reason)
    expect(byName.audit.unavailable).toBe(reason)
    expect(byName.weather.unavailable).toBeUndefined()

    const load = JSON.parse(t.tools[1]!)
    expect(load.newlyLoaded).toEqual([])
    expect(load.results.map((r: { name: string; error: string }) => [r.name, r.error])).toEqual([
      ["audit", "not-granted"],
      ["admin", "not-granted"]
    ])
    // A call to the denied plugin's tool is refused with the reason; the admin tool is unknown.
    expect(t.tools[2]).toContain("belongs to plugin 'admin', which this user may not use")
    expect(t.tools[3]).toMatch(/^There is no tool named 'ops_restart'\./)

    for (const call of t.seen) {
      expect(call.offered).toEqual(["list_capabilities", "load_capability", "ops_status"])
      expect(call.system).not.toContain("- admin:")
      expect(call.system).not.toContain("Only report aggregate figures.")
    }
  })
})

describe("a user the oracle delegated the capabilities to", () => {
  it("is offered the always-tier and admin tools, loads audit, and the admin guide is in the prompt", async () => {
    const user = await generateSigner()
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [
        { can: "admin/*", with: "ixo:oracle" },
        { can: "ops/restart", with: "ixo:oracle" }
      ],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const token = await mintInvocation({
      issuer: user,
      audience: running.app.oracleDid,
      capabilities: [ADMIN, OPS],
      proofs: [proof]
    })
    const t = await turn(headers(token))
    const listed = JSON.parse(t.tools[0]!)
    for (const p of listed.plugins) expect(p.unavailable).toBeUndefined()
    const load = JSON.parse(t.tools[1]!)
    expect(load.newlyLoaded).toEqual(["audit"])
    expect(load.results[1]).toMatchObject({ name: "admin", status: "alreadyAvailable" })
    expect(t.tools[2]).toBe("42 users (admin/read, ops/restart)")
    expect(t.tools[3]).toBe("restarted")
    expect(t.seen[0]!.offered).toEqual([
      "list_capabilities",
      "load_capability",
      "admin_stats",
      "ops_status",
      "ops_restart"
    ])
    expect(t.seen[2]!.offered).toContain("audit_log")
    expect(t.seen[0]!.system).toContain("- admin: Oracle statistics for administrators.")
    expect(t.seen[0]!.system).toContain("Only report aggregate figures.")
  })
})

describe("a plugin's HTTP routes follow its requires", () => {
  it("403 with the reason for a user who lacks them; the route answers a user who holds them", async () => {
    const plain = await mintInvocation({ issuer: await generateSigner(), audience: running.app.oracleDid })
    const refused = await call(`${running.url}/admin/stats`, { headers: headers(plain) })
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ statusCode: 403, error: "not-granted" })
    expect(refused.body.message).toContain("{ can: 'admin/read', with: 'ixo:oracle' }")

    const user = await generateSigner()
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [ADMIN],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const granted = await mintInvocation({
      issuer: user,
      audience: running.app.oracleDid,
      capabilities: [ADMIN],
      proofs: [proof]
    })
    const ok = await call(`${running.url}/admin/stats`, { headers: headers(granted) })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ users: 42, for: user.did() })
  })
})

describe("the dev console's API follows requires too", () => {
  it("shows a user without the grants the denied plugins as unavailable, without their tools, and never names a hidden tool", async () => {
    const plain = headers(
      await mintInvocation({ issuer: await generateSigner(), audience: running.app.oracleDid })
    )
    const reason =
      "It requires { can: 'admin/read', with: 'ixo:oracle' }, which your credentials do not grant."
    const catalog = await call(`${running.url}/console/api/catalog`, { headers: plain })
    expect(catalog.status).toBe(200)
    // biome-ignore lint/suspicious/noExplicitAny: the wire's JSON is read freely
    const byName = Object.fromEntries(catalog.body.plugins.map((p: any) => [p.name, p]))
    expect(byName.admin).toMatchObject({ unavailable: reason, tools: [] })
    expect(byName.audit).toMatchObject({ unavailable: reason, tools: [] })
    // biome-ignore lint/suspicious/noExplicitAny: as above
    expect(byName.ops.tools.map((t: any) => t.name)).toEqual(["ops_status"])
    const search = await call(`${running.url}/console/api/search?query=administrator`, { headers: plain })
    // biome-ignore lint/suspicious/noExplicitAny: as above
    expect(search.body.plugins.find((p: any) => p.name === "audit")?.unavailable).toBe(reason)
    const budget = await call(`${running.url}/console/api/budget`, { headers: plain })
    expect(budget.status).toBe(200)
    for (const answer of [catalog, search, budget])
      expect(JSON.stringify(answer.body)).not.toContain("ops_restart")
    const offer = await call(`${running.url}/console/api/offer?loaded=audit`, { headers: plain })
    expect(offer).toMatchObject({ status: 400, body: { error: "not-loadable" } })
  })

  it("shows a user granted the capabilities every plugin and tool", async () => {
    const user = await generateSigner()
    const proof = await mintDelegation({
      issuer: oracle,
      audience: user.did(),
      capabilities: [ADMIN, OPS],
      withoutOracleCapability: true,
      ttlSeconds: 3600
    })
    const granted = headers(
      await mintInvocation({
        issuer: user,
        audience: running.app.oracleDid,
        capabilities: [ADMIN, OPS],
        proofs: [proof]
      })
    )
    const catalog = await call(`${running.url}/console/api/catalog`, { headers: granted })
    // biome-ignore lint/suspicious/noExplicitAny: the wire's JSON is read freely
    const byName = Object.fromEntries(catalog.body.plugins.map((p: any) => [p.name, p]))
    expect(byName.admin.unavailable).toBeNull()
    // biome-ignore lint/suspicious/noExplicitAny: as above
    expect(byName.ops.tools.map((t: any) => t.name)).toEqual(["ops_status", "ops_restart"])
    const offer = await call(`${running.url}/console/api/offer?loaded=audit`, { headers: granted })
    expect(offer.status).toBe(200)
    expect(offer.body.loadedPlugins).toEqual(["audit"])
  })
})
