/**
 * What `CapabilityIndex.rank` keeps per built index: each query word's expansions and scored
 * postings, so that a word ranked before (a turn's preload, a `list_capabilities` query) is not
 * looked up, expanded and scored again (issue 37). A pure memo: an index never changes.
 */
import type { CapabilityIndex } from "./capabilityIndex.js"

/** A query word's matches in an index: its expansions, each with its weight and scored postings. */
export interface Expanded {
  /** No indexed document holds the word itself (it counts as `unseen` in the best score). */
  readonly unknown: boolean
  readonly matches: ReadonlyArray<{
    readonly weight: number
    readonly match: { readonly weight: number; readonly tfs: ReadonlyMap<number, number> }
  }>
}

/**
 * Scored postings (documents per kept word, summed) `rank` keeps per index before it starts
 * over: a few MB at most, however large the catalog (a common word of a large catalog holds
 * thousands of documents).
 */
const EXPANSIONS_KEPT = 100_000

/** The words kept for one index, and the scored postings they hold. */
export interface Kept {
  readonly words: Map<string, Expanded>
  size: number
}

// A pure memo of each query word's matches per built index (immutable, so they never change);
// `leaveOneOut`'s copies are other objects and rank without it.
const expansionsByIndex = new WeakMap<CapabilityIndex, Kept>()

/** The words kept for `index` (none yet for an index not ranked before). */
export const keptExpansions = (index: CapabilityIndex): Kept => {
  let kept = expansionsByIndex.get(index)
  if (kept === undefined) {
    kept = { words: new Map(), size: 0 }
    expansionsByIndex.set(index, kept)
  }
  return kept
}

/** Keeps `word`'s matches, starting over first when they would pass `EXPANSIONS_KEPT`. */
export const keep = (kept: Kept, word: string, expanded: Expanded): void => {
  let size = 1
  for (const { match } of expanded.matches) size += match.tfs.size
  if (kept.size + size > EXPANSIONS_KEPT) {
    kept.words.clear()
    kept.size = 0
  }
  kept.words.set(word, expanded)
  kept.size += size
}
