/**
 * The terminal view of an inspect report: sections with aligned columns, numbers with thousands
 * separators, long lists cut to the top N with a note saying how to see all. A catalog of more
 * than `SUMMARY_THRESHOLD` plugins is summarised (counts per tier and category, warnings grouped,
 * every list capped) unless `--all` asks for everything (docs/cli.md). Colour
 * (headings, budget verdicts) only when the output is a terminal and `NO_COLOR` is unset.
 */
import type { EvalJson, InspectReport, MetricsJson, PluginRow } from "../CatalogReport.js"

/** How the view is drawn. */
export interface RenderOptions {
  /** On-demand plugins listed by cost (the rest are counted). */
  readonly top: number
  /** List everything, even for a catalog above `SUMMARY_THRESHOLD`. */
  readonly all: boolean
  readonly color: boolean
}

/** Above this many plugins the terminal view summarises, unless `--all`. */
export const SUMMARY_THRESHOLD = 50
/** Rows a summarised list keeps (plugins, overrides, requires, guides). */
export const SUMMARY_ROWS = 10
/** Lines of each kind of warning a summary keeps. */
export const SUMMARY_WARNINGS = 3

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

const indent = (lines: ReadonlyArray<string>, by = "  "): string[] =>
  lines.map((l) => (l === "" ? l : by + l))

const plural = (n: number, one: string, many = `${one}s`): string => `${fmt(n)} ${n === 1 ? one : many}`

/** The line closing a capped list. */
const more = (n: number, by = "  "): string[] =>
  n > 0 ? [`${by}…and ${fmt(n)} more (--all lists every one)`] : []

/** Keeps the first `n` of `xs` (all of them when `all`), and how many were left out. */
const cap = <A>(xs: ReadonlyArray<A>, n: number, all: boolean): [ReadonlyArray<A>, number] =>
  all || xs.length <= n ? [xs, 0] : [xs.slice(0, n), xs.length - n]

const pluginTable = (plugins: ReadonlyArray<PluginRow>): string[] =>
  table(
    [
      ["NAME", "VISIBILITY", "CATEGORY", "TOOLS", "EXAMPLES", "STABILITY"],
      ...plugins.map((p) => [
        p.source === "typescript" ? p.name : `${p.name} (${p.source})`,
        p.unavailable === null ? p.visibility : "unavailable",
        p.category ?? "-",
        p.alwaysTools > 0 && p.onDemandTools > 0 ? `${p.tools} (${p.alwaysTools} always)` : String(p.tools),
        String(p.examples),
        p.stability ?? "-"
      ])
    ],
    new Set([4])
  )

/**
 * A large catalog's plugins: counts per category and tier, then the plugins that matter most
 * to a reader first (unavailable, then always-tier, which every turn pays), capped.
 */
const pluginSummary = (plugins: ReadonlyArray<PluginRow>): string[] => {
  const byCategory = new Map<
    string,
    { plugins: number; always: number; onDemand: number; silent: number; tools: number }
  >()
  for (const p of plugins) {
    const key = p.category ?? "-"
    let c = byCategory.get(key)
    if (c === undefined) {
      c = { plugins: 0, always: 0, onDemand: 0, silent: 0, tools: 0 }
      byCategory.set(key, c)
    }
    c.plugins++
    c.tools += p.tools
    if (p.visibility === "always") c.always++
    else if (p.visibility === "on-demand") c.onDemand++
    else c.silent++
  }
  const categories = [...byCategory].sort(([a, x], [b, y]) => y.plugins - x.plugins || (a < b ? -1 : 1))
  const totals = categories.reduce(
    (t, [, c]) => ({
      plugins: t.plugins + c.plugins,
      always: t.always + c.always,
      onDemand: t.onDemand + c.onDemand,
      silent: t.silent + c.silent,
      tools: t.tools + c.tools
    }),
    { plugins: 0, always: 0, onDemand: 0, silent: 0, tools: 0 }
  )
  const row = (name: string, c: typeof totals) => [
    name,
    fmt(c.plugins),
    fmt(c.always),
    fmt(c.onDemand),
    fmt(c.silent),
    fmt(c.tools)
  ]
  const out = table(
    [
      ["CATEGORY", "PLUGINS", "ALWAYS", "ON-DEMAND", "SILENT", "TOOLS"],
      ...categories.map(([name, c]) => row(name, c)),
      row("total", totals)
    ],
    new Set([1, 2, 3, 4, 5])
  )
  const sources = new Map<string, number>()
  for (const p of plugins) sources.set(p.source, (sources.get(p.source) ?? 0) + 1)
  if (sources.size > 1 || !sources.has("typescript"))
    out.push(`from ${[...sources].map(([source, n]) => `${source} ${fmt(n)}`).join(", ")}`)
  const rank = (p: PluginRow) => (p.unavailable !== null ? 0 : p.visibility === "always" ? 1 : 2)
  const ordered = plugins
    .map((p, i) => [p, i] as const)
    .sort(([a, i], [b, j]) => rank(a) - rank(b) || i - j)
    .map(([p]) => p)
  const [shown, left] = cap(ordered, SUMMARY_ROWS, false)
  const unavailable = plugins.filter((p) => p.unavailable !== null).length
  out.push(
    "",
    `first ${fmt(shown.length)} (${unavailable > 0 ? "unavailable, then " : ""}always-tier, then in catalog order):`
  )
  out.push(...pluginTable(shown), ...more(left, ""))
  return out
}

/**
 * Warnings grouped by kind (the line with its quoted names, parenthesised parts and numbers
 * blanked), each kind capped to its first few lines.
 */
const warningSummary = (warnings: ReadonlyArray<string>): string[] => {
  const groups = new Map<string, Array<string>>()
  for (const w of warnings) {
    const key = w
      .replace(/'[^']*'/g, "'…'")
      .replace(/\([^)]*\)/g, "(…)")
      .replace(/\d[\d,.]*/g, "N")
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [w])
    else group.push(w)
  }
  const out: string[] = []
  // The most frequent kinds first; a tie keeps the order of first appearance (sort is stable).
  for (const [kind, lines] of [...groups].sort(([, a], [, b]) => b.length - a.length)) {
    if (lines.length <= SUMMARY_WARNINGS) {
      out.push(...lines)
      continue
    }
    out.push(`${fmt(lines.length)} × ${kind}`)
    out.push(...indent(lines.slice(0, SUMMARY_WARNINGS)), ...more(lines.length - SUMMARY_WARNINGS))
  }
  return out
}

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
  const summarised = !options.all && report.plugins.length > SUMMARY_THRESHOLD
  const count = (v: string) => report.plugins.filter((p) => p.visibility === v).length
  heading(
    `Plugins: ${fmt(report.plugins.length)} (${fmt(count("always"))} always, ${fmt(count("on-demand"))} on-demand, ${fmt(count("silent"))} silent)${summarised ? `; summarised above ${SUMMARY_THRESHOLD}, --all lists every one` : ""}`
  )
  out.push(...indent(summarised ? pluginSummary(report.plugins) : pluginTable(report.plugins)))

  heading(`Manifest validation: no errors, ${plural(report.warnings.length, "warning")}`)
  out.push(...indent(summarised ? warningSummary(report.warnings) : report.warnings))

  // What the operator changed, and the manifests the runtime uses (docs/plugins.md#manifest-overrides).
  const overridden = report.plugins.filter((p) => p.overrides.length > 0)
  if (overridden.length > 0) {
    heading(`Manifest overrides: ${plural(overridden.length, "plugin")}`)
    const shownValue = (v: unknown) => (v === null || v === undefined ? "(unset)" : JSON.stringify(v))
    const [shown, left] = cap(overridden, SUMMARY_ROWS, !summarised)
    for (const p of shown) {
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
    out.push(...more(left))
  }

  // Who may use what (docs/plugins.md#requiring-capabilities).
  const gated = report.plugins.filter((p) => p.requires.length > 0 || p.toolRequires.length > 0)
  if (gated.length > 0) {
    heading(`Requires (UCAN capabilities): ${plural(gated.length, "plugin")}`)
    const caps = (cs: ReadonlyArray<{ can: string; with: string }>) =>
      cs.map((c) => `${c.can} on ${c.with}`).join(", ")
    const [shown, left] = cap(gated, SUMMARY_ROWS, !summarised)
    for (const p of shown) {
      if (p.requires.length > 0) out.push(`  ${p.name}: ${caps(p.requires)}`)
      for (const t of p.toolRequires) out.push(`  ${p.name} / ${t.tool}: ${caps(t.requires)}`)
    }
    out.push(...more(left))
  }

  // Operating guides (docs/plugins.md#operating-guides).
  if (report.guides.length > 0) {
    heading(`Operating guides: ${plural(report.guides.length, "guide")}`)
    const [shown, left] = cap(report.guides, SUMMARY_ROWS, !summarised)
    out.push(
      ...indent(
        table(
          shown.map((g) => [
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
    out.push(...more(left))
  }

  // Skills whose scripts run (docs/skills-that-run.md): said only when the operator allowed some.
  const run = report.skillsRun
  if (run.allowed !== "none") {
    const allowed = run.allowed === "all" ? "all" : run.allowed.join(",")
    heading(`Skills that may run their scripts (SKILLS_RUN=${allowed}): ${run.runnable.length}`)
    out.push(
      run.runnable.length === 0
        ? "  none: no skill here has scripts/ allowed to run, or no sandbox (see the warnings)"
        : `  ${run.runnable.join(", ")}: run_script, in bubblewrap`
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
          [
            "meta-tools",
            fmt(n.metaTools),
            report.codeMode === "on"
              ? "list_capabilities, load_capability, run_code (CODE_MODE=on: its API over the offered tools)"
              : "list_capabilities, load_capability"
          ],
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
  heading(`Every plugin bound up front (tools, prompts, operating guides): ${plural(a.total, "token")}`)
  out.push(
    a.saving >= 0
      ? `  discovery saves ${plural(a.saving, "token")} per turn with nothing loaded (${a.total === 0 ? 0 : Math.round((a.saving / a.total) * 100)}%)`
      : `  discovery costs ${plural(-a.saving, "token")} more per turn than binding every plugin (a catalog this small gains nothing from it)`
  )

  const g = report.gateway
  heading(
    `As an MCP server (plugboard mcp): tools/list costs ${plural(g.atConnect.total, "token")} at connect`
  )
  out.push(
    `  ${plural(g.atConnect.tools, "tool")} listed (the 3 meta-tools${g.atConnect.tools > 3 ? ` and ${plural(g.atConnect.tools - 3, "always-tier tool")}` : ""}); instructions ${plural(g.instructions, "token")}`,
    g.afterLoads.k === 0
      ? "  no plugin adds tools when loaded"
      : `  after the ${plural(g.afterLoads.k, "most expensive load")}: ${plural(g.afterLoads.total, "token")}, ${plural(g.afterLoads.tools, "tool")} (${g.afterLoads.plugins.join(", ")})`
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
  const out: string[] = ["", bold(`Routing quality (list_capabilities' ranking: ${e.ranking.label})`)]
  if (e.ranking.kind === "lexical")
    out.push(
      "  lexical: set EMBEDDING_MODEL (or --embedding-model DIR) to measure the fused ranking serve uses with it"
    )
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
