/**
 * Routing quality on the two real catalogs: the examples' catalog (leave-one-out over its
 * manifests' examples) and the MetaTool benchmark (199 real ChatGPT plugins, 2,089 labelled
 * dev queries, ../shared/benchmarks/metatool). Skipped only when those files are absent.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { fixture, inspect, ROOT } from "./helpers.js"
import { InspectReport } from "./InspectJsonSchema.js"

const decodeReport = (stdout: string) =>
  Schema.decodeUnknownSync(InspectReport, { onExcessProperty: "error" })(JSON.parse(stdout))

const EXAMPLES = join(ROOT, "examples", "catalog", "index.ts")
const METATOOL = join(ROOT, "examples", "metatool", "index.ts")
const QUERIES = "../shared/benchmarks/metatool/queries-dev.jsonl"
const hasMetaTool = existsSync(METATOOL) && existsSync(join(ROOT, QUERIES))

describe("inspect --eval on the examples' catalog (the default module)", () => {
  it.skipIf(!existsSync(EXAMPLES))(
    "reaches recall@5 >= 0.9 over its manifests' examples, left out one at a time",
    async () => {
      const run = await inspect("--eval", "--json")
      expect(run.stderr).toBe("")
      expect(run.code).toBe(0)
      const report = decodeReport(run.stdout)
      expect(report.module).toBe("examples/catalog/index.ts")
      const ex = report.eval!.examples
      expect(ex.queries).toBeGreaterThanOrEqual(50)
      expect(ex.recallAtK).toBeGreaterThanOrEqual(0.9)
      console.log(
        `examples' catalog: ${report.plugins.length} plugins, ${ex.queries} examples, recall@1 ${ex.recallAt1.toFixed(3)}, recall@5 ${ex.recallAtK.toFixed(3)}, MRR ${ex.mrr.toFixed(3)}`
      )
    }
  )
})

describe("inspect --eval --queries on the MetaTool benchmark", () => {
  it.skipIf(!hasMetaTool)(
    "beats plain BM25 (recall@5 0.548) by at least 10 points: recall@5 >= 0.648",
    async () => {
      const run = await inspect("examples/metatool", "--eval", "--queries", QUERIES, "--json")
      expect(run.code).toBe(0)
      const q = decodeReport(run.stdout).eval!.queries!
      // Every labelled query is scored: each label resolves to one of the 199 plugins.
      expect(q.queries).toBe(2089)
      expect(q.unknownLabels).toEqual([])
      expect(q.recallAtK).toBeGreaterThanOrEqual(0.648)
      console.log(
        `MetaTool dev: ${q.queries} queries, recall@1 ${q.recallAt1.toFixed(3)}, recall@5 ${q.recallAtK.toFixed(3)}, MRR ${q.mrr.toFixed(3)}`
      )
    }
  )
})

describe("inspect --queries with a module's label aliases", () => {
  it("scores a label through the module's aliases and reports an alias to no plugin", async () => {
    const run = await inspect(fixture("aliased.ts"), "--json", "--queries", fixture("queries-aliased.jsonl"))
    expect(run.code).toBe(0)
    const q = decodeReport(run.stdout).eval!.queries!
    expect(q.queries).toBe(1)
    expect(q.normalizedLabels).toEqual([{ label: "WX", plugin: "weather", via: "alias" }])
    expect(q.unknownLabels).toEqual([{ plugin: "Gone", reason: "unknown", lines: [2] }])
    const text = await inspect(fixture("aliased.ts"), "--queries", fixture("queries-aliased.jsonl"))
    expect(text.stdout).toContain("1 label resolved by the module's aliases")
  })

  it("refuses aliases that are not strings (exit 2)", async () => {
    const run = await inspect(fixture("bad-aliases.ts"))
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("exports 'aliases', but it is not a map of query labels to plugin names")
  })
})
