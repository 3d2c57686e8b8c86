/**
 * The `LoadedPluginsStore` port on one SQLite file of its own (`<data>/loaded-plugins.sqlite`):
 * the loaded plugins of threads named by a key, for the MCP gateway's clients that connect anew
 * for every request (docs/mcp-gateway.md#threads, docs/spec/loaded-plugins.md#threads-kept-by-key).
 *
 * Why a file of its own and not the per-user databases: a thread key is not a user (the gateway
 * serves one operator, and its keys are whatever clients name), rows are tiny, and every process
 * that serves a key (a stdio gateway per client, an HTTP gateway) must see the same set.
 *
 * `add` is the union in one `BEGIN IMMEDIATE` transaction: it takes the write lock, appends the
 * names the thread lacks after its last position, and reads the whole set back, so adds from
 * several processes at once all survive and each answer includes every add committed before it.
 * A file that cannot be a store (not SQLite, damaged, another application's, a newer schema) fails
 * the layer with `unavailable` naming the file; it is never modified, moved or deleted.
 */
import { join } from "node:path"
import { describe, type LoadedPlugins, LoadedPluginsStore } from "@plugboard/core"
import type BetterSqlite3 from "better-sqlite3"
import { Effect, Layer, type Scope } from "effect"
import { isCorruption, SqliteOpenError, sqliteCode } from "./errors.js"
import { openOwnedFile } from "./internal/ownedFile.js"

/** Options of the SQLite store. */
export interface SqliteLoadedPluginsStoreOptions {
  /** Path of the database (see `loadedPluginsFile`); its directory is created when missing. */
  readonly filename: string
  /** How long a statement waits for another process's write lock (default 5000 ms). */
  readonly busyTimeoutMs?: number | undefined
}

/** The file name of the store inside a host's data directory. */
export const LOADED_PLUGINS_FILE_NAME = "loaded-plugins.sqlite"

/** The store's path inside the data directory `directory`. */
export const loadedPluginsFile = (directory: string): string => join(directory, LOADED_PLUGINS_FILE_NAME)

/** `PRAGMA application_id` of a plugboard loaded-plugins store ("PBLP"). */
export const LOADED_PLUGINS_APPLICATION_ID = 0x50424c50
/** Schema version of the store (`PRAGMA user_version`). */
export const LOADED_PLUGINS_SCHEMA_VERSION = 1

// `position` orders a thread's plugins by first load; (thread, plugin) is unique, so a name is
// stored once whatever the number of processes adding it.
const SCHEMA = `
CREATE TABLE loaded_plugins (
  thread TEXT NOT NULL,
  position INTEGER NOT NULL CHECK (position > 0),
  plugin TEXT NOT NULL,
  PRIMARY KEY (thread, plugin),
  UNIQUE (thread, position)
) STRICT, WITHOUT ROWID;
`

const LOADED_PLUGINS_FILE = {
  applicationId: LOADED_PLUGINS_APPLICATION_ID,
  schemaVersion: LOADED_PLUGINS_SCHEMA_VERSION,
  tables: ["loaded_plugins"]
} as const

const openDatabase = (filename: string, busyTimeoutMs: number): BetterSqlite3.Database =>
  openOwnedFile(filename, { kind: LOADED_PLUGINS_FILE, schema: SCHEMA, busyTimeoutMs })

const failure = (
  filename: string,
  doing: string,
  error: unknown
): LoadedPluginsStore.LoadedPluginsStoreError => {
  const detail = describe(error)
  const why =
    error instanceof SqliteOpenError
      ? error.reason
      : isCorruption(error)
        ? "corrupt"
        : (sqliteCode(error) ?? "error")
  return new LoadedPluginsStore.LoadedPluginsStoreError({
    reason: "unavailable",
    message: `loaded-plugins store ${filename} ${doing} (${why}: ${detail})${doing === "cannot be opened" ? "; the file was left untouched" : ""}`,
    cause: error
  })
}

/** Opens the store for the life of the scope. */
export const makeLoadedPluginsStore = (
  options: SqliteLoadedPluginsStoreOptions
): Effect.Effect<
  LoadedPluginsStore.LoadedPluginsStoreService,
  LoadedPluginsStore.LoadedPluginsStoreError,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const filename = options.filename
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => openDatabase(filename, options.busyTimeoutMs ?? 5000),
        catch: (error) => failure(filename, "cannot be opened", error)
      }),
      (db) => Effect.sync(() => db.close())
    )
    const select = db
      .prepare<[string], string>("SELECT plugin FROM loaded_plugins WHERE thread = ? ORDER BY position")
      .pluck()
    const last = db
      .prepare<[string], number>("SELECT coalesce(max(position), 0) FROM loaded_plugins WHERE thread = ?")
      .pluck()
    const insert = db.prepare<[string, number, string]>(
      "INSERT OR IGNORE INTO loaded_plugins (thread, position, plugin) VALUES (?, ?, ?)"
    )
    const addAll = db.transaction((thread: string, names: ReadonlyArray<string>): Array<string> => {
      let position = last.get(thread) ?? 0
      for (const name of names) {
        if (insert.run(thread, position + 1, name).changes > 0) position++
      }
      return select.all(thread)
    })
    const get = (key: string) =>
      Effect.flatMap(LoadedPluginsStore.validateKey(key), (thread) =>
        Effect.try({
          try: (): LoadedPlugins.LoadedPlugins => select.all(thread),
          catch: (error) => failure(filename, "cannot be read", error)
        })
      )
    const add = (key: string, names: ReadonlyArray<string>) =>
      Effect.flatMap(LoadedPluginsStore.validateKey(key), (thread) =>
        Effect.flatMap(LoadedPluginsStore.validateNames(names), (checked) =>
          Effect.try({
            // IMMEDIATE: the write lock is taken before reading the last position, so two
            // processes adding at once never pick the same position or lose a name.
            try: (): LoadedPlugins.LoadedPlugins =>
              checked.length === 0 ? select.all(thread) : addAll.immediate(thread, checked),
            catch: (error) => failure(filename, "cannot be written", error)
          })
        )
      )
    return { get, add }
  })

/** The store as a layer, open for the life of the layer. */
export const layerLoadedPluginsStore = (
  options: SqliteLoadedPluginsStoreOptions
): Layer.Layer<LoadedPluginsStore.LoadedPluginsStore, LoadedPluginsStore.LoadedPluginsStoreError> =>
  Layer.scoped(LoadedPluginsStore.LoadedPluginsStore, makeLoadedPluginsStore(options))
