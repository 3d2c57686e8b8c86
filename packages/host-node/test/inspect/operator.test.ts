/**
 * `plugboard inspect` and the operator controls: the effective manifests and what each override
 * changed (`--overrides`, default `MANIFEST_OVERRIDES`), the guides' costs with the warning above
 * 3,000 tokens, and what plugins and tools require.
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { fixture, inspect } from "./helpers.js"
import { InspectOutput } from "./InspectJsonSchema.js"

const run = (...args: ReadonlyArray<string>) => inspect(fixture("operator.ts"), ...args)

describe("inspect with manifest overrides", () => {
  it("prints the effective manifest and every change, with where it was written", async () => {
    const r = await run("--overrides", fixture("operator-overrides.json"), "--tokenizer", "heuristic")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("Manifest overrides: 1 plugin")
    expect(r.stdout).toContain('title: "Audit" → "Audit trail"  (manifestOverrides.audit)')
    expect(r.stdout).toContain('tags: (unset) → ["audit","admin"]  (manifestOverrides.audit)')
    expect(r.stdout).toMatch(/effective manifest:\n\s+\{\n\s+"title": "Audit trail",/)
  })

  it("--json carries each plugin's effective manifest and overrides", async () => {
    const r = await run(
      "--overrides",
      fixture("operator-overrides.json"),
      "--tokenizer",
      "heuristic",
      "--json"
    )
    const report = JSON.parse(r.stdout)
    Schema.decodeUnknownSync(InspectOutput)(report)
    const audit = report.plugins.find((p: { name: string }) => p.name === "audit")
    expect(audit.manifest.title).toBe("Audit trail")
    expect(audit.overrides).toEqual([
      { field: "title", from: "Audit", to: "Audit trail", by: "manifestOverrides.audit" },
      { field: "tags", from: null, to: ["audit", "admin"], by: "manifestOverrides.audit" }
    ])
    expect(audit.requires).toEqual([{ can: "admin/read", with: "ixo:oracle" }])
    expect(audit.toolRequires).toEqual([
      { tool: "audit_purge", requires: [{ can: "admin/purge", with: "ixo:oracle" }] }
    ])
  })

  it("a bad override is a boot error (exit 2), like serve's", async () => {
    const r = await run("--overrides", fixture("operator-overrides-bad.json"))
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("[boot-error] manifestOverrides.audit.tags must be a list of strings.")
  })
})

describe("inspect and operating guides", () => {
  it("prints each guide's cost and where it is paid, and warns above 3,000 tokens", async () => {
    const r = await run("--tokenizer", "o200k")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("Operating guides: 2 guides")
    expect(r.stdout).toMatch(
      /handbook\s+[\d,]+\s+in the system prompt \(always-tier\), every call: cut to [\d,]+\s+above 3,000 tokens/
    )
    expect(r.stdout).toMatch(/audit\s+\d+\s+in load_capability's answer/)
    expect(r.stdout).toMatch(
      /\[boot-warning\] Plugin 'handbook' operating guide is [\d,]+ tokens, above 3,000/
    )
  })

  it("counts an always-tier guide in every turn, an on-demand one in its load", async () => {
    const r = await run("--tokenizer", "o200k", "--json")
    const report = JSON.parse(r.stdout)
    const handbook = report.guides.find((g: { name: string }) => g.name === "handbook")
    const audit = report.guides.find((g: { name: string }) => g.name === "audit")
    expect(handbook).toMatchObject({ visibility: "always", paid: "prompt", cut: true, overWarning: true })
    expect(handbook.tokens).toBeGreaterThan(3000)
    // The cut guide is in the nothing-loaded turn's plugin prompts.
    expect(report.nothingLoaded.pluginPrompts).toBeGreaterThanOrEqual(handbook.paidTokens)
    expect(report.nothingLoaded.pluginPrompts).toBeLessThan(handbook.tokens)
    const load = report.perPlugin.find((p: { name: string }) => p.name === "audit")
    expect(load.guide).toBe(audit.tokens)
    expect(load.cost).toBeGreaterThan(audit.tokens)
  })

  it("prints what plugins and tools require", async () => {
    const r = await run("--tokenizer", "heuristic")
    expect(r.stdout).toContain("Requires (UCAN capabilities): 1 plugin")
    expect(r.stdout).toContain("audit: admin/read on ixo:oracle")
    expect(r.stdout).toContain("audit / audit_purge: admin/purge on ixo:oracle")
  })
})
