/**
 * A large catalog in the terminal: above 50 plugins inspect summarises (counts per tier and
 * category, warnings grouped by kind, every list capped with a line saying how to see all);
 * `--all` lists everything and `--json` is the full report. Long steps show progress on stderr
 * only when it is a terminal (docs/cli.md).
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Progress, runInspect, SUMMARY_THRESHOLD } from "../../src/inspect/index.js"
import { expectGolden, fixture, inspect, ROOT } from "./helpers.js"
import { InspectReport } from "./InspectJsonSchema.js"

const LARGE = fixture("large-warnings.ts")
const WEATHER = "examples/plugins/weather.ts"

describe("plugboard inspect: a large catalog", () => {
  it("summarises it: counts per tier and category, warnings grouped, lists capped (golden)", async () => {
    const run = await inspect(LARGE)
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    expect(run.stdout).toContain(`summarised above ${SUMMARY_THRESHOLD}, --all lists every one`)
    expect(run.stdout).toContain("…and 110 more (--all lists every one)")
    expect(run.stdout.split("\n").length).toBeLessThan(120)
    expectGolden("large-summary.txt", run.stdout)
  })

  it("--all lists every plugin and every warning", async () => {
    const json = Schema.decodeUnknownSync(InspectReport)(JSON.parse((await inspect(LARGE, "--json")).stdout))
    expect(json.plugins).toHaveLength(120)
    expect(json.warnings.length).toBeGreaterThan(SUMMARY_THRESHOLD)
    const run = await inspect(LARGE, "--all")
    expect(run.code).toBe(0)
    const lines = run.stdout.split("\n")
    for (const p of json.plugins) {
      expect(lines.some((l) => new RegExp(`^  ${p.name}\\s+${p.visibility}\\s`).test(l))).toBe(true)
    }
    for (const w of json.warnings) expect(lines).toContain(`  ${w}`)
    expect(run.stdout).not.toContain("more (--all lists every one)")
    expect(run.stdout).not.toContain("summarised above")
  })

  it("--help states the threshold", async () => {
    const run = await inspect("--help")
    expect(run.stdout).toContain(`A catalog of more than ${SUMMARY_THRESHOLD} plugins is summarised`)
    expect(run.stdout).toContain("--all lists everything")
  })

  it("leaves a catalog at or below the threshold listed in full", async () => {
    const run = await inspect(WEATHER)
    expect(run.stdout).toContain("  weather  on-demand   data")
    expect(run.stdout).not.toContain("summarised")
  })
})

/** A stream that records what is written to it. */
const recorder = (isTTY: boolean) => {
  const chunks: string[] = []
  return { chunks, stream: { isTTY, write: (s: string) => chunks.push(s) } }
}

describe("inspect's progress on stderr", () => {
  it("writes a status line rewritten in place to a terminal, throttled, and erases it", () => {
    const { chunks, stream } = recorder(true)
    let t = 0
    const p = Progress.forStream(stream, { intervalMs: 200, now: () => t })
    p.phase("loading x.ts…")
    p.step("evaluating examples", 1, 10_000, "queries") // within the interval of the phase: dropped
    t = 250
    p.step("evaluating examples", 1_200, 10_000, "queries")
    t = 300
    p.step("evaluating examples", 1_300, 10_000, "queries") // dropped
    p.clear()
    expect(chunks).toEqual([
      "\rloading x.ts…\u001b[K",
      "\revaluating examples 1,200/10,000 queries…\u001b[K",
      "\r\u001b[K"
    ])
  })

  it("writes nothing when the stream is not a terminal", () => {
    const { chunks, stream } = recorder(false)
    const p = Progress.forStream(stream, { intervalMs: 0 })
    p.phase("loading x.ts…")
    p.step("evaluating examples", 1, 2, "queries")
    p.clear()
    expect(chunks).toEqual([])
    expect(Progress.forStream({ write: () => true })).toBe(Progress.silent)
  })

  it("is told of every step of --eval, up to the last query", async () => {
    const phases: string[] = []
    const steps: Array<readonly [string, number, number]> = []
    let cleared = 0
    const code = await runInspect([LARGE, "--eval"], {
      stdout: { write: () => true },
      stderr: { write: () => true },
      cwd: ROOT,
      progress: {
        phase: (text) => phases.push(text),
        step: (label, done, total) => steps.push([label, done, total]),
        clear: () => cleared++
      }
    })
    expect(code).toBe(0)
    expect(phases).toEqual([
      `loading ${LARGE}…`,
      "building the catalog of 120 plugins…",
      // The eval ranks first, with the host's ranking (lexical here: no EMBEDDING_MODEL).
      "evaluating the manifests' examples (lexical)…",
      "loading the o200k tokenizer…",
      "counting tokens of 120 plugins…"
    ])
    // Every discoverable plugin has 2 examples; silent ones are not ranked.
    const total = (120 - 17) * 2
    expect(steps).toHaveLength(total)
    expect(steps.at(-1)).toEqual(["evaluating examples", total, total])
    expect(cleared).toBeGreaterThan(0)
  })

  it("runInspect draws it on a terminal stderr, erased before the report; nothing on a pipe", async () => {
    const tty = recorder(true)
    let stdout = ""
    expect(
      await runInspect([LARGE, "--eval"], {
        stdout: { write: (s: string) => (stdout += s) },
        stderr: tty.stream,
        cwd: ROOT
      })
    ).toBe(0)
    expect(tty.chunks[0]).toBe(`\rloading ${LARGE}…\u001b[K`)
    expect(tty.chunks.at(-1)).toBe("\r\u001b[K")
    expect(stdout).not.toContain("\r")

    const pipe = recorder(false)
    expect(
      await runInspect([LARGE, "--eval", "--json"], {
        stdout: { write: () => true },
        stderr: pipe.stream,
        cwd: ROOT
      })
    ).toBe(0)
    expect(pipe.chunks).toEqual([])
  })
})
