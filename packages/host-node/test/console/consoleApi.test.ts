/**
 * The dev console's read-only API over a real server (docs/console.md): the same auth as
 * every private route, the figures core computes, the console off away from loopback.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Catalog } from "@plugboard/core"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { examplePlugins } from "../../../../examples/catalog/index.js"
import { enabled, isLoopback } from "../../src/console/ConsoleRoutes.js"
import { createOracleApp, quietLogger } from "../../src/index.js"
import { call, collect, newSession, type Running, start, stream, user, weather } from "../helpers.js"

describe("console API", () => {
  let running: Running
  let headers: Record<string, string>
  beforeAll(async () => {
    running = await start({ plugins: examplePlugins })
    headers = (await user(running.app.oracleDid)).headers
  }, 60_000)
  afterAll(() => running.stop())

  it("answers each data route only with a valid token", async () => {
    for (const path of ["catalog", "budget", "search?query=weather", "offer?loaded=weather"]) {
      const anonymous = await call(`${running.url}/console/api/${path}`)
      expect(anonymous.status, path).toBe(401)
      const authed = await call(`${running.url}/console/api/${path}`, { headers })
      expect(authed.status, path).toBe(200)
      expect(authed.headers.get("cache-control")).toBe("no-store")
    }
  })

  it("serves the page without a token, inline and with no other request", async () => {
    const r = await call(`${running.url}/console`)
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toMatch(/^text\/html/)
    expect(r.body).toContain("<script>")
    expect(r.body).not.toMatch(/<script[^>]+src=|<link[^>]+href=/)
  })

  it("prices the offer with core's turnCost, and refuses a name that is not loadable", async () => {
    const catalog = Catalog.unsafeMake(examplePlugins)
    const r = await call(`${running.url}/console/api/offer?loaded=weather`, { headers })
    expect(r.body.loadedPlugins).toEqual(["weather"])
    const budget = await call(`${running.url}/console/api/budget`, { headers })
    const weather = budget.body.perPlugin.find((p: { name: string }) => p.name === "weather")
    expect(r.body.cost.total).toBe(budget.body.nothingLoaded.total + weather.cost - weather.guide)
    expect(catalog.byName.get("weather")?.visibility).toBe("on-demand")
    const bad = await call(`${running.url}/console/api/offer?loaded=weather,nope`, { headers })
    expect(bad.status).toBe(400)
    expect(bad.body.message).toContain("'nope'")
  })

  it("ranks a search as list_capabilities does", async () => {
    const r = await call(
      `${running.url}/console/api/search?query=${encodeURIComponent("weather in Berlin")}`,
      {
        headers
      }
    )
    expect(r.body.tool).toBe("list_capabilities")
    expect(r.body.plugins[0].name).toBe("weather")
  })

  it("shows a thread's loadedPlugins after a turn, and 404s another user's session", async () => {
    const sessionId = await newSession(running.url, headers)
    const before = await call(`${running.url}/console/api/sessions/${sessionId}`, { headers })
    expect(before.body.loadedPlugins).toEqual([])
    const { events } = await stream(running.url, sessionId, headers, "What's the weather in Berlin?")
    await collect(events)
    const after = await call(`${running.url}/console/api/sessions/${sessionId}`, { headers })
    expect(after.body.loadedPlugins).toContain("weather")
    expect(after.body.cost.total).toBeGreaterThan(before.body.cost.total)
    const other = await user(running.app.oracleDid)
    const foreign = await call(`${running.url}/console/api/sessions/${sessionId}`, { headers: other.headers })
    expect(foreign.status).toBe(404)
  })

  it("is off away from loopback unless CONSOLE=true, and then 404s before auth", async () => {
    expect(isLoopback("127.0.0.1")).toBe(true)
    expect(isLoopback("127.8.0.1")).toBe(true)
    expect(isLoopback("::1")).toBe(true)
    expect(isLoopback("localhost")).toBe(true)
    expect(isLoopback("0.0.0.0")).toBe(false)
    expect(isLoopback("::")).toBe(false)
    expect(isLoopback("192.168.1.4")).toBe(false)
    expect(enabled(undefined, "0.0.0.0")).toBe(false)
    expect(enabled(true, "0.0.0.0")).toBe(true)
    expect(enabled(false, "127.0.0.1")).toBe(false)
    const off = await start({ env: { CONSOLE: "false" } })
    try {
      const page = await call(`${off.url}/console`)
      expect(page.status).toBe(404)
      const api = await call(`${off.url}/console/api/catalog`)
      expect(api.status).toBe(404)
      expect(api.body.message).toBe("Cannot GET /console/api/catalog")
    } finally {
      await off.stop()
    }
  })

  it("decides at listen: off on 0.0.0.0 unless CONSOLE=true", async () => {
    for (const [env, expected] of [
      [{}, 404],
      [{ CONSOLE: "true" }, 200]
    ] as const) {
      const dir = mkdtempSync(join(tmpdir(), "plugboard-console-any-"))
      const app = await createOracleApp({
        plugins: [weather],
        logger: quietLogger,
        env: { PLUGBOARD_DATA_DIR: dir, ...env }
      })
      try {
        const { port } = await app.listen(0, "0.0.0.0")
        expect((await call(`http://127.0.0.1:${port}/console`)).status, JSON.stringify(env)).toBe(expected)
      } finally {
        await app.close(2_000)
        rmSync(dir, { recursive: true, force: true })
      }
    }
  })

  it("refuses a token for another oracle like every private route", async () => {
    const signer = await generateSigner()
    const otherOracle = (await generateSigner()).did()
    const token = await mintInvocation({ issuer: signer, audience: otherOracle, ttlSeconds: 60 })
    const r = await call(`${running.url}/console/api/catalog`, {
      headers: { authorization: `Bearer ${token}`, "x-auth-type": "ucan" }
    })
    expect(r.status).toBe(401)
  })
})
