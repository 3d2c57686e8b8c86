/**
 * The budget and routing charts, inline SVG, shared by the console's Budget tab and the page of
 * `plugboard inspect --html` (docs/console.md). Each chart is an image with a title for
 * screen readers and a data table beside it; every bar carries `data-label` and `data-value`
 * (the figure of the report it draws, unrounded), which the tests compare with `inspect --json`.
 */
import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import type { ConsoleBudget } from "../src/console/Wire.js"

/** A whole number with thousands separators. */
export const fmt = (n: number): string => Math.round(n).toLocaleString("en-US")

interface Bar {
  readonly label: string
  readonly value: number
  readonly tone?: "base" | "alt" | "hot"
  readonly note?: string
}

const ROW = 24
const LABEL_W = 190
const VALUE_W = 80

/** Horizontal bars, one per row, scaled to the largest. */
export const HBars = (props: {
  readonly id: string
  readonly title: string
  readonly bars: ReadonlyArray<Bar>
  readonly width?: number
  readonly unit?: string
}) => {
  const width = props.width ?? 640
  const plot = width - LABEL_W - VALUE_W
  const max = Math.max(1, ...props.bars.map((b) => b.value))
  const height = props.bars.length * ROW + 8
  const unit = props.unit ?? "tokens"
  return (
    <figure class="chart" data-chart={props.id}>
      <figcaption id={`${props.id}-title`}>{props.title}</figcaption>
      <svg
        role="img"
        aria-labelledby={`${props.id}-title`}
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        preserveAspectRatio="xMinYMin meet"
      >
        <title>{props.title}</title>
        {props.bars.map((b, i) => {
          const w = Math.max(1, (b.value / max) * plot)
          const y = i * ROW + 4
          return (
            <g key={b.label} class={`bar ${b.tone ?? "base"}`} data-label={b.label} data-value={b.value}>
              <title>{`${b.label}: ${fmt(b.value)} ${unit}${b.note === undefined ? "" : ` (${b.note})`}`}</title>
              <text x={LABEL_W - 8} y={y + ROW / 2 + 1} text-anchor="end" dominant-baseline="middle">
                {b.label.length > 26 ? `${b.label.slice(0, 25)}…` : b.label}
              </text>
              <rect x={LABEL_W} y={y + 3} width={w} height={ROW - 8} rx="2" />
              <text x={LABEL_W + w + 6} y={y + ROW / 2 + 1} dominant-baseline="middle" class="value">
                {fmt(b.value)}
              </text>
            </g>
          )
        })}
      </svg>
      <DataTable
        caption={props.title}
        head={["", unit]}
        rows={props.bars.map((b) => [b.label, fmt(b.value)])}
      />
    </figure>
  )
}

/** One colour of a chart and what it means. */
export interface LegendEntry {
  readonly tone: NonNullable<Bar["tone"]>
  readonly text: string
}

/** What a chart's colours mean, under it: a swatch and a sentence each. */
export const Legend = (props: { readonly id: string; readonly entries: ReadonlyArray<LegendEntry> }) => (
  <ul class="legend" data-legend={props.id}>
    {props.entries.map((e) => (
      <li key={e.tone} data-tone={e.tone}>
        <svg class={`swatch bar ${e.tone}`} width="12" height="12" aria-hidden="true">
          <rect width="12" height="12" rx="2" />
        </svg>{" "}
        {e.text}
      </li>
    ))}
  </ul>
)

/** Vertical bars over `k` (columns), for curves such as the worst case. */
export const Columns = (props: {
  readonly id: string
  readonly title: string
  readonly columns: ReadonlyArray<Bar>
  readonly xLabel: string
  readonly legend?: ReadonlyArray<LegendEntry> | undefined
}) => {
  const width = 640
  const height = 220
  const left = 56
  const bottom = 40
  const plotW = width - left - 8
  const plotH = height - bottom - 16
  const max = Math.max(1, ...props.columns.map((c) => c.value))
  const step = plotW / Math.max(1, props.columns.length)
  return (
    <figure class="chart" data-chart={props.id}>
      <figcaption id={`${props.id}-title`}>{props.title}</figcaption>
      <svg role="img" aria-labelledby={`${props.id}-title`} viewBox={`0 0 ${width} ${height}`} width="100%">
        <title>{props.title}</title>
        <line x1={left} y1={16 + plotH} x2={width - 8} y2={16 + plotH} class="axis" />
        <text x={left - 6} y={16} text-anchor="end" class="tick">
          {fmt(max)}
        </text>
        <text x={left - 6} y={16 + plotH} text-anchor="end" class="tick">
          0
        </text>
        {props.columns.map((c, i) => {
          const h = Math.max(1, (c.value / max) * plotH)
          const x = left + i * step + step * 0.15
          return (
            <g key={c.label} class={`bar ${c.tone ?? "base"}`} data-label={c.label} data-value={c.value}>
              <title>{`${props.xLabel} ${c.label}: ${fmt(c.value)} tokens${c.note === undefined ? "" : ` (${c.note})`}`}</title>
              <rect x={x} y={16 + plotH - h} width={step * 0.7} height={h} rx="2" />
              <text x={x + step * 0.35} y={16 + plotH + 16} text-anchor="middle" class="tick">
                {c.label}
              </text>
            </g>
          )
        })}
        <text x={left + plotW / 2} y={height - 4} text-anchor="middle" class="tick">
          {props.xLabel}
        </text>
      </svg>
      {props.legend === undefined ? null : <Legend id={props.id} entries={props.legend} />}
      <DataTable
        caption={props.title}
        head={[props.xLabel, "tokens"]}
        rows={props.columns.map((c) => [c.label, fmt(c.value)])}
      />
    </figure>
  )
}

/** A chart's figures as a table, folded by default (screen readers and copy-paste). */
export const DataTable = (props: {
  readonly caption: string
  readonly head: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<ComponentChildren>>
}) => (
  <details class="data">
    <summary>Data table</summary>
    <table>
      <caption class="sr-only">{props.caption}</caption>
      <thead>
        <tr>
          {props.head.map((h) => (
            <th key={h} scope="col">
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows are positional
          <tr key={i}>
            {r.map((c, j) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: cells are positional
              <td key={j}>{c}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  </details>
)

/** The worst case with k loaded: the nothing-loaded turn plus the k most expensive loads. */
export const worstCurve = (report: ConsoleBudget, upTo = 10): Array<{ k: number; total: number }> => {
  const out = [{ k: 0, total: report.nothingLoaded.total }]
  let total = report.nothingLoaded.total
  report.perPlugin.slice(0, upTo).forEach((p, i) => {
    total += p.cost
    out.push({ k: i + 1, total })
  })
  return out
}

/** What the highlighted worst case is: the k it was asked for, and the plugins it loads. */
export const worstNote = (r: ConsoleBudget): string => {
  const w = r.worstCase
  if (w.k === 0) return "k = 0 asked for: nothing loaded"
  const names = w.plugins.length > 5 ? `${w.plugins.slice(0, 5).join(", ")}, …` : w.plugins.join(", ")
  return `the ${w.k} most expensive plugins loaded at once: ${names} (inspect --k ${w.k})`
}

/** The whole budget and routing report: the Budget tab, and `inspect --html`. */
export const BudgetCharts = (props: { readonly report: ConsoleBudget }) => {
  const r = props.report
  const [all, setAll] = useState(false)
  const shown = all ? r.perPlugin : r.perPlugin.slice(0, 20)
  const n = r.nothingLoaded
  const stealing = r.eval?.examples.stealing ?? []
  return (
    <div class="budget">
      <p class="lede">
        A turn with nothing loaded costs <strong data-figure="nothing-loaded">{fmt(n.total)}</strong> tokens;
        binding every plugin up front (its tools, prompt and operating guide) would cost{" "}
        <strong data-figure="all-bound">{fmt(r.allBound.total)}</strong> ({fmt(r.allBound.saving)} saved per
        turn). Counted with {r.tokenizer}; {r.plugins.length} plugins.
      </p>
      <HBars
        id="turn"
        title="Tokens per model call: nothing loaded against every plugin bound"
        bars={[
          { label: "nothing loaded", value: n.total, tone: "base" },
          {
            label: "every plugin bound",
            value: r.allBound.total,
            tone: "hot",
            note: "every tool, prompt and operating guide up front"
          }
        ]}
      />
      <HBars
        id="turn-parts"
        title="What the nothing-loaded call is made of"
        bars={[
          { label: "Tier-1 block", value: n.tier1 },
          { label: "meta-tools", value: n.metaTools },
          { label: "always-tier tools", value: n.toolSchemas },
          { label: "plugin prompts", value: n.pluginPrompts },
          { label: "base prompt", value: n.basePrompt }
        ]}
      />
      <HBars
        id="per-plugin"
        title={`What loading each plugin adds, most expensive first${all ? "" : ` (top ${shown.length} of ${r.perPlugin.length})`}`}
        bars={shown.map((p) => ({
          label: p.name,
          value: p.cost,
          tone: "alt",
          note: `${p.tools} tools${p.guide > 0 ? `, guide ${fmt(p.guide)}` : ""}`
        }))}
      />
      {r.perPlugin.length > 20 ? (
        <button type="button" onClick={() => setAll(!all)} aria-expanded={all}>
          {all ? "Show the top 20" : `Show all ${r.perPlugin.length}`}
        </button>
      ) : null}
      <Columns
        id="worst-case"
        title={`Worst case with k plugins loaded (the k most expensive); k = ${r.worstCase.k}: ${fmt(r.worstCase.total)} tokens`}
        xLabel="k loaded"
        columns={worstCurve(r).map((p) => ({
          label: String(p.k),
          value: p.total,
          tone: p.k === r.worstCase.k ? "hot" : "base",
          ...(p.k === r.worstCase.k ? { note: worstNote(r) } : {})
        }))}
        legend={[
          {
            tone: "hot",
            text: `k = ${r.worstCase.k}, the worst case this report names: ${worstNote(r)}`
          },
          { tone: "base", text: "other k: nothing loaded plus the k most expensive loads" }
        ]}
      />
      <Routing report={r} stealing={stealing} />
    </div>
  )
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`

const Routing = (props: {
  readonly report: ConsoleBudget
  readonly stealing: NonNullable<ConsoleBudget["eval"]>["examples"]["stealing"]
}) => {
  const e = props.report.eval
  if (e === null) return <p>Routing was not evaluated (run inspect with --eval).</p>
  return (
    <section aria-labelledby="routing-title" data-chart="routing">
      <h3 id="routing-title">Routing: leave-one-out over the manifests' examples</h3>
      <p>
        {e.examples.queries} queries: recall@1{" "}
        <strong data-figure="recall-1">{pct(e.examples.recallAt1)}</strong>, recall@{e.k}{" "}
        <strong data-figure="recall-k">{pct(e.examples.recallAtK)}</strong>, MRR {e.examples.mrr.toFixed(3)}.
      </p>
      {props.stealing.length === 0 ? (
        <p>No confusion: every example's own plugin came first.</p>
      ) : (
        <table class="confusion">
          <caption>Confusion pairs: a query of one plugin that the other took first</caption>
          <thead>
            <tr>
              <th scope="col">plugin a</th>
              <th scope="col">plugin b</th>
              <th scope="col">a's queries b took</th>
              <th scope="col">b's queries a took</th>
              <th scope="col">whenToUse overlap</th>
              <th scope="col">shared terms</th>
            </tr>
          </thead>
          <tbody>
            {props.stealing.map((s) => (
              <tr key={`${s.a}/${s.b}`} data-pair={`${s.a}/${s.b}`}>
                <td>{s.a}</td>
                <td>{s.b}</td>
                <td>{s.aToB}</td>
                <td>{s.bToA}</td>
                <td>
                  <span class="meter" style={{ "--v": s.whenToUseOverlap }} aria-hidden="true" />
                  {s.whenToUseOverlap.toFixed(2)}
                </td>
                <td>{s.sharedTerms.join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
