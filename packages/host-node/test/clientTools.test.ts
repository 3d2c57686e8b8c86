/**
 * Client tools checked over real HTTP against every tool the turn could offer, with the examples'
 * hooks plugins: a boot-time sub-agent (`org_chart`), a per-request tool (`my_team`, only for
 * roster members), a silent plugin; and schemas checked as JSON Schema (Ajv). A refusal is a 400
 * naming the tool before anything happens: no session, no model call, no hook of the turn.
 */

import type { Plugin, RequestInfo } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner } from "@plugboard/ucan"
import { afterEach, describe, expect, it } from "vitest"
import { makeTeamPlugins, ROSTER } from "../../../examples/plugins/hooks.js"
import { call, headersFor, type Running, start } from "./helpers.js"

let running: Running | undefined
afterEach(async () => {
  await running?.stop()
  running = undefined
})

const pickColor = {
  name: "pick_color",
  description: "Asks the user to pick a color in the page.",
  schema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] }
}

/**
 * Boots the team plugins with the caller on the roster (so the turn has `my_team` for them), a
 * scripted model that answers "Done." to every call, and a count of the per-request hook's runs.
 */
const boot = async () => {
  const signer = await generateSigner()
  const team = makeTeamPlugins({
    loadRoster: async () => [
      ...ROSTER,
      { did: signer.did(), name: "Tess", team: "platform", manager: "Grace" }
    ]
  })
  const hookRuns: Array<string> = []
  const directory: Plugin = {
    ...team.teamDirectory,
    getRequestTools: (request: RequestInfo) => {
      hookRuns.push(request.userDid)
      return team.teamDirectory.getRequestTools!(request)
    }
  }
  const model = new ScriptedChatModel({ respond: () => "Done." })
  running = await start({ plugins: [team.teamAdmin, directory], model })
  const headers = await headersFor(signer, running.app.oracleDid)
  const other = await generateSigner()
  return {
    url: running.url,
    model,
    usage: team.usage,
    hookRuns,
    member: { did: signer.did(), headers },
    outsider: { did: other.did(), headers: await headersFor(other, running.app.oracleDid) }
  }
}

const post = (
  url: string,
  sessionId: string,
  headers: Record<string, string>,
  body: Record<string, unknown>
) =>
  call(`${url}/messages/${sessionId}`, {
    method: "POST",
    headers,
    body: { message: "Who is on my team?", ...body }
  })

const sessionsOf = async (url: string, headers: Record<string, string>) =>
  (await call(`${url}/sessions`, { headers })).body.total as number

describe("client tool names the turn's own tools have (400 naming the tool)", () => {
  it.each([
    [
      "a boot-time sub-agent",
      "org_chart",
      { tools: [{ ...pickColor, name: "org_chart" }] },
      /a sub-agent of plugin 'team-directory'/
    ],
    [
      "a per-request tool of the caller",
      "my_team",
      { agActions: [{ ...pickColor, name: "my_team" }] },
      /a per-request tool of plugin 'team-directory'/
    ],
    [
      "a plugin tool",
      "find_teammate",
      { tools: [{ ...pickColor, name: "find_teammate" }] },
      /a tool of plugin 'team-directory'/
    ],
    [
      "a meta-tool",
      "list_capabilities",
      { tools: [{ ...pickColor, name: "list_capabilities" }] },
      /a runtime meta-tool/
    ]
  ])("%s (%s)", async (_what, name, extra, owner) => {
    const t = await boot()
    const sessionId = crypto.randomUUID()
    const r = await post(t.url, sessionId, t.member.headers, { stream: true, ...extra })
    expect(r.status).toBe(400)
    expect(r.headers.get("content-type")).not.toMatch(/event-stream/)
    expect(r.body).toMatchObject({ error: "client-tool-name-collision" })
    expect(r.body.message).toMatch(new RegExp(`'${name}' has the name of`))
    expect(r.body.message).toMatch(owner)
    // Nothing happened: no session created, no model call, no middleware ran.
    expect(await sessionsOf(t.url, t.member.headers)).toBe(0)
    expect(t.model.calls).toHaveLength(0)
    expect(t.usage.trace).toEqual([])
  })

  it("`my_team` is the member's only: an outsider's client tool may take that name", async () => {
    const t = await boot()
    const r = await post(t.url, crypto.randomUUID(), t.outsider.headers, {
      agActions: [{ ...pickColor, name: "my_team" }]
    })
    expect(r.status).toBe(200)
    expect(t.model.calls[0]!.offeredTools.at(-1)).toBe("my_team")
  })
})

describe("client tool schemas checked as JSON Schema (400 naming the tool and the problem)", () => {
  it.each([
    [
      { type: "object", properties: { prompt: { type: "string", minLength: "abc" } } },
      /\/properties\/prompt\/minLength must be integer/
    ],
    [
      { type: "object", properties: { prompt: { type: "string", pattern: "(" } } },
      /not a valid regular expression/
    ],
    [{ type: "object", not: 5 }, /\/not must be object,boolean/],
    [{ type: "object", $ref: 42 }, /\/\$ref must be string/],
    [{ type: "object", minProperties: -1 }, /\/minProperties must be >= 0/],
    [{ type: "string" }, /type must be 'object'/]
  ])("%j", async (schema, problem) => {
    const t = await boot()
    const r = await post(t.url, crypto.randomUUID(), t.member.headers, { tools: [{ ...pickColor, schema }] })
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: "client-tool-invalid-schema" })
    expect(r.body.message).toMatch(/^Client tool 'pick_color' has an invalid JSON Schema: /)
    expect(r.body.message).toMatch(problem)
    expect(await sessionsOf(t.url, t.member.headers)).toBe(0)
    expect(t.model.calls).toHaveLength(0)
  })

  it.each([
    [40, /'pick_color'.*nests deeper than 32 levels/],
    // Past the body's own bound (Http.ts): refused before any tool is looked at. Written by hand:
    // JSON.stringify itself overflows at this depth.
    [20_000, /nested deeper than 64 levels/]
  ])("a schema nested %i levels is a 400, not a stack overflow", async (depth, message) => {
    const t = await boot()
    const schema = `${'{"type":"object","not":'.repeat(depth)}{"type":"object"}${"}".repeat(depth)}`
    const tool = `{"name":"pick_color","description":"Picks.","schema":${schema}}`
    const r = await call(`${t.url}/messages/${crypto.randomUUID()}`, {
      method: "POST",
      headers: t.member.headers,
      body: `{"message":"hi","tools":[${tool}]}`
    })
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(message)
    expect(t.model.calls).toHaveLength(0)
  })
})

describe("valid client tools", () => {
  it("200: offered after the server's tools, the per-request hooks run once", async () => {
    const t = await boot()
    const sessionId = crypto.randomUUID()
    const strict = {
      name: "fill_form",
      description: "Fills the page's form.",
      parameters: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: { fields: { type: "array", prefixItems: [{ type: "string" }] } },
        required: ["fields"],
        additionalProperties: false,
        strict: true
      }
    }
    const r = await post(t.url, sessionId, t.member.headers, { tools: [pickColor], agActions: [strict] })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ message: { content: "Done." }, sessionId })
    expect(t.model.calls).toHaveLength(1)
    expect(t.model.calls[0]!.offeredTools.slice(-2)).toEqual(["pick_color", "fill_form"])
    expect(t.hookRuns).toEqual([t.member.did])
    expect(await sessionsOf(t.url, t.member.headers)).toBe(1)
  })

  it("without client tools the hooks still run once, in the turn", async () => {
    const t = await boot()
    const r = await post(t.url, crypto.randomUUID(), t.member.headers, {})
    expect(r.status).toBe(200)
    expect(t.hookRuns).toEqual([t.member.did])
  })
})
