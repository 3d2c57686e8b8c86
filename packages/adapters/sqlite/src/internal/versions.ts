/** Channel versions as the SQLite saver mints and stores them. */
import type { ChannelVersions } from "@langchain/langgraph-checkpoint"

/**
 * Versions as text, the key blobs are stored under (a number and its string must match the
 * same blob, and SQLite compares by type).
 */
export const versionsText = (versions: ChannelVersions): string => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(versions)) out[k] = String(v)
  return JSON.stringify(out)
}

/**
 * The next version of a channel: `floor(current) + 1` plus a random fraction in (0, 1).
 *
 * Why not the base class's `current + 1`: two writers continuing from the same checkpoint (two
 * concurrent turns on one thread, or a fork from an earlier `checkpoint_id`) would both mint
 * the same version, so their values would share one blob key and one branch would read the
 * other's messages. LangGraph's Postgres savers mint `<counter>.<random>` for this reason (Python
 * `f"{v:032}.{random():016}"`, langgraphjs a zero-padded counter and a UUID) and insert blobs with
 * `ON CONFLICT DO NOTHING`.
 *
 * Why a number and not their string: LangGraph compares versions with `>` and
 * `compareChannelVersions` (numeric for two numbers, `localeCompare` otherwise), and files
 * written before this change hold integer versions; a string version against a stored integer
 * compares as NaN (a node would never trigger again on an old thread). A number keeps every
 * comparison numeric and strictly increasing, with the integer part still the step counter.
 *
 * The fraction uses only the significand bits the counter leaves free, so the sum is exact:
 * `floor()` gives the counter back, it is never an integer (never equal to a version an older
 * file holds), and `String(v)` — the blob key — parses back to exactly `v`.
 */
export const nextChannelVersion = (
  current: number | undefined,
  random: () => number = Math.random
): number => {
  const counter = (current === undefined ? 0 : Math.floor(current)) + 1
  const fractionBits = 53 - counter.toString(2).length
  if (fractionBits < 1) return counter // a counter past 2^52: no room left (never in practice)
  const scale = 2 ** fractionBits
  return counter + (1 + Math.floor(random() * (scale - 1))) / scale
}
