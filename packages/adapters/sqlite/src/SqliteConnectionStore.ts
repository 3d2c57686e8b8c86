/**
 * The `ConnectionStore` port on one SQLite file of its own (`<data>/connections.sqlite`): each
 * user's sealed connection records (OAuth tokens of remote MCP servers, docs/oauth.md#at-rest).
 *
 * Who uses it: the gateway (`plugboard mcp`, one local user, no Matrix sync). `plugboard serve`
 * keeps each user's records in that user's own database instead (`UserConnectionStore`), which
 * Matrix sync carries to another host, and moves the rows of an earlier host's file there. Rows
 * are keyed by the user's DID and hold only what `TokenVault` sealed (bound to that DID), so the
 * file holds nothing readable without the operator's key, and a row moved to another DID does not
 * open.
 *
 * A file that cannot be a store (not SQLite, damaged, another application's, a newer schema)
 * fails the layer with `unavailable` naming the file; it is never modified, moved or deleted.
 */
import { join } from "node:path"
import { ConnectionStore, describe } from "@plugboard/core"
import type BetterSqlite3 from "better-sqlite3"
import { Effect, Layer, type Scope } from "effect"
import { isCorruption, SqliteOpenError, sqliteCode } from "./errors.js"
import { openOwnedFile } from "./internal/ownedFile.js"

/** Options of the SQLite store. */
export interface SqliteConnectionStoreOptions {
  /** Path of the database (see `connectionsFile`); its directory is created when missing. */
  readonly filename: string
  /** How long a statement waits for another process's write lock (default 5000 ms). */
  readonly busyTimeoutMs?: number | undefined
}

/** The file name of the store inside a host's data directory. */
export const CONNECTIONS_FILE_NAME = "connections.sqlite"

/** The store's path inside the data directory `directory`. */
export const connectionsFile = (directory: string): string => join(directory, CONNECTIONS_FILE_NAME)

/** `PRAGMA application_id` of a plugboard connection store ("PBCN"). */
export const CONNECTIONS_APPLICATION_ID = 0x5042434e
/** Schema version of the store (`PRAGMA user_version`). */
export const CONNECTIONS_SCHEMA_VERSION = 1

const SCHEMA = `
CREATE TABLE connections (
  user_did TEXT NOT NULL,
  server TEXT NOT NULL,
  sealed TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (user_did, server)
) STRICT, WITHOUT ROWID;
`

const FILE_KIND = {
  applicationId: CONNECTIONS_APPLICATION_ID,
  schemaVersion: CONNECTIONS_SCHEMA_VERSION,
  tables: ["connections"]
} as const

const openDatabase = (filename: string, busyTimeoutMs: number): BetterSqlite3.Database =>
  openOwnedFile(filename, { kind: FILE_KIND, schema: SCHEMA, busyTimeoutMs })

const failure = (filename: string, doing: string, error: unknown): ConnectionStore.ConnectionStoreError => {
  const why =
    error instanceof SqliteOpenError
      ? error.reason
      : isCorruption(error)
        ? "corrupt"
        : (sqliteCode(error) ?? "error")
  return new ConnectionStore.ConnectionStoreError({
    reason: "unavailable",
    message: `connection store ${filename} ${doing} (${why}: ${describe(error)})${doing === "cannot be opened" ? "; the file was left untouched" : ""}`,
    cause: error
  })
}

interface Row {
  server: string
  sealed: string
  updated_at: number
}

const toRecord = (row: Row): ConnectionStore.StoredConnection => ({
  server: row.server,
  sealed: row.sealed,
  updatedAtMs: row.updated_at
})

/** Opens the store for the life of the scope. */
export const makeConnectionStore = (
  options: SqliteConnectionStoreOptions
): Effect.Effect<ConnectionStore.ConnectionStoreService, ConnectionStore.ConnectionStoreError, Scope.Scope> =>
  Effect.gen(function* () {
    const filename = options.filename
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => openDatabase(filename, options.busyTimeoutMs ?? 5000),
        catch: (error) => failure(filename, "cannot be opened", error)
      }),
      (db) => Effect.sync(() => db.close())
    )
    const selectOne = db.prepare<[string, string], Row>(
      "SELECT server, sealed, updated_at FROM connections WHERE user_did = ? AND server = ?"
    )
    const selectAll = db.prepare<[string], Row>(
      "SELECT server, sealed, updated_at FROM connections WHERE user_did = ? ORDER BY server"
    )
    const upsert = db.prepare<[string, string, string, number]>(
      `INSERT INTO connections (user_did, server, sealed, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_did, server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`
    )
    const deleteOne = db.prepare<[string, string]>(
      "DELETE FROM connections WHERE user_did = ? AND server = ?"
    )
    // The compare-and-set, one statement each way, so nothing comes between the test and the write.
    const insertNew = db.prepare<[string, string, string, number]>(
      `INSERT INTO connections (user_did, server, sealed, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_did, server) DO NOTHING`
    )
    const updateIf = db.prepare<[string, number, string, string, string]>(
      "UPDATE connections SET sealed = ?, updated_at = ? WHERE user_did = ? AND server = ? AND sealed = ?"
    )
    const deleteIf = db.prepare<[string, string, string]>(
      "DELETE FROM connections WHERE user_did = ? AND server = ? AND sealed = ?"
    )
    const attempt = <A>(doing: string, f: () => A) =>
      Effect.try({ try: f, catch: (error) => failure(filename, doing, error) })

    const service: ConnectionStore.ConnectionStoreService = {
      get: (user, server) =>
        Effect.flatMap(ConnectionStore.validateKey(user, server), ([u, s]) =>
          attempt("cannot be read", () => {
            const row = selectOne.get(u, s)
            return row === undefined ? undefined : toRecord(row)
          })
        ),
      put: (user, server, sealed, updatedAtMs) =>
        Effect.flatMap(ConnectionStore.validateKey(user, server), ([u, s]) =>
          Effect.flatMap(ConnectionStore.validateRecord(sealed, updatedAtMs), () =>
            attempt("cannot be written", () => {
              upsert.run(u, s, sealed, updatedAtMs)
            })
          )
        ),
      compareAndSet: (user, server, expected, next) =>
        Effect.flatMap(ConnectionStore.validateSwap(user, server, expected, next), ([u, s]) =>
          attempt("cannot be written", () => {
            if (expected === undefined) {
              return next === undefined
                ? selectOne.get(u, s) === undefined
                : insertNew.run(u, s, next.sealed, next.updatedAtMs).changes > 0
            }
            return next === undefined
              ? deleteIf.run(u, s, expected).changes > 0
              : updateIf.run(next.sealed, next.updatedAtMs, u, s, expected).changes > 0
          })
        ),
      remove: (user, server) =>
        Effect.flatMap(ConnectionStore.validateKey(user, server), ([u, s]) =>
          attempt("cannot be written", () => deleteOne.run(u, s).changes > 0)
        ),
      list: (user) =>
        Effect.flatMap(ConnectionStore.validateUser(user), (u) =>
          attempt("cannot be read", () => selectAll.all(u).map(toRecord))
        )
    }
    return service
  })

/** The store as a layer, open for the life of the layer. */
export const layerConnectionStore = (
  options: SqliteConnectionStoreOptions
): Layer.Layer<ConnectionStore.ConnectionStore, ConnectionStore.ConnectionStoreError> =>
  Layer.scoped(ConnectionStore.ConnectionStore, makeConnectionStore(options))
