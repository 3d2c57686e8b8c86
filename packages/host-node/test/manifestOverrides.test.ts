/**
 * `MANIFEST_OVERRIDES` (docs/plugins.md#manifest-overrides): a JSON file or a TypeScript module of
 * per-plugin manifest fields, merged over the plugins' own at boot; a bad one stops boot with a
 * clear `[boot-error]`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { bootLines, call, newSession, start, user, weather } from "./helpers.js"

const dir = mkdtempSync(join(tmpdir(), "plugboard-overrides-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe("MANIFEST_OVERRIDES", () => {
  it("a JSON file: the catalog the server serves has the effective manifest", async () => {
    const path = file("o.json", JSON.stringify({ weather: { title: "Meteo", visibility: "always" } }))
    const running = await start({ plugins: [weather], env: { MANIFEST_OVERRIDES: path } })
    try {
      const entry = running.app.catalog.byName.get("weather")!
      expect(entry.manifest.title).toBe("Meteo")
      expect(entry.visibility).toBe("always")
      expect(entry.overrides?.map((c) => c.by)).toEqual([
        "manifestOverrides.weather",
        "manifestOverrides.weather"
      ])
      const u = await user(running.app.oracleDid)
      expect(typeof (await newSession(running.url, u.headers))).toBe("string")
      const health = await call(`${running.url}/health`)
      expect(health.status).toBe(200)
    } finally {
      await running.stop()
    }
  })

  it("a TypeScript module's default export", async () => {
    const path = file(
      "o.ts",
      `export default { weather: { summary: "Forecasts for trips." } satisfies Record<string, unknown> }\n`
    )
    const running = await start({ plugins: [weather], env: { MANIFEST_OVERRIDES: path } })
    try {
      expect(running.app.catalog.byName.get("weather")!.manifest.summary).toBe("Forecasts for trips.")
    } finally {
      await running.stop()
    }
  })

  it("bad overrides stop boot with clear errors", async () => {
    expect(
      await bootLines([weather], {
        MANIFEST_OVERRIDES: file("bad.json", `{"weather": {"visibility": "sometimes"}}`)
      })
    ).toEqual(["[boot-error] manifestOverrides.weather.visibility must be one of always, on-demand, silent."])
    expect(
      await bootLines([weather], { MANIFEST_OVERRIDES: file("typo.json", `{"wether": {"title": "W"}}`) })
    ).toEqual(["[boot-error] manifestOverrides.wether names no plugin of the catalog (plugins: weather)."])
    const notJson = file("nj.json", "{")
    const lines = await bootLines([weather], { MANIFEST_OVERRIDES: notJson })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      new RegExp(
        `^\\[boot-error\\] Manifest overrides \\(${notJson.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\\): is not JSON`
      )
    )
    const missing = await bootLines([weather], { MANIFEST_OVERRIDES: join(dir, "absent.json") })
    expect(missing[0]).toContain("cannot be read")
    // Validated like a manifest: the merged manifest must still be one.
    const empty = await bootLines([weather], {
      MANIFEST_OVERRIDES: file("empty.json", `{"weather": {"summary": ""}}`)
    })
    expect(empty.some((l) => l.startsWith("[boot-error] Plugin 'weather'") && l.includes("summary"))).toBe(
      true
    )
  })
})
