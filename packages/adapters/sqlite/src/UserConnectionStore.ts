/**
 * The `ConnectionStore` port on the per-user databases: each user's sealed connection records
 * (OAuth tokens of remote MCP servers, docs/oauth.md#at-rest) in the `connections` table of that
 * user's own file, next to their sessions and checkpoints. What `plugboard serve` uses on the
 * embedded default.
 *
 * Why the user's file and not one file for the host (`SqliteConnectionStore`, which the gateway
 * still uses): the user's file is what Matrix sync snapshots and another host restores, so a user
 * who moves keeps their connections there (on a host with the same `CONNECTIONS_KEY`; under
 * another key a record does not open and the user is `needs-connect`). What kept them apart
 * before does not hold: the OAuth callback arrives without a session, but its sealed state names
 * the user, and a write to a user's file needs the DID only (`UserDatabaseRegistry.use`); the
 * flow starts from a request that restored the user (`POST /connections/:server`, or the link a
 * turn handed out), so the callback writes over the restored file. On the tool-call path a read is
 * one primary-key lookup on a connection the turn already holds open; a write (a refresh) joins
 * the turn's group commit and the snapshot the turn's end schedules. Only sealed text leaves the
 * host: `TokenVault` binds each record to its DID and server, and the file's `secure_delete` keeps
 * a forgotten record's bytes out of the next snapshot.
 *
 * Rows of an earlier host's `<data>/connections.sqlite` (`legacyFilename`) are moved into the
 * user's file on the user's first operation in this process: copied (a newer record already in
 * the user's file wins), committed, then deleted from the old file, once per user at a time, so a
 * record is never lost, never served from two places, and a disconnect is never undone.
 */
import { existsSync } from "node:fs"
import { ConnectionStore, describe } from "@plugboard/core"
import { Effect, Layer, type Scope } from "effect"
import type { Database } from "./Database.js"
import { SqliteStorageError } from "./errors.js"
import { makeConnectionStore } from "./SqliteConnectionStore.js"
import { UserDatabases } from "./SqliteSessionStore.js"
import type { UserDatabaseRegistry } from "./UserDatabaseRegistry.js"

/** Options of the per-user store. */
export interface UserConnectionStoreOptions {
  /**
   * A host file of `SqliteConnectionStore` (`connectionsFile(dataDir)`) whose rows are moved into
   * the users' files; ignored when it does not exist (it is never created).
   */
  readonly legacyFilename?: string | undefined
}

interface Row {
  server: string
  sealed: string
  updated_at: number
}

const SELECT_ONE = "SELECT server, sealed, updated_at FROM connections WHERE server = ?"
const SELECT_ALL = "SELECT server, sealed, updated_at FROM connections ORDER BY server"
const UPSERT = `INSERT INTO connections (server, sealed, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`
// A moved record replaces only an older one: the user's file may already hold a newer record
// (restored from another host, or written after a crash that left the old row behind).
const UPSERT_IF_NEWER = `${UPSERT} WHERE excluded.updated_at > connections.updated_at`
const DELETE_ONE = "DELETE FROM connections WHERE server = ?"
// The compare-and-set, one statement each way, so nothing comes between the test and the write.
const INSERT_NEW = `INSERT INTO connections (server, sealed, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (server) DO NOTHING`
const UPDATE_IF = "UPDATE connections SET sealed = ?, updated_at = ? WHERE server = ? AND sealed = ?"
const DELETE_IF = "DELETE FROM connections WHERE server = ? AND sealed = ?"

const toRecord = (row: Row): ConnectionStore.StoredConnection => ({
  server: row.server,
  sealed: row.sealed,
  updatedAtMs: row.updated_at
})

const failure = (doing: string, error: unknown): ConnectionStore.ConnectionStoreError =>
  error instanceof ConnectionStore.ConnectionStoreError
    ? error
    : error instanceof SqliteStorageError && error.reason === "invalid-input"
      ? new ConnectionStore.ConnectionStoreError({ reason: "invalid", message: error.message, cause: error })
      : new ConnectionStore.ConnectionStoreError({
          reason: "unavailable",
          message: `the user's connections ${doing} (${describe(error)})`,
          cause: error
        })

/** Builds the store over a registry; the legacy file, when given and present, stays open for the scope. */
export const makeUserConnectionStore = (
  registry: UserDatabaseRegistry,
  options: UserConnectionStoreOptions = {}
): Effect.Effect<ConnectionStore.ConnectionStoreService, ConnectionStore.ConnectionStoreError, Scope.Scope> =>
  Effect.gen(function* () {
    const legacyFilename = options.legacyFilename
    const legacy =
      legacyFilename !== undefined && existsSync(legacyFilename)
        ? yield* makeConnectionStore({ filename: legacyFilename })
        : undefined
    // Per user: the move out of the legacy file, run once (and again after a failure).
    const moved = new Map<string, Promise<void>>()

    const use = <A>(did: string, mode: "read" | "write", doing: string, fn: (db: Database) => A) =>
      Effect.tryPromise({ try: () => registry.use(did, mode, fn), catch: (error) => failure(doing, error) })

    const moveLegacy = (did: string): Effect.Effect<void, ConnectionStore.ConnectionStoreError> => {
      if (legacy === undefined) return Effect.void
      const move = Effect.gen(function* () {
        const rows = yield* legacy.list(did)
        if (rows.length === 0) return
        yield* use(did, "write", "cannot be written", (db) => {
          for (const r of rows) db.statement(UPSERT_IF_NEWER).run(r.server, r.sealed, r.updatedAtMs)
        })
        // Deleted only once the copy has committed: a crash in between copies again next time.
        for (const r of rows) yield* legacy.remove(did, r.server)
      })
      return Effect.tryPromise({
        try: () => {
          let running = moved.get(did)
          if (running === undefined) {
            running = Effect.runPromise(move)
            moved.set(did, running)
            running.catch(() => moved.delete(did))
          }
          return running
        },
        catch: (error) => failure("cannot be moved from the host's connections file", error)
      })
    }

    const withUser = <A>(
      user: unknown,
      server: unknown | undefined,
      f: (did: string, server: string) => Effect.Effect<A, ConnectionStore.ConnectionStoreError>
    ) =>
      Effect.flatMap(
        server === undefined
          ? Effect.map(ConnectionStore.validateUser(user), (u) => [u, ""] as const)
          : ConnectionStore.validateKey(user, server),
        ([u, s]) => Effect.zipRight(moveLegacy(u), f(u, s))
      )

    const service: ConnectionStore.ConnectionStoreService = {
      get: (user, server) =>
        withUser(user, server, (did, s) =>
          use(did, "read", "cannot be read", (db) => {
            const row = db.statement(SELECT_ONE).get(s) as Row | undefined
            return row === undefined ? undefined : toRecord(row)
          })
        ),
      put: (user, server, sealed, updatedAtMs) =>
        Effect.flatMap(ConnectionStore.validateRecord(sealed, updatedAtMs), () =>
          withUser(user, server, (did, s) =>
            use(did, "write", "cannot be written", (db) => {
              db.statement(UPSERT).run(s, sealed, updatedAtMs)
            })
          )
        ),
      compareAndSet: (user, server, expected, next) =>
        Effect.flatMap(ConnectionStore.validateSwap(user, server, expected, next), () =>
          withUser(user, server, (did, s) =>
            use(did, "write", "cannot be written", (db) => {
              if (expected === undefined) {
                return next === undefined
                  ? db.statement(SELECT_ONE).get(s) === undefined
                  : db.statement(INSERT_NEW).run(s, next.sealed, next.updatedAtMs).changes > 0
              }
              return next === undefined
                ? db.statement(DELETE_IF).run(s, expected).changes > 0
                : db.statement(UPDATE_IF).run(next.sealed, next.updatedAtMs, s, expected).changes > 0
            })
          )
        ),
      remove: (user, server) =>
        withUser(user, server, (did, s) =>
          use(did, "write", "cannot be written", (db) => db.statement(DELETE_ONE).run(s).changes > 0)
        ),
      list: (user) =>
        withUser(user, undefined, (did) =>
          use(did, "read", "cannot be read", (db) =>
            (db.statement(SELECT_ALL).all() as Array<Row>).map(toRecord)
          )
        )
    }
    return service
  })

/** The store on the `UserDatabases` registry, as a layer. */
export const layerUserConnectionStore = (
  options: UserConnectionStoreOptions = {}
): Layer.Layer<ConnectionStore.ConnectionStore, ConnectionStore.ConnectionStoreError, UserDatabases> =>
  Layer.scoped(
    ConnectionStore.ConnectionStore,
    Effect.flatMap(UserDatabases, (registry) => makeUserConnectionStore(registry, options))
  )
