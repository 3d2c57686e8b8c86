/**
 * The `LoadedPluginsStore` port: a thread's `loadedPlugins` kept under a key of its own, for a door
 * that has no checkpointed thread to hold them (docs/spec/loaded-plugins.md#threads-kept-by-key).
 * The MCP gateway is that door: a client that connects anew for every request (the MCP Inspector's
 * CLI, a stateless client of MCP 2026-07-28) names its thread with a key, and every connection
 * naming it, from any process, sees what it loaded (docs/mcp-gateway.md#threads).
 *
 * The set keeps the laws of `LoadedPlugins`: `add` is the union (`LoadedPlugins.union`), so a name
 * is never removed, a name loaded twice counts once, and the order is the order of first load,
 * which is the order the offer appends in. Concurrent `add`s to one key all survive, across
 * processes for an implementation over a shared file or engine (one transaction reads and writes).
 * The in-memory store here serves one process; every implementation passes
 * `LoadedPluginsStoreConformance` (`@plugboard/testing`).
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as LoadedPlugins from "./LoadedPlugins.js"
import { isPluginName } from "./Plugin.js"

/** Why an operation failed. */
export type LoadedPluginsStoreErrorReason = "invalid" | "unavailable"

/**
 * The one error of the port. `invalid`: a key or a name that breaks the rules below (a caller's
 * input, reported before anything is read or written). `unavailable`: the store could not be
 * read or written (its file or engine).
 */
export class LoadedPluginsStoreError extends Schema.TaggedError<LoadedPluginsStoreError>()(
  "LoadedPluginsStoreError",
  {
    reason: Schema.Literal("invalid", "unavailable"),
    message: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {}

/** The operations of the port. */
export interface LoadedPluginsStoreService {
  /** The thread's loaded plugins, in first-load order; empty for a key never written. */
  readonly get: (key: string) => Effect.Effect<LoadedPlugins.LoadedPlugins, LoadedPluginsStoreError>
  /**
   * Adds `names` to the thread (the union: new names appended in the order given, known ones
   * ignored) and returns the thread's whole set after the add, others' concurrent adds included.
   */
  readonly add: (
    key: string,
    names: ReadonlyArray<string>
  ) => Effect.Effect<LoadedPlugins.LoadedPlugins, LoadedPluginsStoreError>
}

/** The LoadedPluginsStore port. */
export class LoadedPluginsStore extends Context.Tag("@plugboard/core/LoadedPluginsStore")<
  LoadedPluginsStore,
  LoadedPluginsStoreService
>() {}

/** Longest thread key. */
export const MAX_KEY_LENGTH = 128

/** Most names one `add` takes (a load takes at most `MetaTools.MAX_NAMES_PER_LOAD`). */
export const MAX_NAMES_PER_ADD = 1_000

const KEY = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/

/**
 * What is wrong with a thread key, or `undefined` when it is one: 1 to 128 characters, letters,
 * digits, `.`, `_`, `:` and `-`, starting with a letter or a digit. Narrow on purpose: a key travels
 * in URLs, headers and command lines, and is shown back in messages.
 */
export const keyProblem = (key: unknown): string | undefined => {
  if (typeof key !== "string")
    return `a thread key must be a string, got ${key === null ? "null" : typeof key}`
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !KEY.test(key)) {
    const shown = key.length > 40 ? `${key.slice(0, 40)}… (${key.length} characters)` : key
    return `a thread key is 1 to ${MAX_KEY_LENGTH} characters (letters, digits, '.', '_', ':' and '-', starting with a letter or a digit); got ${JSON.stringify(shown)}`
  }
  return undefined
}

const invalid = (message: string) => new LoadedPluginsStoreError({ reason: "invalid", message })

/** Checks a key (`keyProblem`). */
export const validateKey = (key: unknown): Effect.Effect<string, LoadedPluginsStoreError> => {
  const problem = keyProblem(key)
  return problem === undefined ? Effect.succeed(key as string) : Effect.fail(invalid(problem))
}

/** Checks the names of an `add`: plugin names (kebab-case), at most `MAX_NAMES_PER_ADD`. */
export const validateNames = (
  names: unknown
): Effect.Effect<ReadonlyArray<string>, LoadedPluginsStoreError> => {
  if (!Array.isArray(names)) return Effect.fail(invalid("names must be a list of plugin names"))
  if (names.length > MAX_NAMES_PER_ADD) {
    return Effect.fail(invalid(`at most ${MAX_NAMES_PER_ADD} names per add, got ${names.length}`))
  }
  for (const name of names) {
    if (typeof name !== "string" || !isPluginName(name)) {
      return Effect.fail(
        invalid(`'${String(name).slice(0, 100)}' is not a plugin name (kebab-case: a-z, 0-9 and '-')`)
      )
    }
  }
  return Effect.succeed(names as ReadonlyArray<string>)
}

/** A store in this process's memory: every thread is lost with it. */
export const makeMemory = (): LoadedPluginsStoreService => {
  const threads = new Map<string, LoadedPlugins.LoadedPlugins>()
  return {
    get: (key) => Effect.map(validateKey(key), (k) => threads.get(k) ?? LoadedPlugins.empty),
    add: (key, names) =>
      Effect.flatMap(validateKey(key), (k) =>
        Effect.map(validateNames(names), (checked) => {
          // One synchronous read and write: no other add of this process comes in between.
          const next = LoadedPlugins.union(threads.get(k) ?? LoadedPlugins.empty, checked)
          threads.set(k, next)
          return next
        })
      )
  }
}

/** The in-memory store as a layer (a fresh store per layer build). */
export const layerMemory: Layer.Layer<LoadedPluginsStore> = Layer.sync(LoadedPluginsStore, makeMemory)
