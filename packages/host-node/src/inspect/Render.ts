/**
 * The terminal view of an inspect report: sections with aligned columns, numbers with thousands
 * separators, long lists cut to the top N with a note saying how to see all. Colour (headings,
 * budget verdicts) only when the output is a terminal and `NO_COLOR` is unset.
 */
import type { EvalJson, InspectReport, MetricsJson } from "./Report.js"

/** How the view is drawn. */
export interface RenderOptions {
  /** On-demand plugins listed by cost (the rest are counted). */
  readonly top: number
  readonly all: boolean
  readonly color: boolean
}

const fmt = (n: number): string => n.toLocaleString("en-US")
const ratio = (x: number): string => x.toFixed(3)

/** Pads columns to their widest cell; numeric columns (`right`) align right. */
const table = (
  rows: ReadonlyArray<ReadonlyArray<string>>,
  right: ReadonlySet<number> = new Set()
): string[] => {
  const widths: number[] = []
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length)
    })
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (right.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd()
  )
}

const indent = (lines: ReadonlyArray<string>, by = "  "): string[] => lines.map((l) => by + l)

const plural = (n: number, one: string, many = `${one}s`): string => `${fmt(n)} ${n === 1 ? one : many}`

/** Renders the report for a terminal; ends with a newline. */
export const render = (report: InspectReport, options: RenderOptions): string => {
  const paint = (code: string) => (s: string) => (options.color ? `\u001b[${code}m${s}\u001b[0m` : s)
  const bold = paint("1")
  const red = paint("31")
  const green = paint("32")
  const out: string[] = []
  const heading = (s: string) => out.push("", bold(s))

  out.push(`${bold("plugboard inspect")} ${report.module}`)
  out.push(`tokenizer: ${report.tokenizer}`)

  // Plugins.
  const count = (v: string) => report.plugins.filter((p) => p.visibility === v).length
  heading(
    `Plugins: ${fmt(report.plugins.length)} (${fmt(count("always"))} always, ${fmt(count("on-demand"))} on-demand, ${fmt(count("silent"))} silent)`
  )
  out.push(
    ...indent(
      table(
        [
          ["NAME", "VISIBILITY", "CATEGORY", "TOOLS", "EXAMPLES", "STABILITY"],
          ...report.plugins.map((p) => [
            p.source === "typescript" ? p.name : `${p.name} (${p.source})`,
            p.unavailable === null ? p.visibility : "unavailable",
            p.category ?? "-",
            p.alwaysTools > 0 && p.onDemandTools > 0
              ? `${p.tools} (${p.alwaysTools} always)`
              : String(p.tools),
            String(p.examples),
            p.stability ?? "-"
          ])
        ],
        new Set([4])
      )
    )
  )

  heading(`Manifest validation: no errors, ${plural(report.warnings.length, "warning")}`)
  out.push(...indent(report.warnings))

  // What the operator changed, and the manifests the runtime uses (README "Manifest overrides").
  const overridden = report.plugins.filter((p) => p.overrides.length > 0)
  if (overridden.length > 0) {
    heading(`Manifest overrides: ${plural(overridden.length, "plugin")}`)
    const shownValue = (v: unknown) => (v === null || v === undefined ? "(unset)" : JSON.stringify(v))
    for (const p of overridden) {
      out.push(`  ${p.name}`)
      for (const c of p.overrides)
        out.push(`    ${c.field}: ${shownValue(c.from)} → ${shownValue(c.to)}  (${c.by})`)
      out.push("    effective manifest:")
      out.push(
        ...JSON.stringify(p.manifest, null, 2)
          .split("\n")
          .map((l) => `      ${l}`)
      )
    }
  }

  // Who may use what (README "Requiring capabilities").
  const gated = report.plugins.filter((p) => p.requires.length > 0 || p.toolRequires.length > 0)
  if (gated.length > 0) {
    heading(`Requires (UCAN capabilities): ${plural(gated.length, "plugin")}`)
    const caps = (cs: ReadonlyArray<{ can: string; with: string }>) =>
      cs.map((c) => `${c.can} on ${c.with}`).join(", ")
    for (const p of gated) {
      if (p.requires.length > 0) out.push(`  ${p.name}: ${caps(p.requires)}`)
      for (const t of p.toolRequires) out.push(`  ${p.name} / ${t.tool}: ${caps(t.requires)}`)
    }
  }

  // Operating guides (README "Operating guides").
  if (report.guides.length > 0) {
    heading(`Operating guides: ${plural(report.guides.length, "guide")}`)
    out.push(
      ...indent(
        table(
          report.guides.map((g) => [
            g.name,
            fmt(g.tokens),
            g.paid === "prompt"
              ? `in the system prompt (always-tier), every call${g.cut ? `: cut to ${fmt(g.paidTokens)}` : ""}`
              : "in load_capability's answer",
            g.overWarning ? red("above 3,000 tokens") : ""
          ]),
          new Set([1])
        )
      )
    )
  }

  heading(`Tier-1 block: ${plural(report.tier1.tokens, "token")}`)
  out.push(...report.tier1.text.split("\n").map((l) => `  | ${l}`.trimEnd()))

  // Cost of a turn.
  const n = report.nothingLoaded
  const alwaysTools = report.plugins.reduce((s, p) => s + p.alwaysTools, 0)
  heading(`Turn with nothing loaded: ${plural(n.total, "token")}`)
  out.push(
    ...indent(
      table(
        [
          ["base prompt", fmt(n.basePrompt), n.basePrompt === 0 ? "none given (--base-prompt FILE)" : ""],
          ["Tier-1 block", fmt(n.tier1), plural(report.tier1.plugins.length, "always plugin")],
          ["plugin prompts", fmt(n.pluginPrompts), "prompt sections and guides of always-tier plugins"],
          ["meta-tools", fmt(n.metaTools), "list_capabilities, load_capability"],
          ["always-tier tools", fmt(n.toolSchemas), plural(alwaysTools, "tool schema")],
          ["total", fmt(n.total), ""]
        ],
        new Set([1])
      )
    )
  )

  const shown = options.all ? report.perPlugin : report.perPlugin.slice(0, options.top)
  heading(
    report.perPlugin.length === 0
      ? "Loading a plugin: no on-demand plugins"
      : `Loading a plugin adds, per turn (${shown.length === report.perPlugin.length ? `all ${fmt(shown.length)}` : `top ${fmt(shown.length)} of ${fmt(report.perPlugin.length)}; --all lists every one`})`
  )
  out.push(
    ...indent(
      table(
        shown.map((p) => [
          p.name,
          p.visibility === "always" ? "(always, on-demand tools)" : "",
          p.guide > 0 ? `${plural(p.tools, "tool")}, guide ${fmt(p.guide)}` : plural(p.tools, "tool"),
          `+${fmt(p.cost)}`
        ]),
        new Set([3])
      )
    )
  )

  const w = report.worstCase
  heading(`Worst case with ${w.k} loaded: ${plural(w.total, "token")}`)
  if (w.plugins.length > 0) out.push(`  ${w.plugins.join(", ")}`)

  const a = report.allBound
  heading(`Every tool bound up front: ${plural(a.total, "token")}`)
  out.push(
    a.saving >= 0
      ? `  discovery saves ${plural(a.saving, "token")} per turn with nothing loaded (${a.total === 0 ? 0 : Math.round((a.saving / a.total) * 100)}%)`
      : `  discovery costs ${plural(-a.saving, "token")} more per turn than binding every tool (a catalog this small gains nothing from it)`
  )

  // Budget.
  const b = report.budget
  if (b !== null) {
    const verdict = (total: number, exceeds: boolean) =>
      exceeds ? red(`${fmt(total)} exceeds it by ${fmt(total - b.budget)}`) : green(`${fmt(total)} fits`)
    heading(`Budget: ${plural(b.budget, "token")}`)
    out.push(`  nothing loaded: ${verdict(b.nothingLoaded.total, b.nothingLoaded.exceeds)}`)
    if (b.loaded !== null)
      out.push(`  loaded ${b.loaded.plugins.join(", ")}: ${verdict(b.loaded.cost.total, b.loaded.exceeds)}`)
    if (b.demotions.length === 0) out.push("  no always-tier plugin to demote")
    else {
      out.push("  demoting an always-tier plugin to on-demand would save:")
      out.push(
        ...indent(
          table(
            b.demotions.map((d) => [d.name, `-${fmt(d.saving)}`]),
            new Set([1])
          ),
          "    "
        )
      )
      if (b.demote.length > 0) {
        out.push(
          b.fits
            ? `  demote ${b.demote.join(", ")} to fit: ${fmt(b.totalAfterDemotion)} tokens`
            : `  even demoting every always-tier plugin leaves ${fmt(b.totalAfterDemotion)} tokens, over the budget`
        )
      }
    }
  }

  if (report.eval !== null) out.push(...renderEval(report.eval, options, bold))
  if (report.eval !== null && report.eval.minRecall !== null) {
    out.push(
      "",
      report.eval.belowMinRecall
        ? red(
            `Routing is below --min-recall ${report.eval.minRecall}: recall@${report.eval.k} must reach it.`
          )
        : green(`Routing reaches --min-recall ${report.eval.minRecall}.`)
    )
  }
  out.push("")
  return out.join("\n")
}

const TOP_MISSES = 10
const TOP_PAIRS = 10

const renderMetrics = (m: MetricsJson, k: number, options: RenderOptions): string[] => {
  const out: string[] = []
  out.push(`  recall@1 ${ratio(m.recallAt1)}   recall@${k} ${ratio(m.recallAtK)}   MRR ${ratio(m.mrr)}`)
  const missing = m.perPlugin.filter((p) => p.hitsAtK < p.queries)
  if (missing.length > 0) {
    const shown = options.all ? missing : missing.slice(0, TOP_MISSES)
    out.push(
      `  plugins missed outside the top ${k}${shown.length < missing.length ? ` (${shown.length} of ${missing.length}; --all lists every one)` : ""}:`
    )
    out.push(
      ...indent(
        table(
          shown.map((p) => {
            const worst = p.misses[0]
            return [
              p.plugin,
              `${p.queries - p.hitsAtK}/${p.queries} missed`,
              worst === undefined
                ? ""
                : `e.g. "${worst.query.length > 60 ? `${worst.query.slice(0, 57)}...` : worst.query}" -> ${worst.top[0] ?? "nothing ranked"}`
            ]
          })
        ),
        "    "
      )
    )
  }
  if (m.stealing.length > 0) {
    const shown = options.all ? m.stealing : m.stealing.slice(0, TOP_PAIRS)
    out.push(
      `  pairs that take each other's queries${shown.length < m.stealing.length ? ` (${shown.length} of ${m.stealing.length})` : ""}:`
    )
    out.push(
      ...indent(
        table(
          shown.map((s) => [
            `${s.a} <-> ${s.b}`,
            `${s.aToB} / ${s.bToA}`,
            `whenToUse overlap ${s.whenToUseOverlap.toFixed(2)}`,
            s.sharedTerms.length === 0 ? "" : `(${s.sharedTerms.join(", ")})`
          ])
        ),
        "    "
      )
    )
  }
  return out
}

const renderEval = (e: EvalJson, options: RenderOptions, bold: (s: string) => string): string[] => {
  const out: string[] = ["", bold("Routing quality (list_capabilities' ranking)")]
  const ex = e.examples
  out.push(`Manifest examples, each left out of the index: ${plural(ex.queries, "query", "queries")}`)
  if (ex.queries > 0) out.push(...renderMetrics(ex, e.k, options))
  if (ex.withoutExamples.length > 0) {
    const names = ex.withoutExamples
    const listed =
      options.all || names.length <= 10 ? names.join(", ") : `${names.slice(0, 10).join(", ")}, ...`
    out.push(`  ${plural(names.length, "plugin")} without examples: ${listed}`)
  }
  const q = e.queries
  if (q !== null) {
    out.push(`Labelled queries from ${q.file}: ${plural(q.queries, "query", "queries")}`)
    if (q.queries > 0) out.push(...renderMetrics(q, e.k, options))
    const aliased = q.normalizedLabels.filter((l) => l.via === "alias").length
    const normalized = q.normalizedLabels.length - aliased
    if (aliased > 0) out.push(`  ${plural(aliased, "label")} resolved by the module's aliases`)
    if (normalized > 0)
      out.push(`  ${plural(normalized, "label")} matched a plugin name ignoring case and punctuation`)
    for (const u of q.unknownLabels) {
      out.push(
        `  left out: ${plural(u.lines.length, "query", "queries")} labelled '${u.plugin}' (${u.reason === "silent" ? "a silent plugin, never ranked" : "no such plugin"}; line${u.lines.length === 1 ? "" : "s"} ${u.lines.length > 5 ? `${u.lines.slice(0, 5).join(", ")}, ...` : u.lines.join(", ")})`
      )
    }
  }
  return out
}
