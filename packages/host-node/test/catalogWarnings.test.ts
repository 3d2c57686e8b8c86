/**
 * One list of catalog warnings (src/CatalogWarnings.ts) printed by every reader: a skill whose
 * guide is over 3,000 tokens (docs/plugins.md#operating-guides) is warned about in the server's
 * boot log (one warn line, at boot), in the console's catalog API, in `/health/plugins` and in
 * the report `plugboard inspect` builds, in the same words.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type Running, recordingLogger, start, user } from "./helpers.js"

const GUIDE_LINE = /^\[boot-warning\] Plugin 'handbook' operating guide is [\d,]+ tokens, above 3,000: /

describe("catalog warnings", () => {
  let running: Running
  let skills: string
  const log = recordingLogger()
  beforeAll(async () => {
    skills = mkdtempSync(join(tmpdir(), "plugboard-skills-"))
    mkdirSync(join(skills, "handbook"))
    writeFileSync(
      join(skills, "handbook", "SKILL.md"),
      [
        "---",
        "name: handbook",
        "description: House rules for answers. Use when an answer must follow the handbook.",
        "---",
        "",
        "Answer in plain words and cite the handbook section you rely on. ".repeat(400)
      ].join("\n")
    )
    running = await start({ skills, logger: log.logger })
  }, 60_000)
  afterAll(async () => {
    await running?.stop()
    rmSync(skills, { recursive: true, force: true })
  })

  it("issue 36 item 18: an oversized skill guide is warned about at boot, in the console API and in inspect's report", async () => {
    // The boot log: one warn line, logged before the server answered anything.
    const booted = log.records.filter((r) => r.level === "warn" && GUIDE_LINE.test(r.message))
    expect(booted).toHaveLength(1)
    const line = booted[0]!.message

    const { headers } = await user(running.app.oracleDid)
    const catalog = await call(`${running.url}/console/api/catalog`, { headers })
    expect(catalog.status).toBe(200)
    const handbook = catalog.body.plugins.find((p: { name: string }) => p.name === "handbook")
    expect(handbook.warnings).toEqual([line])

    // inspect's report (buildReport), as the console's Budget tab and /health/plugins serve it.
    const budget = await call(`${running.url}/console/api/budget`, { headers })
    expect(budget.body.warnings).toContain(line)
    const health = await call(`${running.url}/health/plugins`, { headers })
    expect(health.body.warnings).toContain(line)
  })
})
