/**
 * "Did you mean" over a large, fixed list of names, ranked like `CapabilityIndex.closestNames`
 * (same score, same order) without scoring every name on every query.
 *
 * The score is `edit + jaccard` (see `CapabilityIndex.nameSimilarity`). The index keeps, per
 * name, its flattened form, its stemmed-word count and word → names postings, so a query gets
 * the exact Jaccard part of every name by walking only the postings of its own words. Each name
 * then has cheap upper bounds (Jaccard plus the best edit similarity its length, then its
 * letters, allow); a name whose bound cannot beat the current n-th best is skipped, and the edit
 * distance itself stops once the name cannot make the top n. Names sharing no word score at
 * most 1, so they are looked at only while the n-th best is at most 1, those sharing uncommon
 * letter pairs with the input first. A query's work is capped (`MAX_WORK`): below the cap the
 * result is exactly `closestNames`' (property-tested), above it the most promising names have
 * been scored, which keeps a hallucinated tool name cheap on a 15,000-tool catalog.
 */
import { stem, words } from "./capabilityIndex.js"

/**
 * Inputs longer than this get no "did you mean" (callers skip `closestIn`): no tool or plugin
 * name a model could mean is that long, and scoring costs time in proportion to the input's
 * length. `Offer.gate` (tool names) and `MetaTools.loadCapability` (plugin names) share it.
 */
export const MAX_SCORED_LENGTH = 128

/** A precomputed "did you mean" index over a list of distinct names. */
export interface NameIndex {
  readonly names: ReadonlyArray<string>
  /** `words(name).join("")`: what the edit distance compares. */
  readonly flat: ReadonlyArray<string>
  /** Size of the name's stemmed word set (the Jaccard denominator). */
  readonly wordCount: Int32Array
  /** Stemmed word → the names (indices) holding it. */
  readonly postings: ReadonlyMap<string, Int32Array>
  /** Flat length → the names (indices) of that length, for the no-shared-word pass. */
  readonly byLength: ReadonlyMap<number, Int32Array>
  readonly lengths: ReadonlyArray<number>
  readonly has: ReadonlySet<string>
  /** Two-character piece of a flat name → the names (indices) holding it; built on first use. */
  readonly pairs: () => ReadonlyMap<string, Int32Array>
}

const stemSet = (name: string): Set<string> => new Set(words(name).map(stem))

const push = <K>(map: Map<K, Array<number>>, key: K, i: number) => {
  const list = map.get(key)
  if (list === undefined) map.set(key, [i])
  else list.push(i)
}

const frozen = <K>(lists: Map<K, Array<number>>): Map<K, Int32Array> => {
  const out = new Map<K, Int32Array>()
  for (const [key, list] of lists) out.set(key, Int32Array.from(list))
  return out
}

/** Builds the index of `names` (duplicates are kept once). */
export const makeNameIndex = (input: Iterable<string>): NameIndex => {
  const has = new Set(input)
  const names = [...has]
  const flat: Array<string> = new Array(names.length)
  const wordCount = new Int32Array(names.length)
  const postingLists = new Map<string, Array<number>>()
  const lengthLists = new Map<number, Array<number>>()
  // Tool names repeat their words ("get", "list", a vendor's name): stem each once.
  const stems = new Map<string, string>()
  names.forEach((name, i) => {
    const ws = words(name)
    const f = ws.join("")
    flat[i] = f
    const own = new Set<string>()
    for (const w of ws) {
      let s = stems.get(w)
      if (s === undefined) {
        s = stem(w)
        stems.set(w, s)
      }
      own.add(s)
    }
    wordCount[i] = own.size
    for (const w of own) push(postingLists, w, i)
    push(lengthLists, f.length, i)
  })
  const byLength = frozen(lengthLists)
  const lengths = [...byLength.keys()].sort((a, b) => a - b)
  // Only queries sharing no word with any good name need letter pairs: built then, once.
  let pairs: Map<string, Int32Array> | undefined
  const pairsOnce = () => {
    if (pairs === undefined) {
      const pairLists = new Map<string, Array<number>>()
      flat.forEach((f, i) => {
        const own = new Set<string>()
        for (let j = 0; j + 2 <= f.length; j++) own.add(f.slice(j, j + 2))
        for (const pair of own) push(pairLists, pair, i)
      })
      pairs = frozen(pairLists)
    }
    return pairs
  }
  return { names, flat, wordCount, postings: frozen(postingLists), byLength, lengths, has, pairs: pairsOnce }
}

interface Scored {
  readonly name: string
  readonly score: number
}

/** Best-first order of `closestNames`: higher score, then name. */
const before = (a: Scored, b: Scored): boolean =>
  a.score > b.score || (a.score === b.score && a.name < b.name)

let scoredNames = 0

/**
 * How many names `closestIn` has scored with an edit distance since the process started: lets
 * tests assert that a query's work is bounded, whatever the index's size.
 */
export const scoredNameCount = (): number => scoredNames

// Scratch buffers, grown on demand and reused: a query allocates almost nothing.
let rowA = new Int32Array(130)
let rowB = new Int32Array(130)
let shared = new Int32Array(0)
let pairHits = new Int32Array(0)
/**
 * Work (about one unit per character comparison) one query may spend on large indices: the
 * exact search is kept while it fits, which it does for any catalog of a few hundred tools; past
 * it, the most promising names (most shared words, then most shared rare letter pairs, then
 * nearest lengths) have been scored and the rest are not.
 */
const MAX_WORK = 25_000
const BOUND_BUCKETS = 64
const AFFIX_TIERS = 16
/** Letter pairs held by more names than this (and 1/32 of the index) say little: not walked. */
const COMMON_PAIR = 256
const BUCKETS = 128
const queryBag = new Int32Array(BUCKETS)
const bag = new Int32Array(BUCKETS)

/** Levenshtein distance of `a` and `b` when it is at most `max`, else some value above `max`. */
const boundedLevenshtein = (a: string, b: string, max: number): number => {
  const la = a.length
  const lb = b.length
  if (Math.abs(la - lb) > max) return max + 1
  if (lb + 1 > rowA.length) {
    rowA = new Int32Array(lb + 1)
    rowB = new Int32Array(lb + 1)
  }
  let prev = rowA
  let cur = rowB
  for (let j = 0; j <= lb; j++) prev[j] = j
  for (let i = 1; i <= la; i++) {
    cur[0] = i
    let rowMin = i
    const ca = a.charCodeAt(i - 1)
    for (let j = 1; j <= lb; j++) {
      const sub = prev[j - 1]! + (ca === b.charCodeAt(j - 1) ? 0 : 1)
      const del = prev[j]! + 1
      const ins = cur[j - 1]! + 1
      const v = Math.min(sub, del, ins)
      cur[j] = v
      if (v < rowMin) rowMin = v
    }
    // Every later row is at least this row's minimum: the distance already exceeds `max`.
    if (rowMin > max) return max + 1
    const t = prev
    prev = cur
    cur = t
  }
  return prev[lb]!
}

/**
 * A lower bound of the edit distance from the query (its character counts in `queryBag`, length
 * `lq`) to `b`: the characters one has that the other lacks. Characters share buckets by code
 * modulo 128, which can only lower the bound.
 */
const bagDistance = (lq: number, b: string): number => {
  bag.set(queryBag)
  let missing = 0
  let left = lq
  for (let j = 0; j < b.length; j++) {
    const c = b.charCodeAt(j) & (BUCKETS - 1)
    if (bag[c]! > 0) {
      bag[c]!--
      left--
    } else missing++
  }
  return Math.max(left, missing)
}

/**
 * The names sharing no word with the input (`shared` is 0): first those sharing the most
 * uncommon letter pairs with it, then by nearest length, while `budget` lasts and a length's
 * bound (`lengthOpen`) can still enter the top.
 */
const noSharedWord = (
  index: NameIndex,
  flatQ: string,
  lq: number,
  budget: number,
  consider: (name: string, flat: string, jac: number) => number,
  lengthOpen: (bound: number) => boolean
): void => {
  const count = index.names.length
  if (pairHits.length < count) pairHits = new Int32Array(count)
  const hit: Array<number> = []
  const common = Math.max(COMMON_PAIR, count / 32)
  const walked = new Set<string>()
  const pairs = index.pairs()
  for (let j = 0; j + 2 <= lq; j++) {
    const pair = flatQ.slice(j, j + 2)
    if (walked.has(pair)) continue
    walked.add(pair)
    const list = pairs.get(pair)
    if (list === undefined || list.length > common) continue
    for (let p = 0; p < list.length; p++) {
      const i = list[p]!
      if (shared[i] !== 0) continue
      if (pairHits[i] === 0) hit.push(i)
      pairHits[i]!++
    }
  }
  try {
    const byCount: Array<Array<number>> = []
    for (const i of hit) {
      const c = pairHits[i]!
      const list = byCount[c]
      if (list === undefined) byCount[c] = [i]
      else list.push(i)
    }
    for (let c = byCount.length - 1; c >= 1 && budget > 0; c--) {
      for (const i of byCount[c] ?? []) {
        budget -= consider(index.names[i]!, index.flat[i]!, 0)
        if (budget <= 0) break
      }
    }
    const lengths = index.lengths
    let hi = lengths.findIndex((len) => len >= lq)
    if (hi === -1) hi = lengths.length
    let lo = hi - 1
    while (budget > 0 && (lo >= 0 || hi < lengths.length)) {
      const takeHi = lo < 0 || (hi < lengths.length && lengths[hi]! - lq <= lq - lengths[lo]!)
      const len = takeHi ? lengths[hi++]! : lengths[lo--]!
      // Lengths further away only lower the bound.
      if (!lengthOpen(1 - Math.abs(lq - len) / Math.max(lq, len, 1))) {
        if (takeHi) hi = lengths.length
        else lo = -1
        continue
      }
      for (const i of index.byLength.get(len)!) {
        if (shared[i] !== 0 || pairHits[i] !== 0) continue
        budget -= consider(index.names[i]!, index.flat[i]!, 0)
        if (budget <= 0) break
      }
    }
  } finally {
    for (const i of hit) pairHits[i] = 0
  }
}

/**
 * The `n` names of `index` and `extra` most similar to `input`, best first, ties by name:
 * exactly `CapabilityIndex.closestNames(input, [...index.names, ...extra], n)`.
 */
export const closestIn = (
  index: NameIndex,
  input: string,
  n: number,
  extra: Iterable<string> = []
): Array<string> => {
  const k = Math.max(0, Math.floor(n))
  if (k === 0) return []
  const flatQ = words(input).join("")
  const lq = flatQ.length
  const queryWords = stemSet(input)
  const qSize = queryWords.size
  queryBag.fill(0)
  for (let j = 0; j < lq; j++) queryBag[flatQ.charCodeAt(j) & (BUCKETS - 1)]!++

  const top: Array<Scored> = []
  const offer = (s: Scored) => {
    if (top.length === k && !before(s, top[k - 1]!)) return
    let at = top.length === k ? k - 1 : top.length
    while (at > 0 && before(s, top[at - 1]!)) {
      top[at] = top[at - 1]!
      at--
    }
    top[at] = s
  }
  /** False when a name bounded by `bound` cannot enter the top `k`. */
  const canEnter = (bound: number, name: string): boolean => {
    if (top.length < k) return true
    const worst = top[k - 1]!
    return bound > worst.score || (bound === worst.score && name < worst.name)
  }
  /**
   * Scores `name` (flat form `flatB`, Jaccard `jac`) exactly unless a bound rules it out;
   * returns the work spent (character comparisons, roughly).
   */
  const consider = (name: string, flatB: string, jac: number): number => {
    const lb = flatB.length
    const longest = Math.max(lq, lb, 1)
    if (!canEnter(1 - Math.abs(lq - lb) / longest + jac, name)) return 1
    if (!canEnter(1 - bagDistance(lq, flatB) / longest + jac, name)) return lb + 16
    // Largest distance that could still enter, with slack for rounding.
    const max = top.length < k ? longest : Math.max(0, Math.ceil((1 + jac - top[k - 1]!.score) * longest) + 1)
    scoredNames++
    const d = boundedLevenshtein(flatQ, flatB, max)
    const score = 1 - d / longest + jac
    // Beyond max, `score` is an upper bound, below the n-th best.
    if (d <= max) offer({ name, score })
    return lb + 16 + lq * lb
  }

  // Names outside the index (offered or per-request tools): few, scored directly.
  const seen = new Set<string>()
  for (const name of extra) {
    if (index.has.has(name) || seen.has(name)) continue
    seen.add(name)
    const ws = stemSet(name)
    let common = 0
    for (const w of ws) if (queryWords.has(w)) common++
    const union = qSize + ws.size - common
    consider(name, words(name).join(""), union === 0 ? 0 : common / union)
  }

  // Names sharing a word with the input, highest bound first (bounds bucketed, not sorted).
  const count = index.names.length
  if (shared.length < count) shared = new Int32Array(count)
  const touched: Array<number> = []
  for (const w of queryWords) {
    const list = index.postings.get(w)
    if (list === undefined) continue
    for (let p = 0; p < list.length; p++) {
      const i = list[p]!
      if (shared[i] === 0) touched.push(i)
      shared[i]!++
    }
  }
  let budget = MAX_WORK
  try {
    // Buckets by upper bound (so whole buckets can be skipped), each split by how much of the
    // name's start and end match the input's (a cheap guess of its edit similarity), best first.
    const buckets: Array<Array<Array<number>>> = []
    const jaccard = (i: number) => shared[i]! / (qSize + index.wordCount[i]! - shared[i]!)
    for (const i of touched) {
      const f = index.flat[i]!
      const len = f.length
      const longest = Math.max(lq, len, 1)
      const bound = 1 - Math.abs(lq - len) / longest + jaccard(i)
      const b = Math.min(BOUND_BUCKETS - 1, Math.floor((bound / 2) * BOUND_BUCKETS))
      const shortest = Math.min(lq, len)
      let prefix = 0
      while (prefix < shortest && flatQ.charCodeAt(prefix) === f.charCodeAt(prefix)) prefix++
      let suffix = 0
      while (
        suffix < shortest - prefix &&
        flatQ.charCodeAt(lq - 1 - suffix) === f.charCodeAt(len - 1 - suffix)
      )
        suffix++
      const guess = Math.min(AFFIX_TIERS - 1, Math.floor(((prefix + suffix) / longest) * AFFIX_TIERS))
      const tiers = buckets[b] ?? []
      buckets[b] = tiers
      const list = tiers[guess]
      if (list === undefined) tiers[guess] = [i]
      else list.push(i)
    }
    for (let b = BOUND_BUCKETS - 1; b >= 0 && budget > 0; b--) {
      const tiers = buckets[b]
      if (tiers === undefined) continue
      // Every bound in this bucket is below its upper edge: nothing here or lower can enter.
      if (top.length === k && ((b + 1) / BOUND_BUCKETS) * 2 < top[k - 1]!.score) break
      for (let t = tiers.length - 1; t >= 0 && budget > 0; t--) {
        for (const i of tiers[t] ?? []) {
          budget -= consider(index.names[i]!, index.flat[i]!, jaccard(i))
          if (budget <= 0) break
        }
      }
    }
    // Names sharing no word score at most their edit similarity, at most 1: those sharing the
    // most rare-enough letter pairs with the input first, then the nearest lengths.
    if (budget > 0 && (top.length < k || top[k - 1]!.score <= 1)) {
      noSharedWord(
        index,
        flatQ,
        lq,
        budget,
        consider,
        (bound) => top.length < k || bound >= top[k - 1]!.score
      )
    }
  } finally {
    for (const i of touched) shared[i] = 0
  }
  return top.map((s) => s.name)
}
