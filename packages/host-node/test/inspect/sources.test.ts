/**
 * `plugboard inspect --mcp` and `--skills`: MCP servers and skills reported like any plugin (their
 * cost when loaded, a skill's guide counted, an unreachable server listed as unavailable), the
 * cache sparing a second run any spawn, and a malformed skill a boot error naming its file.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { countingEverything } from "../mcpHelpers.js"
import { inspect } from "./helpers.js"
import { InspectReport } from "./InspectJsonSchema.js"

const WEATHER = "examples/plugins/weather.ts"
const decodeReport = (stdout: string) =>
  Schema.decodeUnknownSync(InspectReport, { onExcessProperty: "error" })(JSON.parse(stdout))

describe("inspect --skills", () => {
  it("reports each skill as an on-demand plugin whose guide counts in its cost", async () => {
    const run = await inspect(WEATHER, "--skills", "examples/skills", "--json")
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    const report = decodeReport(run.stdout)
    const skills = report.plugins.filter((p) => p.source === "skill")
    expect(skills.map((p) => p.name)).toEqual(["csv-cleanup", "release-notes"])
    for (const p of skills) expect(p.visibility).toBe("on-demand")
    for (const name of ["csv-cleanup", "release-notes"]) {
      const cost = report.perPlugin.find((p) => p.name === name)!
      expect(cost.guide).toBeGreaterThan(50)
      expect(cost.cost).toBeGreaterThan(cost.guide)
    }
    // Loading costs tokens; a turn with nothing loaded pays nothing for the skills.
    const without = decodeReport((await inspect(WEATHER, "--json")).stdout)
    expect(report.nothingLoaded).toEqual(without.nothingLoaded)
  })

  it("prints the skills with their guide in the terminal view", async () => {
    const run = await inspect(WEATHER, "--skills", "examples/skills", "--tokenizer", "heuristic")
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/release-notes \(skill\)/)
    expect(run.stdout).toMatch(/release-notes\s+1 tool, guide \d+/)
  })

  it("a malformed SKILL.md is a boot error naming the file; nothing is reported", async () => {
    const run = await inspect(WEATHER, "--skills", "packages/adapters/skills/test/fixtures", "--json")
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/\[boot-error\] .*broken-yaml[/\\]SKILL\.md/)
    expect(JSON.parse(run.stdout)).toMatchObject({ status: "boot-error", exitCode: 2 })
  })
})

describe("inspect --mcp", () => {
  let dir: string
  let config: string
  let starts: () => number
  const before = process.env.MCP_CACHE_DIR

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "plugboard-inspect-mcp-"))
    const counting = countingEverything(dir)
    starts = counting.starts
    config = join(dir, "mcp.json")
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          everything: { command: process.execPath, args: [counting.script], manifest: { category: "data" } },
          gone: { command: "plugboard-no-such-mcp-server", timeoutMs: 5000 }
        }
      })
    )
    process.env.MCP_CACHE_DIR = join(dir, "cache")
  })
  afterAll(() => {
    if (before === undefined) delete process.env.MCP_CACHE_DIR
    else process.env.MCP_CACHE_DIR = before
    rmSync(dir, { recursive: true, force: true })
  })

  it("reports a server as a plugin with its cost when loaded, and one it cannot reach as unavailable", async () => {
    const run = await inspect(WEATHER, "--mcp", config, "--json")
    expect(run.code).toBe(0)
    const report = decodeReport(run.stdout)
    const server = report.plugins.find((p) => p.name === "everything")!
    expect(server).toMatchObject({
      source: "mcp",
      unavailable: null,
      // server-everything 2026.8.31 is on the SDK v1: it answers server/discover "method not found".
      protocolVersion: "2025-11-25",
      category: "data",
      visibility: "on-demand"
    })
    expect(server.tools).toBeGreaterThan(5)
    expect(report.perPlugin.find((p) => p.name === "everything")!.cost).toBeGreaterThan(500)
    const gone = report.plugins.find((p) => p.name === "gone")!
    expect(gone.source).toBe("mcp")
    expect(gone.unavailable).toMatch(/gone/)
    expect(gone.protocolVersion).toBeNull()
    expect(report.warnings.some((w) => w.startsWith("[boot-warning]") && w.includes("gone"))).toBe(true)
    expect(starts()).toBe(1)
  }, 60_000)

  it("a second run reads the cached tool list and spawns nothing; --refresh asks the server again", async () => {
    const cached = decodeReport((await inspect(WEATHER, "--mcp", config, "--json")).stdout)
    expect(starts()).toBe(1)
    expect(cached.plugins.find((p) => p.name === "everything")!.tools).toBeGreaterThan(5)
    // The revision comes from the cache file too.
    expect(cached.plugins.find((p) => p.name === "everything")!.protocolVersion).toBe("2025-11-25")
    await inspect(WEATHER, "--mcp", config, "--json", "--refresh")
    expect(starts()).toBe(2)
  }, 60_000)

  it("issue 36 item 19: tool names two servers share are listed, with what each is offered as", async () => {
    const twice = join(dir, "twice.json")
    const everything = JSON.parse(readFileSync(config, "utf8")).mcpServers.everything
    writeFileSync(twice, JSON.stringify({ mcpServers: { everything, "everything-copy": everything } }))
    const run = await inspect(WEATHER, "--mcp", twice)
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(
      /\[boot-warning\] 2 plugins \('everything', 'everything-copy'\) share \d+ tool names echo, .*: each is offered as <plugin>__<tool> \(e\.g\. everything__echo\)\./
    )
  }, 60_000)

  it("a malformed config is a boot error naming the key", async () => {
    const bad = join(dir, "bad.json")
    writeFileSync(bad, JSON.stringify({ mcpServers: { Bad_Name: { command: 3 } } }))
    const run = await inspect(WEATHER, "--mcp", bad)
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/\[boot-error\] .*mcpServers\.Bad_Name/)
  })
})
