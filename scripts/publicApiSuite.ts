/**
 * The `publicApi` test every package runs: every export of its entry points has a doc comment,
 * and docs/api/<package>.md (written by `pnpm api`) is what the code exports, so a change to the
 * surface shows up in that file's diff.
 */
import { readFileSync } from "node:fs"
import { beforeAll, describe, expect, it } from "vitest"
import { type ApiReport, apiReport, type PackageDir, reportPath } from "./api-report.js"

/** Declares the package's public-API tests. */
export const publicApiSuite = (pkg: PackageDir): void => {
  let report: ApiReport
  beforeAll(() => {
    report = apiReport(pkg)
  })

  describe(`@plugboard/${pkg} public API`, () => {
    it("documents every export", () => {
      expect(report.undocumented).toEqual([])
    })

    it(`matches docs/api/${pkg}.md (run pnpm api after changing an entry point)`, () => {
      expect(report.markdown).toBe(readFileSync(reportPath(pkg), "utf8"))
    })
  })
}
