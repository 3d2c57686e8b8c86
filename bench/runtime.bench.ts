/**
 * The per-turn hot path on a 5,000-plugin catalog, after boot: compute the offer (tools of one
 * model call) and compose the system prompt with 5 plugins loaded — target < 1 ms — and answer
 * `list_capabilities` with a query (BM25F over every discoverable plugin), and the predictive
 * preload's decision for a turn (one ranking of the same index; docs/spec/tiers.md#predictive-preload).
 *
 * Figures are per call, median and p99 over many iterations after a warm-up; "first" is the
 * first call on a fresh catalog (it fills the per-catalog caches: offer prefix, Tier-1 text,
 * ranking index).
 */
import {
  CapabilityIndex,
  Catalog,
  MetaTools,
  Offer,
  type Plugin,
  type PluginTool,
  Preload,
  SystemPrompt
} from "@plugboard/core"
import { Either, Schema } from "effect"

const PLUGINS = 5_000

/** Deterministic PRNG (mulberry32) so every run measures the same catalog. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const WORDS = (
  "weather forecast invoice ledger climate sensor ticket contract wallet report map route calendar meeting " +
  "email inbox payment refund shipment order inventory customer lead campaign analytics dashboard chart " +
  "translation document spreadsheet image video audio podcast recipe flight hotel train stock crypto news " +
  "sport music movie book course quiz health fitness diet sleep garden plant energy carbon emission water"
).split(" ")
const VERBS = [
  "get",
  "list",
  "create",
  "update",
  "search",
  "delete",
  "summarise",
  "export",
  "track",
  "compare"
]
const CATEGORIES = ["data", "communication", "automation", "integration", "ui", "core"] as const

const input = Schema.Struct({
  query: Schema.String.annotations({ description: "What to look up." }),
  limit: Schema.optional(Schema.Number.annotations({ description: "Maximum results." }))
})

const makePlugins = (): ReadonlyArray<Plugin> => {
  const next = rng(42)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(next() * xs.length)]!
  return Array.from({ length: PLUGINS }, (_, i): Plugin => {
    const a = pick(WORDS)
    const b = pick(WORDS)
    const name = `${a}-${b}-${i}`
    const visibility = i < 5 ? "always" : i % 50 === 0 ? "silent" : "on-demand"
    const tools: Array<PluginTool> = Array.from({ length: 2 + (i % 3) }, (_, j) => ({
      name: `${pick(VERBS)}_${a}_${i}_${j}`,
      description: `${pick(VERBS)} ${a} ${b} records for the user; returns JSON with the ${pick(WORDS)} fields.`,
      input,
      handler: () => "ok"
    }))
    return {
      name,
      manifest: {
        title: `${a[0]!.toUpperCase()}${a.slice(1)} ${b}`,
        summary: `${a} and ${b} tools: ${pick(VERBS)} ${pick(WORDS)} and ${pick(WORDS)} records.`,
        whenToUse: [`When the user asks about ${a} or ${b}.`, `To ${pick(VERBS)} a ${pick(WORDS)} ${a}.`],
        examples: [{ user: `Can you ${pick(VERBS)} my ${a} ${b}?`, tool: tools[0]!.name }],
        tags: [a, b],
        category: pick(CATEGORIES),
        visibility
      },
      tools,
      ...(i % 7 === 0 ? { prompt: `When using ${name}, cite the ${a} source.` } : {})
    }
  })
}

const stats = (samples: Array<number>) => {
  samples.sort((x, y) => x - y)
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!
  return { median: at(0.5), p99: at(0.99), max: samples[samples.length - 1]! }
}
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`

const measure = (label: string, iterations: number, f: () => unknown) => {
  for (let i = 0; i < Math.min(1000, iterations); i++) f()
  const samples: Array<number> = []
  let sink = 0
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now()
    const r = f()
    samples.push(performance.now() - t0)
    if (r !== undefined) sink++
  }
  const s = stats(samples)
  console.log(
    `  ${label.padEnd(52)} median ${us(s.median).padStart(10)}  p99 ${us(s.p99).padStart(10)}  (n=${iterations}, ${sink === iterations ? "ok" : "?"})`
  )
  return s
}

export default async () => {
  const plugins = makePlugins()
  const built = Catalog.make(plugins)
  if (Either.isLeft(built)) throw new Error(built.left.lines.join("\n"))
  const catalog = built.right
  const onDemand = catalog.entries.filter((e) => e.discoverable && e.visibility === "on-demand")
  const loaded = [0, 700, 1400, 2800, 4200].map((i) => onDemand[i]!.name)
  const basePrompt = "You are a helpful oracle. Answer briefly and cite your sources."
  console.log(
    `catalog: ${catalog.entries.length} plugins (${catalog.entries.filter((e) => e.visibility === "always").length} always, ` +
      `${onDemand.length} on-demand, ${catalog.entries.filter((e) => !e.discoverable).length} silent), ${catalog.toolsByName.size} tools; 5 loaded`
  )

  // First call on the fresh catalog: fills the offer prefix and Tier-1 caches.
  let t0 = performance.now()
  const first = Offer.offer(catalog, loaded)
  const prompt = SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: loaded })
  console.log(`  first turn (offer + prompt, cold caches)              ${us(performance.now() - t0)}`)
  console.log(`  offered tools: ${first.length}; system prompt: ${prompt.length} chars`)

  measure("offer (5 loaded)", 50_000, () => Offer.offer(catalog, loaded))
  measure("system prompt (5 loaded)", 50_000, () =>
    SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: loaded })
  )
  const turn = measure("one turn: offer + system prompt (5 loaded)", 50_000, () => {
    Offer.offer(catalog, loaded)
    return SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: loaded })
  })
  console.log(`  target < 1 ms per turn: ${turn.p99 < 1 ? "met" : "MISSED"} (p99 ${us(turn.p99)})`)
  measure("gate: a tool of an unloaded plugin", 50_000, () =>
    Offer.gate(catalog, first, onDemand[3000]!.onDemandTools[0]!.name)
  )
  // A hallucinated name: "did you mean" over every callable tool. The first call builds the
  // catalog's name index; then typos, reordered and invented names of several shapes.
  const real = onDemand[2500]!.onDemandTools[0]!.name
  const unknown = [
    real.replace(/_(\d+)_/, "_$1$1_"),
    `${real.slice(0, 3)}${real.slice(4)}`,
    real.split("_").reverse().join("_"),
    "get_weather_forecast_for_city",
    "send_slack_message",
    "zzqx"
  ]
  t0 = performance.now()
  const firstUnknown = Offer.gate(catalog, first, unknown[0])
  console.log(
    `  gate: unknown name, first call (builds name index)     ${us(performance.now() - t0)} (${firstUnknown._tag}: ${
      firstUnknown._tag === "Unknown" ? firstUnknown.suggestions.join(", ") : ""
    })`
  )
  let u = 0
  const gateUnknown = measure("gate: unknown tool name (did-you-mean, 5,000 plugins)", 20_000, () =>
    Offer.gate(catalog, first, unknown[u++ % unknown.length])
  )
  // What gate did before the name index: score every callable tool (for comparison only).
  const callable = [
    ...first.map((t) => t.name),
    ...catalog.entries
      .filter((e) => e.discoverable)
      .flatMap((e) => e.tools.filter((t) => t.visibility !== "silent").map((t) => t.name))
  ]
  let v = 0
  measure("  reference: scoring every tool (closestNames)", 30, () =>
    CapabilityIndex.closestNames(unknown[v++ % unknown.length]!, new Set(callable), 3)
  )
  console.log(
    `  target < 1 ms median for an unknown name: ${gateUnknown.median < 1 ? "met" : "MISSED"} (median ${us(gateUnknown.median)}, p99 ${us(gateUnknown.p99)})`
  )

  const queries = [
    "track my carbon emission report",
    "book a hotel and a train",
    "what is the weather forecast for my garden",
    "compare crypto stock news",
    "export the invoice ledger to a spreadsheet"
  ]
  for (let round = 0; round < 3; round++) {
    t0 = performance.now()
    const cpu = process.cpuUsage()
    CapabilityIndex.make(catalog)
    const used = process.cpuUsage(cpu)
    console.log(
      `  ranking index build, ${onDemand.length + 5} plugins (round ${round + 1})`.padEnd(54) +
        ` wall ${(performance.now() - t0).toFixed(1)} ms, cpu ${((used.user + used.system) / 1000).toFixed(1)} ms`
    )
  }
  t0 = performance.now()
  const listed = MetaTools.listCapabilities(catalog, loaded, { query: queries[0] })
  console.log(`  list_capabilities, first query (builds the index)    ${us(performance.now() - t0)}`)
  if (Either.isLeft(listed)) throw listed.left
  let q = 0
  measure("list_capabilities {query} over 5,000 plugins", 2_000, () =>
    MetaTools.listCapabilities(catalog, loaded, { query: queries[q++ % queries.length] })
  )
  measure("Preload.decide (shadow), once per turn", 2_000, () =>
    Preload.decide(catalog, loaded, queries[q++ % queries.length]!, { mode: "shadow" })
  )
  measure("list_capabilities {} (all, first 50 by name)", 2_000, () =>
    MetaTools.listCapabilities(catalog, loaded, {})
  )
  measure("load_capability + ToolMessage text", 20_000, () => {
    const r = MetaTools.loadCapability(catalog, loaded, { names: [onDemand[10]!.name] })
    return Either.isRight(r) ? MetaTools.formatToolMessage(r.right) : undefined
  })
}
