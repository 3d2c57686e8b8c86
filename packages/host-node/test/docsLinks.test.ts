/**
 * Every relative link of README.md and docs/ resolves: to a file that exists, and its `#anchor` to
 * a heading of that file, and every page or README section a source comment cites exists
 * (scripts/docs-links.ts).
 */

import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { anchorsOf, brokenCitations, brokenLinks, ROOT, slugOf } from "../../../scripts/docs-links.js"

describe("docs links", () => {
  it("anchors are GitHub's: lower case, punctuation dropped, repeats numbered", () => {
    expect(slugOf("Choosing a deployment")).toBe("choosing-a-deployment")
    expect(slugOf("`load_capability` and k=5?")).toBe("load_capability-and-k5")
    expect([...anchorsOf("# A\n## A\n```\n# not a heading\n```\n### B, c.")]).toEqual(["a", "a-1", "b-c"])
  })

  it("every relative link of README.md and docs/ points at a file and a heading that exist", () => {
    const broken = brokenLinks().map((b) => `${b.file}:${b.line} ${b.target} (${b.why})`)
    expect(broken).toEqual([])
  })

  it("every docs page or README section a comment cites exists", () => {
    const broken = brokenCitations().map((b) => `${b.file}:${b.line} ${b.target} (${b.why})`)
    expect(broken).toEqual([])
  })

  it("README is a front door: at most 250 lines", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(250)
  })
})
