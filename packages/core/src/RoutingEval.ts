/**
 * Routing quality of a catalog: how often a ranking (`Ranking`, the one `list_capabilities` uses)
 * puts the right plugin first, or in the first five, for queries whose right plugin is known.
 *
 * Two sources of labelled queries:
 * - the manifests themselves (`evaluateExamples`): each example's `user` message is a query whose
 *   answer is its own plugin, ranked with that example left out of the index (exactly, see
 *   `CapabilityIndex.leaveOneOut`), so an example never finds itself;
 * - a file of labelled queries (`evaluateQueries`), ranked against the whole index.
 *
 * Both rank with a `Ranking`, the host's: `evaluateExamplesWith` and `evaluateQueriesWith` take
 * the one a host hands `list_capabilities` (lexical, or fused with an embedder), so the figures
 * describe what the model gets. `evaluateExamples` and `evaluateQueries` are the lexical ranking's
 * (`Ranking.lexical`, `CapabilityIndex`). Pure: no I/O (a fused ranking's embedder is an `Effect`).
 */
import { Effect } from "effect"
import * as CapabilityIndex from "./CapabilityIndex.js"
import type { EmbedderError } from "./Embedder.js"
import type { CatalogEntry } from "./internal/catalog/entry.js"
import type { Catalog } from "./internal/catalog/model.js"
import * as Ranking from "./Ranking.js"

/** A query and the plugin that should serve it. */
export interface LabelledQuery {
  readonly query: string
  readonly plugin: string
}

/** How one query was ranked. */
export interface Outcome {
  readonly query: string
  /** The plugin that should have been found. */
  readonly plugin: string
  /** 1-based position of `plugin` in the ranking; `undefined` when it shares no word with the query. */
  readonly rank: number | undefined
  /** The first `k` plugins of the ranking, best first. */
  readonly top: ReadonlyArray<string>
  /** For manifest examples: the example's position in its plugin's `examples`. */
  readonly example?: number | undefined
}

/** The figures of one plugin: its queries and the ones the ranking missed. */
export interface PluginMetrics {
  readonly plugin: string
  readonly queries: number
  readonly hitsAt1: number
  readonly hitsAtK: number
  /** Queries whose plugin did not come first, worst rank first. */
  readonly misses: ReadonlyArray<Outcome>
}

/**
 * Two plugins where one came first for a query labelled with the other. `aToB` counts queries
 * of `a` that `b` took, `bToA` the reverse (`a` < `b` by name). `whenToUseOverlap` is the Jaccard
 * similarity of their `whenToUse` terms (stemmed, stop words dropped): a high value says the two
 * manifests describe the same situations and need `whenNotToUse` or sharper wording.
 */
export interface StealingPair {
  readonly a: string
  readonly b: string
  readonly aToB: number
  readonly bToA: number
  readonly whenToUseOverlap: number
  /** The `whenToUse` terms both share, alphabetically (at most `SHARED_TERMS_MAX`). */
  readonly sharedTerms: ReadonlyArray<string>
}

/** The figures of one evaluation. */
export interface RoutingReport {
  /** The cut-off of `recallAtK` (5 unless asked otherwise). */
  readonly k: number
  readonly queries: number
  /** Share of queries whose plugin came first; 0 when there are no queries. */
  readonly recallAt1: number
  /** Share of queries whose plugin was in the first `k`. */
  readonly recallAtK: number
  /** Mean reciprocal rank (a plugin not ranked at all counts 0). */
  readonly mrr: number
  /** Every plugin that had at least one query, most misses (outside the first `k`) first. */
  readonly perPlugin: ReadonlyArray<PluginMetrics>
  /** Pairs that took each other's queries, most stolen first. */
  readonly stealing: ReadonlyArray<StealingPair>
  /** Every query's outcome, in input order. */
  readonly outcomes: ReadonlyArray<Outcome>
}

/** Options of the evaluations. */
export interface EvaluateOptions {
  /** Cut-off of `recallAtK`; default 5. */
  readonly k?: number | undefined
  /**
   * Called after each ranked query with how many are done of how many: a long evaluation (tens
   * of thousands of rankings) can show progress. Keep it cheap: it runs once per query.
   */
  readonly onProgress?: ((done: number, total: number) => void) | undefined
}

/** The default cut-off: a model reading a list of five still finds the right plugin. */
export const DEFAULT_K = 5
/** How many shared terms a `StealingPair` lists. */
export const SHARED_TERMS_MAX = 8

const cutOff = (options: EvaluateOptions): number => {
  const k = options.k ?? DEFAULT_K
  if (!Number.isInteger(k) || k < 1)
    throw new RangeError(`RoutingEval: k must be a positive integer (got ${k}).`)
  return k
}

/** Ranks `query` with `ranking` (leaving out `example` of `plugin` when given) and records where `plugin` landed. */
const outcomeOf = (
  ranking: Ranking.Ranking,
  query: string,
  plugin: string,
  k: number,
  example?: number
): Effect.Effect<Outcome, EmbedderError> =>
  Effect.map(
    ranking.rank(query, example === undefined ? {} : { leaveOut: { plugin, example } }),
    (ranked) => {
      const at = ranked.findIndex((r) => r.name === plugin)
      return {
        query,
        plugin,
        rank: at < 0 ? undefined : at + 1,
        top: ranked.slice(0, k).map((r) => r.name),
        ...(example === undefined ? {} : { example })
      }
    }
  )

const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

// A pure memo of an entry's whenToUse terms (the entry is immutable): no catalog's state.
const termsCache = new WeakMap<CatalogEntry, ReadonlySet<string>>()

const whenToUseTerms = (entry: CatalogEntry): ReadonlySet<string> => {
  let terms = termsCache.get(entry)
  if (terms === undefined) {
    terms = new Set(CapabilityIndex.tokenize((entry.manifest.whenToUse ?? []).join("\n")))
    termsCache.set(entry, terms)
  }
  return terms
}

/** Jaccard similarity of two plugins' `whenToUse` terms, with the terms they share. */
export const whenToUseOverlap = (
  a: CatalogEntry,
  b: CatalogEntry
): { readonly score: number; readonly shared: ReadonlyArray<string> } => {
  const ta = whenToUseTerms(a)
  const tb = whenToUseTerms(b)
  const shared: Array<string> = []
  for (const t of ta) if (tb.has(t)) shared.push(t)
  const union = ta.size + tb.size - shared.length
  return { score: union === 0 ? 0 : shared.length / union, shared: shared.sort(compareNames) }
}

/** Aggregates outcomes into a report. */
export const summarize = (catalog: Catalog, outcomes: ReadonlyArray<Outcome>, k: number): RoutingReport => {
  let at1 = 0
  let atK = 0
  let reciprocal = 0
  const plugins = new Map<
    string,
    { queries: number; hitsAt1: number; hitsAtK: number; misses: Array<Outcome> }
  >()
  const pairs = new Map<string, { a: string; b: string; aToB: number; bToA: number }>()
  for (const o of outcomes) {
    let p = plugins.get(o.plugin)
    if (p === undefined) {
      p = { queries: 0, hitsAt1: 0, hitsAtK: 0, misses: [] }
      plugins.set(o.plugin, p)
    }
    p.queries++
    if (o.rank !== undefined) reciprocal += 1 / o.rank
    if (o.rank === 1) {
      at1++
      p.hitsAt1++
    } else p.misses.push(o)
    if (o.rank !== undefined && o.rank <= k) {
      atK++
      p.hitsAtK++
    }
    const thief = o.top[0]
    if (o.rank !== 1 && thief !== undefined && thief !== o.plugin) {
      const [a, b] = o.plugin < thief ? [o.plugin, thief] : [thief, o.plugin]
      const key = `${a}\u0000${b}`
      let pair = pairs.get(key)
      if (pair === undefined) {
        pair = { a, b, aToB: 0, bToA: 0 }
        pairs.set(key, pair)
      }
      if (o.plugin === a) pair.aToB++
      else pair.bToA++
    }
  }
  const n = outcomes.length
  const worst = (o: Outcome) => o.rank ?? Number.POSITIVE_INFINITY
  const perPlugin: Array<PluginMetrics> = [...plugins]
    .map(([plugin, p]) => ({
      plugin,
      queries: p.queries,
      hitsAt1: p.hitsAt1,
      hitsAtK: p.hitsAtK,
      misses: p.misses.sort((x, y) => worst(y) - worst(x))
    }))
    .sort(
      (x, y) =>
        y.queries - y.hitsAtK - (x.queries - x.hitsAtK) ||
        y.queries - y.hitsAt1 - (x.queries - x.hitsAt1) ||
        compareNames(x.plugin, y.plugin)
    )
  const stealing: Array<StealingPair> = [...pairs.values()]
    .map((pair) => {
      const ea = catalog.byName.get(pair.a)
      const eb = catalog.byName.get(pair.b)
      const overlap =
        ea !== undefined && eb !== undefined ? whenToUseOverlap(ea, eb) : { score: 0, shared: [] }
      return {
        ...pair,
        whenToUseOverlap: Math.round(overlap.score * 1000) / 1000,
        sharedTerms: overlap.shared.slice(0, SHARED_TERMS_MAX)
      }
    })
    .sort(
      (x, y) =>
        y.aToB + y.bToA - (x.aToB + x.bToA) ||
        y.whenToUseOverlap - x.whenToUseOverlap ||
        compareNames(x.a, y.a) ||
        compareNames(x.b, y.b)
    )
  return {
    k,
    queries: n,
    recallAt1: n === 0 ? 0 : at1 / n,
    recallAtK: n === 0 ? 0 : atK / n,
    mrr: n === 0 ? 0 : reciprocal / n,
    perPlugin,
    stealing,
    outcomes
  }
}

/** The result of `evaluateExamples`. */
export interface ExamplesReport extends RoutingReport {
  /** Discoverable plugins whose manifest has no example: nothing to evaluate them on. */
  readonly withoutExamples: ReadonlyArray<string>
}

/**
 * Leave-one-out over the manifests' examples with `ranking`: each discoverable plugin's example
 * `user` message is ranked as if that example had never been written (`Ranking.RankOptions`'
 * `leaveOut`), and should find its own plugin. Silent plugins are not ranked (the ranking never
 * shows them) and are not evaluated. Fails when a fused ranking's embedder does; throws a
 * `RangeError` for a cut-off that is not a positive integer.
 */
export const evaluateExamplesWith = (
  ranking: Ranking.Ranking,
  catalog: Catalog,
  options: EvaluateOptions = {}
): Effect.Effect<ExamplesReport, EmbedderError> => {
  // A caller's bug throws here, not as the Effect's defect.
  const k = cutOff(options)
  return Effect.gen(function* () {
    const outcomes: Array<Outcome> = []
    const withoutExamples: Array<string> = []
    const onProgress = options.onProgress
    let total = 0
    if (onProgress !== undefined)
      for (const entry of catalog.entries)
        if (entry.discoverable) total += entry.manifest.examples?.length ?? 0
    for (const entry of catalog.entries) {
      if (!entry.discoverable) continue
      const examples = entry.manifest.examples ?? []
      if (examples.length === 0) withoutExamples.push(entry.name)
      for (const [i, example] of examples.entries()) {
        outcomes.push(yield* outcomeOf(ranking, example.user, entry.name, k, i))
        onProgress?.(outcomes.length, total)
      }
    }
    return { ...summarize(catalog, outcomes, k), withoutExamples: withoutExamples.sort(compareNames) }
  })
}

/** `evaluateExamplesWith` the lexical ranking (`Ranking.lexical`, `CapabilityIndex`). */
export const evaluateExamples = (catalog: Catalog, options: EvaluateOptions = {}): ExamplesReport =>
  Effect.runSync(evaluateExamplesWith(Ranking.lexical(catalog), catalog, options))

/** A label that names no discoverable plugin of the catalog, with the queries that carry it. */
export interface UnknownLabel {
  readonly plugin: string
  /** 0-based positions of its queries in the input. */
  readonly positions: ReadonlyArray<number>
  /** Why it was left out: no such plugin, or a silent one (never ranked). */
  readonly reason: "unknown" | "silent"
}

/** The result of `evaluateQueries`. */
export interface QueriesReport extends RoutingReport {
  /** Labels left out of the figures, in order of first appearance. */
  readonly unknownLabels: ReadonlyArray<UnknownLabel>
  /** Labels that are not a plugin name but were resolved to one, by an alias or ignoring case and punctuation. */
  readonly normalizedLabels: ReadonlyArray<{
    readonly label: string
    readonly plugin: string
    readonly via: "alias" | "normalized"
  }>
}

const normalizeLabel = (label: string): string => label.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "")

/** How a label became a plugin name (`undefined` when it did not). */
export interface ResolvedLabel {
  readonly plugin: string
  readonly via: "name" | "alias" | "normalized"
}

/**
 * Resolves a query label to a catalog plugin name: the exact name; else `aliases` (label →
 * plugin name, e.g. a data set's original names, as a module exports them); else the one plugin
 * whose name equals it once case and punctuation are ignored (`ResearchHelper` →
 * `research-helper`: external data sets rarely spell names in kebab case). `undefined` when
 * none or several match.
 */
export const labelResolver = (
  catalog: Catalog,
  aliases: ReadonlyMap<string, string> = new Map()
): ((label: string) => ResolvedLabel | undefined) => {
  const byNormal = new Map<string, string | null>()
  for (const entry of catalog.entries) {
    const key = normalizeLabel(entry.name)
    byNormal.set(key, byNormal.has(key) ? null : entry.name)
  }
  return (label) => {
    if (catalog.byName.has(label)) return { plugin: label, via: "name" }
    const alias = aliases.get(label)
    if (alias !== undefined) return { plugin: alias, via: "alias" }
    const normal = byNormal.get(normalizeLabel(label))
    return normal == null ? undefined : { plugin: normal, via: "normalized" }
  }
}

/** Options of `evaluateQueries`. */
export interface QueriesOptions extends EvaluateOptions {
  /** Label → plugin name, tried after the exact name (see `labelResolver`). */
  readonly aliases?: ReadonlyMap<string, string> | undefined
}

/**
 * Ranks each labelled query with `ranking` against the whole catalog. Labels are resolved with
 * `labelResolver`; queries whose label names no discoverable plugin are left out of the figures
 * and reported. Fails when a fused ranking's embedder does.
 */
export const evaluateQueriesWith = (
  ranking: Ranking.Ranking,
  catalog: Catalog,
  queries: ReadonlyArray<LabelledQuery>,
  options: QueriesOptions = {}
): Effect.Effect<QueriesReport, EmbedderError> => {
  // A caller's bug throws here, not as the Effect's defect.
  const k = cutOff(options)
  return Effect.gen(function* () {
    const resolve = labelResolver(catalog, options.aliases)
    const outcomes: Array<Outcome> = []
    const unknown = new Map<string, { positions: Array<number>; reason: "unknown" | "silent" }>()
    const normalized = new Map<string, { plugin: string; via: "alias" | "normalized" }>()
    for (const [i, q] of queries.entries()) {
      const resolved = resolve(q.plugin)
      const name = resolved?.plugin
      const entry = name === undefined ? undefined : catalog.byName.get(name)
      if (name === undefined || entry === undefined || !entry.discoverable) {
        let u = unknown.get(q.plugin)
        if (u === undefined) {
          u = { positions: [], reason: entry === undefined ? "unknown" : "silent" }
          unknown.set(q.plugin, u)
        }
        u.positions.push(i)
        continue
      }
      if (resolved !== undefined && resolved.via !== "name") {
        normalized.set(q.plugin, { plugin: name, via: resolved.via })
      }
      outcomes.push(yield* outcomeOf(ranking, q.query, name, k))
      options.onProgress?.(i + 1, queries.length)
    }
    return {
      ...summarize(catalog, outcomes, k),
      unknownLabels: [...unknown].map(([plugin, u]) => ({ plugin, ...u })),
      normalizedLabels: [...normalized].map(([label, r]) => ({ label, ...r }))
    }
  })
}

/** `evaluateQueriesWith` the lexical ranking (`Ranking.lexical`, `CapabilityIndex`). */
export const evaluateQueries = (
  catalog: Catalog,
  queries: ReadonlyArray<LabelledQuery>,
  options: QueriesOptions = {}
): QueriesReport => Effect.runSync(evaluateQueriesWith(Ranking.lexical(catalog), catalog, queries, options))
