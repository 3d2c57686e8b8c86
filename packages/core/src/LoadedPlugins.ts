/**
 * `loadedPlugins`: per thread, a set of plugin names that only grows (docs/spec/loaded-plugins.md). Kept as an
 * array in load order, because the offer appends loaded plugins' tools in that order.
 */

/** The plugins loaded in one thread, in load order, without duplicates. */
export type LoadedPlugins = ReadonlyArray<string>

/** A new thread's set: nothing loaded. */
export const empty: LoadedPlugins = []

/**
 * The reducer: `a`'s names in `a`'s order, then `b`'s names that `a` lacks, in `b`'s order;
 * duplicates dropped. Never removes a name. Returns `a` itself when `b` adds nothing and `a`
 * has no duplicates, so an unchanged state stays reference-equal.
 */
export const union = (a: LoadedPlugins, b: LoadedPlugins): LoadedPlugins => {
  if (b.length === 0 && isDistinct(a)) return a
  const seen = new Set<string>()
  const out: Array<string> = []
  for (const name of a) {
    if (!seen.has(name)) {
      seen.add(name)
      out.push(name)
    }
  }
  const before = out.length
  for (const name of b) {
    if (!seen.has(name)) {
      seen.add(name)
      out.push(name)
    }
  }
  return out.length === before && out.length === a.length ? a : out
}

/** Appends `names` (in order, skipping those already loaded): `union(loaded, names)`. */
export const add = (loaded: LoadedPlugins, names: Iterable<string>): LoadedPlugins =>
  union(loaded, Array.isArray(names) ? (names as ReadonlyArray<string>) : Array.from(names))

/** True when `name` has been loaded in this thread. */
export const has = (loaded: LoadedPlugins, name: string): boolean => loaded.includes(name)

/**
 * Reads a checkpointed value defensively: keeps the strings of an array (first occurrence
 * wins), and treats anything that is not an array as nothing loaded.
 */
export const fromUnknown = (value: unknown): LoadedPlugins =>
  Array.isArray(value)
    ? union(
        empty,
        value.filter((v): v is string => typeof v === "string")
      )
    : empty

const isDistinct = (names: LoadedPlugins): boolean => {
  // Small sets (the common case: a handful of loads) are cheaper to scan than to hash.
  if (names.length < 16) {
    for (let i = 1; i < names.length; i++) {
      for (let j = 0; j < i; j++) if (names[i] === names[j]) return false
    }
    return true
  }
  return new Set(names).size === names.length
}
