/**
 * The `SessionStore` port on the per-user SQLite databases (the `sessions` table lives next
 * to the user's checkpoints), the `Checkpointer` port on the registry, and the Effect layers of
 * the registry.
 */
import { Checkpointer, Clock, describe, SessionStore } from "@plugboard/core"
import { Config, Context, Effect, Either, Layer, Option } from "effect"
import type { Database } from "./Database.js"
import { SqliteOpenError, SqliteStorageError } from "./errors.js"
import type { SqliteSaver } from "./SqliteSaver.js"
import { UserDatabaseRegistry, type UserDatabaseRegistryOptions } from "./UserDatabaseRegistry.js"

/** The per-user database registry as a service. */
export class UserDatabases extends Context.Tag("@plugboard/sqlite/UserDatabases")<
  UserDatabases,
  UserDatabaseRegistry
>() {}

/** A registry for the layer's lifetime; its connections close when the scope closes. */
export const layerUserDatabases = (options: UserDatabaseRegistryOptions): Layer.Layer<UserDatabases> =>
  Layer.scoped(
    UserDatabases,
    Effect.acquireRelease(
      Effect.sync(() => new UserDatabaseRegistry(options)),
      (registry) => Effect.promise(() => registry.close())
    )
  )

/**
 * The registry configured from the environment: `SQLITE_DATABASE_PATH` (required),
 * `SQLITE_MAX_OPEN` (default 64), `SQLITE_KEEP_CHECKPOINTS` (default 100; 0 keeps all).
 */
export const layerUserDatabasesConfig: Layer.Layer<UserDatabases, import("effect").ConfigError.ConfigError> =
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const directory = yield* Config.string("SQLITE_DATABASE_PATH")
      const maxOpen = yield* Config.integer("SQLITE_MAX_OPEN").pipe(Config.withDefault(64))
      const keep = yield* Config.integer("SQLITE_KEEP_CHECKPOINTS").pipe(Config.withDefault(100))
      return layerUserDatabases({
        directory,
        maxOpen,
        retention: keep > 0 ? { keepCheckpoints: keep } : false
      })
    })
  )

interface SessionRow {
  session_id: string
  title: string
  created_at: number
  updated_at: number
  oracle_name: string | null
  oracle_did: string | null
  last_processed_count: number
  user_context: string | null
}

const COLUMNS =
  "session_id, title, created_at, updated_at, oracle_name, oracle_did, last_processed_count, user_context"

const toRecord = (row: SessionRow): SessionStore.SessionRecord => ({
  sessionId: row.session_id,
  title: row.title,
  createdAtMs: row.created_at,
  updatedAtMs: row.updated_at,
  oracleName: row.oracle_name ?? undefined,
  oracleDid: row.oracle_did ?? undefined,
  lastProcessedCount: row.last_processed_count,
  userContext: SessionStore.decodeUserContext(row.user_context)
})

const toParams = (r: SessionStore.SessionRecord) => [
  r.sessionId,
  r.title,
  r.createdAtMs,
  r.updatedAtMs,
  r.oracleName ?? null,
  r.oracleDid ?? null,
  r.lastProcessedCount,
  r.userContext === undefined ? null : JSON.stringify(r.userContext)
]

const select = (db: Database, id: string) =>
  db.statement(`SELECT ${COLUMNS} FROM sessions WHERE session_id = ?`).get(id) as SessionRow | undefined

/** Thrown inside a transaction to abort it with a typed port error. */
class Abort {
  constructor(readonly error: SessionStore.SessionStoreError) {}
}

const unavailable = (cause: unknown) =>
  new SessionStore.SessionStoreError({
    reason: "unavailable",
    message:
      cause instanceof SqliteOpenError || cause instanceof SqliteStorageError
        ? `session storage unavailable: ${cause.message}`
        : "session storage unavailable",
    cause
  })

/** Builds the SQLite SessionStore over a registry. */
export const makeSessionStore = (
  registry: UserDatabaseRegistry
): Effect.Effect<SessionStore.SessionStoreService, never, Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const run = <T>(did: string, mode: "read" | "write", fn: (db: Database) => T) =>
      Effect.tryPromise({
        try: () => registry.use(did, mode, fn),
        catch: (e) => (e instanceof Abort ? e.error : unavailable(e))
      })

    const insert = (userDid: string, input: SessionStore.NewSession, failIfExists: boolean) =>
      Effect.gen(function* () {
        const did = yield* SessionStore.validateUserDid(userDid)
        const v = yield* SessionStore.validateNewSession(input)
        const now = yield* clock.now()
        const record: SessionStore.SessionRecord = {
          ...v,
          createdAtMs: now,
          updatedAtMs: now,
          lastProcessedCount: 0
        }
        return yield* run(did, "write", (db) => {
          const changes = db
            .statement(`INSERT OR IGNORE INTO sessions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
            .run(...toParams(record)).changes
          if (changes === 0 && failIfExists) {
            throw new Abort(
              new SessionStore.SessionStoreError({
                reason: "already-exists",
                message: `Session '${v.sessionId}' already exists`
              })
            )
          }
          return {
            session: SessionStore.toSession(changes === 1 ? record : toRecord(select(db, v.sessionId)!)),
            created: changes === 1
          }
        })
      })

    const modify = (userDid: string, sessionId: string, patch: SessionStore.SessionPatch) =>
      Effect.gen(function* () {
        const did = yield* SessionStore.validateUserDid(userDid)
        const id = yield* SessionStore.validateSessionId(sessionId)
        const now = yield* clock.now()
        return yield* run(did, "write", (db) => {
          const row = select(db, id)
          if (row === undefined) {
            throw new Abort(
              new SessionStore.SessionStoreError({
                reason: "not-found",
                message: `Session '${id}' not found`
              })
            )
          }
          // applyPatch is pure; run it inside the transaction so read-modify-write is atomic.
          const next = Effect.runSync(Effect.either(SessionStore.applyPatch(toRecord(row), patch, now)))
          if (Either.isLeft(next)) throw new Abort(next.left)
          const n = next.right
          const ctx = n.userContext === undefined ? null : JSON.stringify(n.userContext)
          db.statement(
            `UPDATE sessions SET title = ?, updated_at = ?, oracle_name = ?, oracle_did = ?,
               last_processed_count = ?, user_context = ? WHERE session_id = ?`
          ).run(
            n.title,
            n.updatedAtMs,
            n.oracleName ?? null,
            n.oracleDid ?? null,
            n.lastProcessedCount,
            ctx,
            id
          )
          return SessionStore.toSession(n)
        })
      })

    return {
      create: (userDid, input) => Effect.map(insert(userDid, input, true), (r) => r.session),
      ensure: (userDid, input) => insert(userDid, input, false),
      get: (userDid, sessionId) =>
        Effect.gen(function* () {
          const did = yield* SessionStore.validateUserDid(userDid)
          const id = yield* SessionStore.validateSessionId(sessionId)
          const row = yield* run(did, "read", (db) => select(db, id))
          return Option.getOrUndefined(
            Option.map(Option.fromNullable(row), (r) => SessionStore.toSession(toRecord(r)))
          )
        }),
      list: (userDid, options) =>
        Effect.gen(function* () {
          const did = yield* SessionStore.validateUserDid(userDid)
          const { limit, offset } = yield* SessionStore.validateListOptions(options)
          return yield* run(did, "read", (db) => {
            const total = (db.statement("SELECT count(*) AS n FROM sessions").get() as { n: number }).n
            const rows = db
              .statement(
                `SELECT ${COLUMNS} FROM sessions ORDER BY updated_at DESC, created_at DESC, session_id LIMIT ? OFFSET ?`
              )
              .all(limit, offset) as Array<SessionRow>
            return { sessions: rows.map((r) => SessionStore.toSession(toRecord(r))), total }
          })
        }),
      update: modify,
      touch: (userDid, sessionId) => modify(userDid, sessionId, {}),
      delete: (userDid, sessionId) =>
        Effect.gen(function* () {
          const did = yield* SessionStore.validateUserDid(userDid)
          const id = yield* SessionStore.validateSessionId(sessionId)
          return yield* run(
            did,
            "write",
            (db) => db.statement("DELETE FROM sessions WHERE session_id = ?").run(id).changes > 0
          )
        })
    }
  })

/** The SessionStore port on the registry's per-user databases. */
export const layerSessionStore: Layer.Layer<SessionStore.SessionStore, never, UserDatabases | Clock.Clock> =
  Layer.effect(SessionStore.SessionStore, Effect.flatMap(UserDatabases, makeSessionStore))

/**
 * The `Checkpointer` port on the registry: a user's saver is `checkpointerForUser(did)`. The
 * saver opens its file lazily, so a bad file surfaces on the first load — where the registry
 * moves it aside and reports it — and never here. Put a host's `checkpointerForUser` hook in
 * front with `Checkpointer.withOverride`.
 */
export const makeCheckpointer = (
  registry: UserDatabaseRegistry
): Checkpointer.CheckpointerService<SqliteSaver> => ({
  forUser: (did) =>
    Effect.flatMap(Checkpointer.checkDid(did), (d) =>
      Effect.try({
        try: () => registry.checkpointerForUser(d),
        catch: (error) =>
          new Checkpointer.CheckpointerError({
            reason: "unavailable",
            message: `no saver for ${d}: ${describe(error)}`
          })
      })
    )
})

/** The Checkpointer port on the registry's per-user databases. */
export const layerCheckpointer: Layer.Layer<Checkpointer.Checkpointer, never, UserDatabases> = Layer.effect(
  Checkpointer.typed<SqliteSaver>(),
  Effect.map(UserDatabases, makeCheckpointer)
)
