/**
 * The capability index's implementation (`CapabilityIndex` re-exports every name here and adds
 * `forCatalog`): built from entries or documents alone, so `CatalogIndex` can hold one without
 * importing the catalog.
 */
import { keep, keptExpansions } from "./capabilityIndexKept.js"
import type { CatalogEntry } from "./catalog/entry.js"

/** The text of one plugin the index ranks on. */
export interface CapabilityDocument {
  readonly name: string
  readonly title?: string | undefined
  readonly summary?: string | undefined
  readonly whenToUse?: ReadonlyArray<string> | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  /** The `user` messages of the manifest's examples. */
  readonly examples?: ReadonlyArray<string> | undefined
  /**
   * What each of the plugin's tools says it does (its name and description). A manifest names a
   * few of a server's tools; this field lets a request for any of them find the plugin.
   */
  readonly tools?: ReadonlyArray<string> | undefined
}

/** One ranked plugin: higher scores are more relevant; only positive scores are returned. */
export interface Ranked {
  readonly name: string
  readonly score: number
  /**
   * `score` as a share of the best score this query could reach, in [0, 1): that of a plugin
   * holding every query word in every field. Unlike `score`, which grows with the catalog (IDF),
   * it means the same in a one-plugin catalog as in a large one, so it suits a fixed
   * "relevant enough" threshold. A query word no plugin knows counts in the best score as a
   * word only one plugin holds, so an unexplained word lowers the share.
   */
  readonly relevance: number
}

/**
 * Fields, in index order. `label` is the set of words of the name and the title together: they
 * usually say the same thing ("weather" / "Weather"), and counting them twice would let the
 * label drown the other fields.
 */
const FIELDS = ["label", "summary", "whenToUse", "tags", "examples", "tools"] as const
const F = FIELDS.length
const LABEL = 0
const WHEN = 2
const EXAMPLES = 4
const TOOLS = 5

/**
 * BM25F parameters (weight and length normalisation per field, one saturation `K1`), chosen on
 * whole collections and never per query: a plateau where neighbouring values score within a
 * point on both the MetaTool benchmark (199 plugins, 2,089 dev queries; `pnpm bench ranking` and
 * `plugboard inspect examples/metatool --eval`) and the examples' catalog (leave-one-out over
 * its manifests' examples). `whenToUse` weighs as much as a summary word once: its entries are
 * trigger phrases written for routing, so a rare word found only there ("umbrella") must not
 * lose to a common one ("today") that another plugin repeats in every field.
 * Measured: MetaTool recall@1 0.465 / recall@5 0.683 as `inspect` builds it, 0.468 / 0.680 in
 * `pnpm bench ranking` (plain BM25 0.372 / 0.549); examples' catalog 0.985 / 1.000; 20 real MCP
 * servers (`pnpm bench realcatalog`) 0.802 / 0.921 (docs/benchmarks.md#a-real-catalog).
 */
const K1 = 3
/**
 * The tools field weighs least: its words are the tools' own, often the plugin's jargon, and a
 * server of 50 tools would otherwise outweigh a manifest written for routing. It is there so a
 * tool that no manifest field names can still be found (issue 36, item 19).
 */
const TOOLS_WEIGHT = 0.25
const WEIGHTS: ReadonlyArray<number> = [6, 2, 1, 2, 1.5, TOOLS_WEIGHT]
const B: ReadonlyArray<number> = [0.5, 0.2, 0.3, 0.3, 0.75, 0.75]
/**
 * How the fields of one document combine for one term: the best field counts fully, the others
 * at this fraction (a "dis-max" with tie-breaker). A plain BM25F sum lets a word a plugin
 * repeats in its summary, tags, whenToUse and examples ("today" in a clock) count as four
 * pieces of evidence and drown a rarer word that another plugin names once.
 */
const TIE = 0.5
/**
 * Query words are weighted by their IDF raised to this power: the document side already scales
 * by IDF, and weighting the query side too (as the vector-space model does, softened) lets a
 * rare word outweigh a common one.
 */
const IDF_POWER = 1.5
/**
 * A query word the index does not know is matched, at this fraction of its weight, against
 * indexed words it is a prefix of or that are a prefix of it (at least `PREFIX_MIN` letters):
 * "astrology" finds "astro", "crypto" finds "cryptocurrencies".
 */
const PREFIX_WEIGHT = 0.5
const PREFIX_MIN = 4
/**
 * A known query word of at least `EXTEND_MIN` letters also matches, at this fraction, the
 * indexed words it is a prefix of ("crypto" → "cryptocurrenc"): morphology a light stemmer
 * leaves apart.
 */
const EXTEND_WEIGHT = 0.3
const EXTEND_MIN = 5

interface Posting {
  /** Document indexes, ascending. */
  readonly docs: Array<number>
  /** Term frequency per field: `tfs[i * F + f]` for `docs[i]`. */
  readonly tfs: Array<number>
}

/** A built index. Immutable; share it freely. */
export interface CapabilityIndex {
  readonly names: ReadonlyArray<string>
  /** Field lengths in terms: `lengths[doc * F + f]`. */
  readonly lengths: Float64Array
  readonly totalLengths: ReadonlyArray<number>
  readonly postings: ReadonlyMap<string, Posting>
  /** Terms of each example of each document, kept for `leaveOneOut`. */
  readonly exampleTerms: ReadonlyArray<ReadonlyArray<ReadonlyMap<string, number>>>
  /** Set by `leaveOneOut`: this document's example does not count. */
  readonly excluded?: { readonly doc: number; readonly example: number } | undefined
}

// ---------------------------------------------------------------------------------------------
// Text

const STOP = new Set(
  (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its " +
    "me my no not of on or our please she he so some such than that the their them then there these they this " +
    "those to too us was we were what when where which while who whom why will with would you your yours " +
    "let lets just also any about am " +
    // Conversational filler: frequent in what users type, says nothing about which plugin.
    "need want looking like know tell give provide some more hi hey thanks kindly interested curious wondering"
  ).split(" ")
)

const ACRONYM_PLURAL = /([A-Z]{2,})s\b/g
const HAS_UPPER = /\p{Lu}/u
const CAMEL = /([a-z0-9])([A-Z])|([A-Z]+)([A-Z][a-z])/g
const WORD = /[\p{L}\p{N}]+/gu

/** Lower-cased words of `text`, split on case changes, punctuation, `_` and `-`; no stemming. */
export const words = (text: string): Array<string> => {
  if (!HAS_UPPER.test(text)) return text.match(WORD) ?? []
  const split = text
    .replace(ACRONYM_PLURAL, "$1")
    .replace(CAMEL, (_m, a, b, c, d) => (a !== undefined ? `${a} ${b}` : `${c} ${d}`))
  return split.toLowerCase().match(WORD) ?? []
}

const VOWEL = /[aeiouy]/
const hasVowel = (s: string): boolean => VOWEL.test(s)
const DOUBLE = /([bdfgmnprt])\1$/

/**
 * A light English stemmer: inflections (plural, -ing, -ed, possessive) and a few derivational
 * suffixes (-ation, -ness, -ment, -ly, -er, -ize), then a final `e`/`y` normalisation, so that
 * `create`, `creating`, `creation` and `creates` share the stem `creat`. Words of three letters
 * or fewer and digits are kept as they are.
 */
export const stem = (word: string): string => {
  let w = word
  if (w.length <= 3 || !/^[a-z]+$/.test(w)) return w
  if (w.endsWith("'s")) w = w.slice(0, -2)
  // Plurals and third person.
  if (w.endsWith("sses")) w = w.slice(0, -2)
  else if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`
  else if (w.endsWith("s") && !/(ss|us|is)$/.test(w) && w.length > 3) w = w.slice(0, -1)
  // Inflections.
  for (const suffix of ["ing", "ed"]) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 3 && hasVowel(w.slice(0, -suffix.length))) {
      w = w.slice(0, -suffix.length)
      if (DOUBLE.test(w)) w = w.slice(0, -1)
      break
    }
  }
  // A few derivational endings, only where enough of a word remains to stay distinctive.
  for (const [suffix, replacement] of DERIVATIONAL) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 4) {
      w = w.slice(0, -suffix.length) + replacement
      break
    }
  }
  if (w.endsWith("e") && w.length > 4) w = w.slice(0, -1)
  if (w.endsWith("y") && w.length > 3 && !/[aeiou]y$/.test(w)) w = `${w.slice(0, -1)}i`
  return w
}

const DERIVATIONAL: ReadonlyArray<readonly [string, string]> = [
  ["izations", "ize"],
  ["ization", "ize"],
  ["ational", "ate"],
  ["fulness", "ful"],
  ["iveness", "ive"],
  ["ations", "ate"],
  ["ation", "ate"],
  ["ition", "it"],
  ["ness", ""],
  ["ment", ""],
  ["ically", "ic"],
  ["ical", "ic"],
  ["ally", "al"],
  ["ly", ""],
  ["izer", "ize"],
  ["ize", ""],
  ["ise", ""],
  ["ers", ""],
  ["er", ""],
  ["ion", ""]
]

// Catalog text repeats the same few thousand words; stemming each once saves most of a build.
// A pure memo of `stem` (keyed on the word, bounded), not state of any catalog.
const stems = new Map<string, string>()
const STEM_CACHE_MAX = 100_000

const stemCached = (w: string): string => {
  let s = stems.get(w)
  if (s === undefined) {
    if (stems.size >= STEM_CACHE_MAX) stems.clear()
    s = stem(w)
    stems.set(w, s)
  }
  return s
}

/** The index terms of `text`: words without stop words, stemmed. */
export const tokenize = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const w of words(text)) {
    if (STOP.has(w) || (w.length === 1 && !(w >= "0" && w <= "9"))) continue
    out.push(stemCached(w))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Building

/** The document a catalog entry is ranked by: its name and its manifest's prose. */
export const documentOf = (entry: CatalogEntry): CapabilityDocument => ({
  name: entry.name,
  title: entry.manifest.title,
  summary: entry.manifest.summary,
  whenToUse: entry.manifest.whenToUse,
  tags: entry.manifest.tags,
  examples: entry.manifest.examples?.map((e) => e.user),
  tools: entry.tools.filter((t) => t.visibility !== "silent").map(toolText)
})

/** A tool as the tools field reads it: the words of its own name, then its description. */
const toolText = (tool: CatalogEntry["tools"][number]): string =>
  `${tool.tool.name.replace(/[_\-.]+/g, " ")} ${tool.tool.description}`

/** Anything holding catalog entries, such as a `Catalog`. */
type HasEntries = { readonly entries: ReadonlyArray<CatalogEntry> }

const isCatalog = (input: unknown): input is HasEntries =>
  typeof input === "object" && input !== null && "entries" in input && "byName" in input

const isEntry = (input: CatalogEntry | CapabilityDocument): input is CatalogEntry =>
  "manifest" in input && "discoverable" in input

/** Adds the terms of `texts` to field `f` of `counts` (term → per-field frequencies); returns their number. */
const countTerms = (texts: ReadonlyArray<string>, f: number, counts: Map<string, Array<number>>): number => {
  let length = 0
  for (const text of texts) {
    for (const t of tokenize(text)) {
      let c = counts.get(t)
      if (c === undefined) {
        c = new Array<number>(F).fill(0)
        counts.set(t, c)
      }
      c[f]!++
      length++
    }
  }
  return length
}

/**
 * Builds an index. Given a catalog or catalog entries, only discoverable (non-silent) plugins
 * are indexed: the ranking must never reveal a silent plugin. Documents are indexed as given.
 */
export const make = (
  input: HasEntries | ReadonlyArray<CatalogEntry | CapabilityDocument>
): CapabilityIndex => {
  const items = isCatalog(input) ? input.entries : input
  const documents: Array<CapabilityDocument> = []
  for (const item of items) {
    if (isEntry(item)) {
      if (item.discoverable) documents.push(documentOf(item))
    } else documents.push(item)
  }
  const names = documents.map((d) => d.name)
  const lengths = new Float64Array(documents.length * F)
  const totalLengths = new Array<number>(F).fill(0)
  const postings = new Map<string, Posting>()
  const exampleTerms: Array<Array<Map<string, number>>> = []
  const at = (d: number, f: number) => d * F + f
  documents.forEach((doc, d) => {
    const counts = new Map<string, Array<number>>()
    countTerms(doc.title === undefined ? [doc.name] : [doc.name, doc.title], LABEL, counts)
    for (const c of counts.values()) c[LABEL] = 1
    lengths[at(d, LABEL)] = counts.size
    lengths[at(d, 1)] = countTerms(doc.summary === undefined ? [] : [doc.summary], 1, counts)
    lengths[at(d, WHEN)] = countTerms(doc.whenToUse ?? [], WHEN, counts)
    // A trigger word says the same thing however many entries repeat it.
    for (const c of counts.values()) if (c[WHEN]! > 1) c[WHEN] = 1
    lengths[at(d, 3)] = countTerms(doc.tags ?? [], 3, counts)
    lengths[at(d, TOOLS)] = countTerms(doc.tools ?? [], TOOLS, counts)
    const examples = (doc.examples ?? []).map((text) => {
      const m = new Map<string, number>()
      for (const t of tokenize(text)) m.set(t, (m.get(t) ?? 0) + 1)
      return m
    })
    for (const m of examples) {
      for (const [t, n] of m) {
        let c = counts.get(t)
        if (c === undefined) {
          c = new Array<number>(F).fill(0)
          counts.set(t, c)
        }
        c[EXAMPLES]! += n
        lengths[at(d, EXAMPLES)]! += n
      }
    }
    exampleTerms.push(examples)
    for (let f = 0; f < F; f++) totalLengths[f]! += lengths[at(d, f)]!
    for (const [t, c] of counts) {
      let p = postings.get(t)
      if (p === undefined) {
        p = { docs: [], tfs: [] }
        postings.set(t, p)
      }
      p.docs.push(d)
      for (let f = 0; f < F; f++) p.tfs.push(c[f]!)
    }
  })
  return { names, lengths, totalLengths, postings, exampleTerms }
}

/**
 * The same index as if example `exampleIndex` of plugin `name` had never been written: that
 * example's terms leave the plugin's examples field, the field's length statistics and the
 * document frequencies. Cheap (no rebuild); for leave-one-out routing evaluation. Throws a
 * `RangeError` naming the plugin when there is no such example.
 */
export const leaveOneOut = (index: CapabilityIndex, name: string, exampleIndex: number): CapabilityIndex => {
  const doc = index.names.indexOf(name)
  if (doc < 0) throw new RangeError(`CapabilityIndex.leaveOneOut: no plugin '${name}' in the index.`)
  const count = index.exampleTerms[doc]!.length
  if (!Number.isInteger(exampleIndex) || exampleIndex < 0 || exampleIndex >= count) {
    throw new RangeError(
      `CapabilityIndex.leaveOneOut: plugin '${name}' has ${count} example(s); there is no example ${exampleIndex}.`
    )
  }
  return { ...index, excluded: { doc, example: exampleIndex } }
}

// ---------------------------------------------------------------------------------------------
// Ranking

/** Options of `rank`. */
export interface RankOptions {
  /** At most this many results (default: all with a positive score). */
  readonly limit?: number | undefined
}

/** The example `leaveOneOut` removed, with what it takes away. */
interface Removal {
  readonly doc: number
  readonly terms: ReadonlyMap<string, number>
  readonly length: number
}

const removalOf = (index: CapabilityIndex): Removal | undefined => {
  const excluded = index.excluded
  if (excluded === undefined) return undefined
  const terms = index.exampleTerms[excluded.doc]![excluded.example]!
  let length = 0
  for (const c of terms.values()) length += c
  return { doc: excluded.doc, terms, length }
}

/** Document frequency of a posting, less the excluded example's document if only it held the term. */
const documentFrequency = (p: Posting, term: string, removal: Removal | undefined): number => {
  const removed = removal?.terms.get(term) ?? 0
  if (removal === undefined || removed === 0) return p.docs.length
  const i = p.docs.indexOf(removal.doc)
  let held = 0
  for (let f = 0; f < F; f++) held += p.tfs[i * F + f]!
  return held === removed ? p.docs.length - 1 : p.docs.length
}

// A pure memo of the postings' sorted keys: a built index never changes, and `leaveOneOut`'s
// copies share their postings, so they share this too.
const sortedTerms = new WeakMap<ReadonlyMap<string, Posting>, ReadonlyArray<string>>()

/** Indexed words that extend `term` or that `term` extends (see `PREFIX_WEIGHT`). */
const prefixMatches = (index: CapabilityIndex, term: string): Array<string> => {
  let terms = sortedTerms.get(index.postings)
  if (terms === undefined) {
    terms = [...index.postings.keys()].sort()
    sortedTerms.set(index.postings, terms)
  }
  const out: Array<string> = []
  let lo = 0
  let hi = terms.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (terms[mid]! < term) lo = mid + 1
    else hi = mid
  }
  for (let i = lo; i < terms.length && terms[i]!.startsWith(term); i++) out.push(terms[i]!)
  for (let n = PREFIX_MIN; n < term.length; n++) {
    const prefix = term.slice(0, n)
    if (index.postings.has(prefix)) out.push(prefix)
  }
  return out
}

/** BM25's IDF of a term held by `df` of `n` documents. */
const idfOf = (n: number, df: number): number => Math.log(1 + (n - df + 0.5) / (df + 0.5))

/**
 * Ranks plugins by BM25F relevance to `query`, best first; ties broken by name so the order is
 * deterministic. Plugins sharing no word with the query are left out.
 */
export const rank = (index: CapabilityIndex, query: string, options: RankOptions = {}): Array<Ranked> => {
  const n = index.names.length
  if (n === 0) return []
  const removal = removalOf(index)
  const avg = index.totalLengths.map((total, f) =>
    Math.max((f === EXAMPLES && removal !== undefined ? total - removal.length : total) / n, 1e-9)
  )
  const known = (term: string): Posting | undefined => {
    const p = index.postings.get(term)
    return p !== undefined && documentFrequency(p, term, removal) > 0 ? p : undefined
  }
  // A word no plugin uses counts as if one did: its real rarity is unknown, and BM25's IDF at
  // df = 0 would make it outweigh every known word the more, the smaller the catalog.
  const unseen = idfOf(n, 1) ** IDF_POWER

  // Each query word adds its query weight times each document's saturated field frequency;
  // `best` sums, per query word, the most any document could get from it.
  const scores = new Map<number, number>()
  let best = 0
  const matches = new Map<string, { readonly weight: number; readonly tfs: ReadonlyMap<number, number> }>()
  const match = (term: string) => {
    let m = matches.get(term)
    if (m === undefined) {
      m = termMatches(index, term, known(term)!, removal, avg)
      matches.set(term, m)
    }
    return m
  }
  // A word the query repeats adds the same each time: each distinct word is scored once and
  // weighted by its count (in order of first use, so a query without repeats sums exactly as
  // word by word). Scored per occurrence, a runaway query repeating a common word cost a pass
  // over every plugin holding it per repeat: seconds for one call at 5,000 plugins.
  const counts = new Map<string, number>()
  for (const t of tokenize(query)) counts.set(t, (counts.get(t) ?? 0) + 1)
  // What a word matches depends on the index alone (no example left out): kept per index, so a
  // word users keep asking with ("weather") is looked up, expanded and scored against the
  // postings once, not on every turn's preload and every `list_capabilities` query.
  const kept = removal === undefined ? keptExpansions(index) : undefined
  for (const [t, count] of counts) {
    let expanded = kept?.words.get(t)
    if (expanded === undefined) {
      const expansions: Array<readonly [string, number]> = []
      if (known(t) !== undefined) {
        expansions.push([t, 1])
        if (t.length >= EXTEND_MIN)
          for (const m of prefixMatches(index, t))
            if (m !== t && known(m)) expansions.push([m, EXTEND_WEIGHT])
      } else if (t.length >= PREFIX_MIN) {
        for (const m of prefixMatches(index, t)) if (known(m)) expansions.push([m, PREFIX_WEIGHT])
      }
      expanded = {
        unknown: known(t) === undefined,
        matches: expansions.map(([term, weight]) => ({ weight, match: match(term) }))
      }
      if (kept !== undefined) keep(kept, t, expanded)
    }
    let most = expanded.unknown ? unseen : 0
    for (const { weight, match: m } of expanded.matches) {
      const w = weight * m.weight
      most = Math.max(most, w)
      for (const [d, tf] of m.tfs) scores.set(d, (scores.get(d) ?? 0) + count * ((w * tf) / (K1 + tf)))
    }
    best += count * most
  }

  const ranked: Array<Ranked> = []
  for (const [d, score] of scores) ranked.push({ name: index.names[d]!, score, relevance: score / best })
  ranked.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const limit = options.limit
  return limit === undefined ? ranked : ranked.slice(0, Math.max(0, Math.floor(limit)))
}

/**
 * One indexed term against every document holding it: its query weight (IDF to `IDF_POWER`)
 * and, per document, its fields' weighted, length-normalised frequencies combined by dis-max
 * (`TIE`), before saturation.
 */
const termMatches = (
  index: CapabilityIndex,
  term: string,
  p: Posting,
  removal: Removal | undefined,
  avg: ReadonlyArray<number>
): { readonly weight: number; readonly tfs: Map<number, number> } => {
  const n = index.names.length
  const weight = idfOf(n, documentFrequency(p, term, removal)) ** IDF_POWER
  const removed = removal?.terms.get(term) ?? 0
  const tfs = new Map<number, number>()
  for (let i = 0; i < p.docs.length; i++) {
    const d = p.docs[i]!
    let sum = 0
    let max = 0
    for (let f = 0; f < F; f++) {
      let raw = p.tfs[i * F + f]!
      let len = index.lengths[d * F + f]!
      if (f === EXAMPLES && removal !== undefined && d === removal.doc) {
        raw -= removed
        len -= removal.length
      }
      if (raw <= 0) continue
      const x = (WEIGHTS[f]! * raw) / (1 - B[f]! + (B[f]! * len) / avg[f]!)
      sum += x
      if (x > max) max = x
    }
    if (sum > 0) tfs.set(d, max + TIE * (sum - max))
  }
  return { weight, tfs }
}

// ---------------------------------------------------------------------------------------------
// Closest names (for "did you mean")

const levenshtein = (a: string, b: string): number => {
  if (a === b) return 0
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    prev = cur
  }
  return prev[b.length]!
}

/**
 * Similarity of two names in [0, 2]: normalised edit distance of the lower-cased names (with
 * `_`, `-` and spaces ignored) plus the overlap (Jaccard) of their stemmed words, so that both
 * a typo (`wether`) and a reordering or partial name (`weather forecast`) find the right name.
 */
export const nameSimilarity = (a: string, b: string): number => {
  const flatA = words(a).join("")
  const flatB = words(b).join("")
  const longest = Math.max(flatA.length, flatB.length, 1)
  const edit = 1 - levenshtein(flatA, flatB) / longest
  const wa = new Set(words(a).map(stem))
  const wb = new Set(words(b).map(stem))
  let shared = 0
  for (const w of wa) if (wb.has(w)) shared++
  const union = wa.size + wb.size - shared
  return edit + (union === 0 ? 0 : shared / union)
}

/** The `n` candidates most similar to `input` (best first, ties by name). */
export const closestNames = (input: string, candidates: Iterable<string>, n: number): Array<string> => {
  const scored: Array<{ name: string; score: number }> = []
  for (const name of candidates) scored.push({ name, score: nameSimilarity(input, name) })
  scored.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return scored.slice(0, Math.max(0, n)).map((s) => s.name)
}
