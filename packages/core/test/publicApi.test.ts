/**
 * The package's public surface is deliberate: every export of its entry points has a doc
 * comment, and docs/api/core.md (the API reference, written by `pnpm api`) is what the code
 * exports. A change to the surface shows up in that file's diff.
 */
import { readFileSync } from "node:fs"
import { beforeAll, describe, expect, it } from "vitest"
import { type ApiReport, apiReport, reportPath } from "../../../scripts/api-report.js"

let report: ApiReport
beforeAll(() => {
  report = apiReport("core")
})

describe("@plugboard/core public API", () => {
  it("documents every export", () => {
    expect(report.undocumented).toEqual([])
  })

  it("matches docs/api/core.md (run pnpm api after changing an entry point)", () => {
    expect(report.markdown).toBe(readFileSync(reportPath("core"), "utf8"))
  })
})
