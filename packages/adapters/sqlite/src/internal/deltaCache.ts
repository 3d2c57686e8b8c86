/**
 * What a SQLite saver keeps of its threads' delta histories between reads: the decoded history,
 * and the undecoded items with the values pages decoded (docs/benchmarks.md#history-pages).
 */
import type { CheckpointPendingWrite } from "@langchain/langgraph-checkpoint"
import type { DeltaItem, DeltaItemSource } from "../DeltaItems.js"

/** A decoded delta history: `seed` (when `hasSeed`) and the writes after it, at checkpoint `id`. */
export interface CachedHistory {
  readonly id: string
  readonly hasSeed: boolean
  readonly seed: unknown
  readonly writes: Array<CheckpointPendingWrite>
}

/**
 * Threads (per channel and namespace) whose decoded delta history a saver keeps. A saver is one
 * user's (`UserDatabaseRegistry` keeps a few hundred), and a user talks in a few sessions at once.
 */
export const DELTA_CACHE_THREADS = 8

/** A delta channel's items at checkpoint `id`, undecoded (`deltaItems`): the seed's, then the writes'. */
export interface CachedItems {
  readonly id: string
  readonly seed: ReadonlyArray<DeltaItem>
  readonly writes: ReadonlyArray<DeltaItem>
  /**
   * Stored values pages decoded, by where they are stored (`storedAt`): the next read of a page
   * decodes nothing. Carried from checkpoint to checkpoint (a stored value never changes).
   */
  readonly values: Map<string, unknown>
}

/** Decoded values a thread's cached items keep at most (about 500 turns of four messages). */
export const MAX_CACHED_VALUES = 2000

/** The stored row (a write, or an element of a seed) an item's value is in. */
export const storedAt = (s: DeltaItemSource): string =>
  s.at === "seed"
    ? `s\u0000${s.checkpoint}\u0000${s.index}`
    : `w\u0000${s.checkpoint}\u0000${s.task}\u0000${s.idx}`

/** The key of a thread's channel in a namespace. */
export const deltaKey = (thread: string, ns: string, channel: string) =>
  `${thread}\u0000${ns}\u0000${channel}`

/** Keeps `value` as the newest entry of `cache`, which holds `DELTA_CACHE_THREADS` at most. */
export const rememberIn = <V>(cache: Map<string, V>, key: string, value: V): void => {
  cache.delete(key)
  cache.set(key, value)
  if (cache.size > DELTA_CACHE_THREADS) cache.delete(cache.keys().next().value as string)
}
