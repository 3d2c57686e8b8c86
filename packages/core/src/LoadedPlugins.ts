/**
 * `loadedPlugins`: per thread, a set of plugin names that only grows (seed 000). Kept as an
 * array in load order, because the offer appends loaded plugins' tools in that order.
 */
