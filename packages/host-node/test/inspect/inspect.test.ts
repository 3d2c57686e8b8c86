import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Catalog, CodeMode, LoadedPlugins, Offer, TokenBudget } from "@plugboard/core"
import { findBwrap } from "@plugboard/skills"
import { loadTiktokenCounter } from "@plugboard/tokenizers"
import { JSONSchema, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { weather } from "../../../../examples/plugins/weather.js"
import { runInspect } from "../../src/inspect/index.js"
import { expectGolden, fixture, inspect, ROOT } from "./helpers.js"
import { InspectFailure, InspectOutput, InspectReport } from "./InspectJsonSchema.js"

const WEATHER = "examples/plugins/weather.ts"
const OVER = fixture("over-budget.ts")

/** Decodes `--json` output against the documented schema; an extra or missing field fails. */
const decode = (stdout: string) =>
  Schema.decodeUnknownSync(InspectOutput, { onExcessProperty: "error" })(JSON.parse(stdout))
const decodeReport = (stdout: string) =>
  Schema.decodeUnknownSync(InspectReport, { onExcessProperty: "error" })(JSON.parse(stdout))

describe("plugboard inspect: the reference weather plugin", () => {
  it("prints plugins, validation, the Tier-1 block and the costs (golden, o200k)", async () => {
    const run = await inspect(WEATHER)
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    expectGolden("weather.txt", run.stdout)
  })

  it("evaluates routing over its examples and a labelled queries file (golden)", async () => {
    const run = await inspect(WEATHER, "--eval", "--queries", fixture("queries-weather.jsonl"))
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    expect(run.stdout).toContain("left out: 1 query labelled 'restaurants' (no such plugin; line 5)")
    expectGolden("weather-eval.txt", run.stdout)
  })

  it("prints JSON that the documented schema accepts (golden)", async () => {
    const run = await inspect(WEATHER, "--json", "--eval", "--queries", fixture("queries-weather.jsonl"))
    expect(run.code).toBe(0)
    const report = decodeReport(run.stdout)
    expect(report.schemaVersion).toBe(1)
    expect(report.plugins.map((p) => p.name)).toEqual(["weather"])
    expect(report.eval?.queries?.queries).toBe(3)
    expect(report.eval?.queries?.unknownLabels).toEqual([
      { plugin: "restaurants", reason: "unknown", lines: [5] }
    ])
    expect(report.eval?.queries?.normalizedLabels).toEqual([
      { label: "Weather", plugin: "weather", via: "normalized" }
    ])
    expectGolden("weather.json", run.stdout)
  })

  it("counts with the exact tokenizer: the JSON totals are the o200k counts of the parts", async () => {
    const o200k = await loadTiktokenCounter("o200k")
    const report = decodeReport((await inspect(WEATHER, "--json")).stdout)
    expect(report.tokenizer).toBe(o200k.name)
    expect(report.tier1.tokens).toBe(o200k.count(report.tier1.text))
    const n = report.nothingLoaded
    expect(n.total).toBe(n.basePrompt + n.tier1 + n.pluginPrompts + n.metaTools + n.toolSchemas)
    expect(report.worstCase.total).toBe(n.total + report.perPlugin[0]!.cost)
    expect(report.allBound.saving).toBe(report.allBound.total - n.total)
  })

  it("accepts the other tokenizers and a base prompt file", async () => {
    const heuristic = decodeReport((await inspect(WEATHER, "--json", "--tokenizer", "heuristic")).stdout)
    const cl100k = decodeReport((await inspect(WEATHER, "--json", "--tokenizer=cl100k")).stdout)
    expect(heuristic.tokenizer).toBe("heuristic")
    expect(cl100k.tokenizer).toBe("tiktoken/cl100k_base")
    const withBase = decodeReport(
      (await inspect(WEATHER, "--json", "--base-prompt", fixture("base-prompt.txt"))).stdout
    )
    const o200k = await loadTiktokenCounter("o200k")
    const text = readFileSync(join(ROOT, fixture("base-prompt.txt")), "utf8")
    expect(withBase.nothingLoaded.basePrompt).toBe(o200k.count(text))
    expect(withBase.nothingLoaded.basePrompt).toBeGreaterThan(0)
  })

  it("takes a module whose default export is a built catalog", async () => {
    const run = await inspect(fixture("default-catalog.ts"), "--json")
    expect(run.code).toBe(0)
    expect(decodeReport(run.stdout).plugins.map((p) => p.name)).toEqual(["weather"])
  })
})

describe("plugboard inspect: hard manifest errors", () => {
  it("exits 2 with every [boot-error] line (golden)", async () => {
    const run = await inspect(fixture("hard-errors.ts"))
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain(
      "[boot-error] Plugin 'weather' manifest example references unknown tool 'foo'."
    )
    expectGolden("hard-errors.stderr.txt", run.stderr)
  })

  it("with --json, prints a boot-error document the schema accepts", async () => {
    const run = await inspect(fixture("hard-errors.ts"), "--json")
    expect(run.code).toBe(2)
    const out = Schema.decodeUnknownSync(InspectFailure, { onExcessProperty: "error" })(
      JSON.parse(run.stdout)
    )
    expect(out.status).toBe("boot-error")
    expect(out.errors).toHaveLength(4)
    expect(out.errors.every((e) => e.startsWith("[boot-error] "))).toBe(true)
  })
})

describe("plugboard inspect: budgets", () => {
  it("exits 1 when the turn with nothing loaded is over budget, and shows what demoting saves (golden)", async () => {
    const json = decodeReport((await inspect(OVER, "--json")).stdout)
    const budget = json.nothingLoaded.total - 1
    const run = await inspect(OVER, "--budget", String(budget))
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(
      `nothing loaded: ${json.nothingLoaded.total.toLocaleString("en-US")} exceeds it by 1`
    )
    expect(run.stdout).toMatch(/demote crm to fit/)
    expectGolden("over-budget.txt", run.stdout)
  })

  it("exits 0 at a budget the turn fits, and 1 for the same budget with a --loaded scenario that does not (golden)", async () => {
    const base = decodeReport((await inspect(OVER, "--json")).stdout)
    const reports = base.perPlugin.find((p) => p.name === "reports")!
    // Room for the nothing-loaded turn plus dice, but not plus reports.
    const budget = base.nothingLoaded.total + Math.floor(reports.cost / 2)
    const fits = await inspect(OVER, "--budget", String(budget))
    expect(fits.code).toBe(0)
    expect(fits.stdout).toContain(" fits")

    const loaded = await inspect(OVER, "--budget", String(budget), "--loaded", "reports,dice")
    expect(loaded.code).toBe(1)
    expectGolden("over-budget-loaded.txt", loaded.stdout)

    const json = decodeReport(
      (await inspect(OVER, "--json", "--budget", String(budget), "--loaded", "reports,dice")).stdout
    )
    expect(json.status).toBe("over-budget")
    expect(json.exitCode).toBe(1)
    expect(json.budget?.nothingLoaded.exceeds).toBe(false)
    expect(json.budget?.loaded?.exceeds).toBe(true)
    expect(json.budget?.loaded?.cost.total).toBe(
      base.nothingLoaded.total + base.perPlugin.reduce((s, p) => s + p.cost, 0)
    )
    // Demoting both always-tier plugins is what would bring the loaded scenario back within budget.
    expect(json.budget?.demote.length).toBeGreaterThan(0)
    expect(json.budget?.totalAfterDemotion).toBeLessThan(json.budget!.loaded!.cost.total)
  })

  it("refuses a --loaded plugin the catalog does not have, suggesting close names", async () => {
    const run = await inspect(OVER, "--budget", "100000", "--loaded", "report")
    expect(run.code).toBe(64)
    expect(run.stderr).toContain("--loaded names 'report', which is not a plugin of")
    expect(run.stderr).toContain("did you mean 'reports'")
  })

  it("lists the top N on-demand plugins by cost, or all of them", async () => {
    const top1 = await inspect(OVER, "--top", "1")
    expect(top1.stdout).toContain("(top 1 of 2; --all lists every one)")
    expect(top1.stdout).not.toMatch(/^ {2}dice +1 tool +\+\d+$/m)
    const all = await inspect(OVER, "--top", "1", "--all")
    expect(all.stdout).toContain("(all 2)")
    expect(all.stdout).toMatch(/^ {2}dice +1 tool +\+\d+$/m)
  })
})

describe("plugboard inspect: --min-recall", () => {
  it("exits 1 when a set's recall@5 is below it, 0 when it is reached", async () => {
    // One of the three labelled weather queries is labelled with a plugin that never ranks it.
    const queries = fixture("queries-mislabelled.jsonl")
    const below = await inspect(OVER, "--queries", queries, "--min-recall", "0.9", "--json")
    const report = decodeReport(below.stdout)
    expect(report.eval?.queries?.recallAtK).toBeCloseTo(2 / 3, 12)
    expect(below.code).toBe(1)
    expect(report).toMatchObject({ status: "below-min-recall", exitCode: 1 })
    expect(report.eval).toMatchObject({ minRecall: 0.9, belowMinRecall: true })
    const text = await inspect(OVER, "--queries", queries, "--min-recall", "0.9")
    expect(text.stdout).toContain("Routing is below --min-recall 0.9")
    const reached = await inspect(OVER, "--queries", queries, "--min-recall=0.6")
    expect(reached.code).toBe(0)
    expect(reached.stdout).toContain("Routing reaches --min-recall 0.6.")
    // Over budget and below recall: over-budget wins the status, both exit 1.
    const both = decodeReport(
      (await inspect(OVER, "--json", "--budget", "1", "--min-recall", "1", "--queries", queries)).stdout
    )
    expect(both.status).toBe("over-budget")
  })
})

describe("plugboard inspect: bad modules, files and options", () => {
  it.each([
    [fixture("no-plugins.ts"), "exports no plugins", "it exports 'answer', 'greeting'"],
    [fixture("throws.ts"), "failed to load: plugin registry unavailable", ""],
    [fixture("missing"), "Cannot find module", `'${fixture("missing")}.ts'`]
  ])("exits 2 for %s with a clear message", async (module, message, detail) => {
    const run = await inspect(module)
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain(message)
    expect(run.stderr).toContain(detail)
    const json = await inspect(module, "--json")
    expect(decode(json.stdout)).toMatchObject({ status: "error", exitCode: 2 })
  })

  it("a malformed queries line stops with its line number (65)", async () => {
    const badJson = await inspect(WEATHER, "--queries", fixture("queries-bad-json.jsonl"))
    expect(badJson.code).toBe(65)
    expect(badJson.stderr).toContain(`${fixture("queries-bad-json.jsonl")}:3: not valid JSON`)
    const badField = await inspect(WEATHER, "--queries", fixture("queries-bad-field.jsonl"))
    expect(badField.code).toBe(65)
    expect(badField.stderr).toContain(
      `${fixture("queries-bad-field.jsonl")}:2: field 'plugin' must be a non-empty string (got 7).`
    )
    expect(badField.stdout).toBe("")
  })

  it("an unreadable input file exits 66", async () => {
    const q = await inspect(WEATHER, "--queries", "nope.jsonl")
    expect(q.code).toBe(66)
    expect(q.stderr).toContain("Cannot read queries file 'nope.jsonl': no such file.")
    const b = await inspect(WEATHER, "--base-prompt", "nope.txt", "--json")
    expect(b.code).toBe(66)
    expect(decode(b.stdout)).toMatchObject({ status: "error", exitCode: 66 })
  })

  it.each([
    [["--frobnicate"], "Unknown option '--frobnicate'"],
    [["--tokenizer", "gpt2"], "--tokenizer must be one of o200k, cl100k, heuristic; got 'gpt2'"],
    [["--budget", "lots"], "--budget expects a whole number"],
    [["--budget", "-5"], "--budget expects a whole number of tokens or plugins, got '-5'"],
    [["--k"], "--k needs a value"],
    [["--loaded", "weather"], "give --budget N too"],
    [["--json=yes"], "--json takes no value"],
    [["a.ts", "b.ts"], "inspect takes one module, got 'a.ts' and 'b.ts'"],
    [["--budget", "1", "--budget", "2"], "--budget is given more than once"],
    [["--min-recall", "1.5"], "--min-recall expects a share between 0 and 1, got '1.5'"],
    [["--min-recall", "90%"], "--min-recall expects a share between 0 and 1"]
  ])("usage error %j exits 64", async (argv, message) => {
    const run = await inspect(...argv)
    expect(run.code).toBe(64)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain(message)
  })

  it("--help prints the usage and exits 0", async () => {
    const run = await inspect("--help")
    expect(run.code).toBe(0)
    expect(run.stdout).toContain("Usage: plugboard inspect [module] [options]")
    expect(run.stdout).toContain("Exit codes:")
  })
})

describe("plugboard inspect: colour", () => {
  const run = async (isTTY: boolean) => {
    let stdout = ""
    const code = await runInspect([OVER, "--budget", "1"], {
      stdout: { write: (t: string) => (stdout += t), isTTY },
      stderr: { write: () => true },
      cwd: ROOT
    })
    return { code, stdout }
  }

  it("colours headings and budget verdicts on a terminal, unless NO_COLOR is set, and never in a pipe", async () => {
    const saved = process.env.NO_COLOR
    try {
      delete process.env.NO_COLOR
      const tty = await run(true)
      expect(tty.code).toBe(1)
      expect(tty.stdout).toContain("\u001b[31m")
      expect((await run(false)).stdout).not.toContain("\u001b[")
      process.env.NO_COLOR = "1"
      expect((await run(true)).stdout).not.toContain("\u001b[")
    } finally {
      if (saved === undefined) delete process.env.NO_COLOR
      else process.env.NO_COLOR = saved
    }
  })
})

describe("docs/inspect.schema.json", () => {
  it("is the JSON Schema of the validator these tests use", async () => {
    const generated = `${JSON.stringify(JSONSchema.make(InspectOutput), null, 2)}\n`
    const file = join(ROOT, "docs", "inspect.schema.json")
    if (process.env.UPDATE_GOLDEN === "1") {
      const { writeFileSync } = await import("node:fs")
      writeFileSync(file, generated)
    }
    expect(readFileSync(file, "utf8")).toBe(generated)
  })
})

describe("soft-rule warnings", () => {
  it("are printed with the report, and the catalog still passes", async () => {
    const run = await inspect(fixture("warnings.ts"))
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/Manifest validation: no errors, 2 warnings/)
    expect(run.stdout).toMatch(/\[boot-warning\] .*shouty.*120/)
    expect(run.stdout).toMatch(/\[boot-warning\] .*shouty.*'Loud'/)
  })
})

describe("plugboard inspect: tool inputs", () => {
  it("issue 36 item 14: a non-object input and a field with no JSON Schema form are [boot-error] lines naming plugin, tool and field", async () => {
    const run = await inspect(fixture("tool-inputs.ts"))
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain(
      "[boot-error] Plugin 'reminders' tool 'add_reminder' input is not an object schema: the schema's type must be 'object' (the arguments are an object), and its JSON Schema has type 'string'; use Schema.Struct({ ... })"
    )
    expect(run.stderr).toContain(
      "[boot-error] Plugin 'reminders' tool 'snooze' input schema cannot be turned into JSON Schema: field 'until' is DateFromSelf, which has no JSON Schema form (Missing annotation): use Schema.Date (an ISO 8601 string)"
    )
  })
})

describe("plugboard inspect: code mode (CODE_MODE, docs/code-mode.md)", () => {
  const withCodeMode = async <A>(value: string, body: () => Promise<A>): Promise<A> => {
    const saved = process.env.CODE_MODE
    process.env.CODE_MODE = value
    try {
      return await body()
    } finally {
      if (saved === undefined) delete process.env.CODE_MODE
      else process.env.CODE_MODE = saved
    }
  }

  it("counts run_code, with its API over the offered tools, in a turn and in each load", async () => {
    const o200k = await loadTiktokenCounter("o200k")
    const args = [WEATHER, "--json", "--budget", "100000", "--loaded", "weather"]
    const off = decodeReport((await inspect(...args)).stdout)
    const on = decodeReport((await withCodeMode("on", () => inspect(...args))).stdout)
    expect([off.codeMode, on.codeMode]).toEqual(["off", "on"])
    // Nothing loaded, weather's tools are not offered: there is nothing for a program to call.
    expect(on.nothingLoaded).toEqual(off.nothingLoaded)
    const catalog = Catalog.unsafeMake([weather])
    const offered = Offer.offer(catalog, LoadedPlugins.fromUnknown(["weather"]))
    const [runCode] = CodeMode.offer("on", offered)
    expect(on.budget?.loaded?.cost.total).toBe(
      off.budget!.loaded!.cost.total + TokenBudget.toolCost(o200k, runCode!)
    )
    const api = CodeMode.api(CodeMode.callables(offered))
    expect(on.perPlugin[0]!.cost).toBe(off.perPlugin[0]!.cost + o200k.count(api))
    const text = await withCodeMode("on", () => inspect(WEATHER))
    expect(text.stdout).toContain("run_code (CODE_MODE=on: its API over the offered tools)")
  })

  it("reads CODE_MODE in any case, as the server does", async () => {
    const report = decodeReport((await withCodeMode("ON", () => inspect(WEATHER, "--json"))).stdout)
    expect(report.codeMode).toBe("on")
  })

  it("refuses a CODE_MODE that is neither off nor on, naming it", async () => {
    const run = await withCodeMode("yes", () => inspect(WEATHER))
    expect(run.code).toBe(2)
    expect(run.stdout + run.stderr).toContain('CODE_MODE must be one of off, on, got "yes".')
  })
})

describe("plugboard inspect: skills whose scripts run (SKILLS_RUN, docs/skills-that-run.md)", () => {
  const SKILLS = join(ROOT, "packages/adapters/skills/test/vendored")
  const withEnv = async <A>(env: Record<string, string>, body: () => Promise<A>): Promise<A> => {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]))
    Object.assign(process.env, env)
    try {
      return await body()
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
    }
  }

  it("says none are allowed by default", async () => {
    const report = decodeReport((await inspect(WEATHER, "--json", "--skills", SKILLS)).stdout)
    expect(report.skillsRun).toEqual({ allowed: "none", runnable: [] })
  })

  it("says which skills may run; none, with the warning, where the sandbox cannot start", async () => {
    const on = await withEnv({ SKILLS_RUN: "skill-creator,pdf" }, () =>
      inspect(WEATHER, "--json", "--skills", SKILLS)
    )
    const report = decodeReport(on.stdout)
    expect(report.skillsRun.allowed).toEqual(["skill-creator", "pdf"])
    // Where bubblewrap works (CI installs it), skill-creator got run_script; pdf is not here.
    if (findBwrap() !== undefined) {
      expect(report.skillsRun.runnable).toEqual(["skill-creator"])
      expect(report.warnings).toContain(
        "[boot-warning] SKILLS_RUN names the skill 'pdf', which no skills folder declares."
      )
    } else expect(process.env.CI).not.toBe("true")
    const closed = decodeReport(
      (
        await withEnv({ SKILLS_RUN: "all", SKILLS_RUN_BWRAP: "/nonexistent/bwrap" }, () =>
          inspect(WEATHER, "--json", "--skills", SKILLS)
        )
      ).stdout
    )
    expect(closed.skillsRun).toEqual({ allowed: "all", runnable: [] })
    expect(closed.warnings.some((w) => w.includes("no skill script can run on this host"))).toBe(true)
    const text = await withEnv({ SKILLS_RUN: "all", SKILLS_RUN_BWRAP: "/nonexistent/bwrap" }, () =>
      inspect(WEATHER, "--skills", SKILLS)
    )
    expect(text.stdout).toContain("Skills that may run their scripts (SKILLS_RUN=all): 0")
  })

  it("refuses a SKILLS_RUN that names no skill, quoting it", async () => {
    const run = await withEnv({ SKILLS_RUN: "PDF" }, () => inspect(WEATHER))
    expect(run.code).toBe(2)
    expect(run.stdout + run.stderr).toContain('SKILLS_RUN must be "all", "none" or skill names')
  })
})
