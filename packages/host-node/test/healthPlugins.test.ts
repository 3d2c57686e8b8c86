/**
 * `GET /health/plugins` (docs/http-api.md): the boot report in the shape of `inspect --json`
 * (validated by the same schema), without secrets; behind auth unless HEALTH_PLUGINS_PUBLIC.
 */
import { Access, definePlugin, defineTool } from "@plugboard/core"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as BootReport from "../src/BootReport.js"
import { call, type Running, start, user, weather } from "./helpers.js"
import { InspectReport } from "./inspect/InspectJsonSchema.js"

const OPS = { can: "ops/restart", with: "ixo:oracle" }
const ops = definePlugin({
  name: "ops",
  manifest: {
    title: "Ops",
    summary: "Oracle status.",
    whenToUse: ["When someone asks whether the oracle is healthy."],
    examples: [
      { user: "Is it up?", tool: "ops_status" },
      { user: "Restart it", tool: "ops_restart" }
    ]
  },
  tools: [
    defineTool({ name: "ops_status", description: "Status.", input: Schema.Struct({}), handler: () => "ok" }),
    defineTool({
      name: "ops_restart",
      description: "Restarts.",
      input: Schema.Struct({}),
      requires: [OPS],
      handler: () => "restarted"
    })
  ]
})

let closed: Running
let open: Running

beforeAll(async () => {
  closed = await start({ plugins: [weather] })
  open = await start({
    plugins: [weather, ops],
    env: { HEALTH_PLUGINS_PUBLIC: "true" },
    manifestOverrides: { weather: { summary: "Forecasts for trips." } }
  })
})
afterAll(async () => {
  await closed?.stop()
  await open?.stop()
})

describe("GET /health/plugins", () => {
  it("is behind auth by default: 401 without credentials, the report with them", async () => {
    expect((await call(`${closed.url}/health/plugins`)).status).toBe(401)
    const u = await user(closed.app.oracleDid)
    const r = await call(`${closed.url}/health/plugins`, { headers: u.headers })
    expect(r.status).toBe(200)
    const report = Schema.decodeUnknownSync(InspectReport)(r.body)
    expect(report.schemaVersion).toBe(1)
    expect(report.plugins.map((p) => p.name)).toEqual(["weather"])
    expect(report.budget).toBeNull()
    expect(report.eval).toBeNull()
  })

  it("is public when HEALTH_PLUGINS_PUBLIC is true, and shows the effective manifest and its overrides", async () => {
    const r = await call(`${open.url}/health/plugins`)
    expect(r.status).toBe(200)
    const report = Schema.decodeUnknownSync(InspectReport)(r.body)
    const weatherRow = report.plugins.find((p) => p.name === "weather")!
    expect(weatherRow.manifest.summary).toBe("Forecasts for trips.")
    expect(weatherRow.overrides.map((c) => c.by)).toEqual(["manifestOverrides.weather"])
    // The same figures the report gives offline, for the same catalog.
    expect(report.nothingLoaded.total).toBeGreaterThan(0)
    expect((await call(`${open.url}/health`)).status).toBe(200)
  })
})

describe("BootReport.redact", () => {
  it("masks credentials a reason or a warning could carry", () => {
    expect(BootReport.redactText("could not reach https://bob:hunter2@mcp.example.com/sse?token=abc")).toBe(
      "could not reach https://***@mcp.example.com/sse?***"
    )
    expect(BootReport.redactText("env GITHUB_TOKEN=ghp_123 API_KEY: sk-1, Bearer eyJabc.def")).toBe(
      "env GITHUB_TOKEN=*** API_KEY=***, Bearer ***"
    )
    expect(BootReport.redact({ a: ["https://x:y@h/p"], n: 3 })).toEqual({ a: ["https://***@h/p"], n: 3 })
    expect(BootReport.redactText("Weather lookups via Open-Meteo.")).toBe("Weather lookups via Open-Meteo.")
  })
})

describe("tools hidden by their own requires are not named", () => {
  it("the public report names no admin tool; a view granted it does", async () => {
    const r = await call(`${open.url}/health/plugins`)
    const row = r.body.plugins.find((p: { name: string }) => p.name === "ops")
    expect(row.toolRequires).toEqual([])
    expect(row.manifest.examples.map((e: { tool: string }) => e.tool)).toEqual(["ops_status"])
    expect(JSON.stringify(r.body)).not.toContain("ops_restart")
    expect(row.tools).toBe(2)

    const full = await BootReport.make(open.app.catalog)
    const granted = BootReport.forView(full, Access.view(open.app.catalog, [OPS]))
    const grantedRow = granted.plugins.find((p) => p.name === "ops")!
    expect(grantedRow.toolRequires).toEqual([{ tool: "ops_restart", requires: [OPS] }])
    expect(JSON.stringify(granted)).toContain("ops_restart")
  })
})
