/**
 * The `SessionStore` port on Postgres: one `sessions` table keyed by (owner, session id), where
 * owner is the digest of the user's DID, so every query is scoped to one user. Validation and
 * patching are core's (`SessionStore.validate*`, `applyPatch`); `ensure` is one
 * `INSERT ... ON CONFLICT DO NOTHING`, so concurrent first messages create one session.
 */
import { Clock, SessionStore } from "@plugboard/core"
import { Effect, Either, Layer } from "effect"
import {
  Abort,
  decodeOptional,
  decodeText,
  encodeOptional,
  encodeText,
  int,
  ownerKey,
  type PgFailure,
  query,
  transaction
} from "./internal/sql.js"
import { PgDatabase, type PgDatabaseService } from "./PgDatabase.js"

interface SessionRow {
  session_id: string
  title: string
  created_at: string
  updated_at: string
  oracle_name: string | null
  oracle_did: string | null
  last_processed_count: string
  user_context: string | null
}

const COLUMNS =
  "session_id, title, created_at, updated_at, oracle_name, oracle_did, last_processed_count, user_context"

const toRecord = (row: SessionRow): SessionStore.SessionRecord => ({
  sessionId: row.session_id,
  title: decodeText(row.title),
  createdAtMs: int(row.created_at),
  updatedAtMs: int(row.updated_at),
  oracleName: decodeOptional(row.oracle_name),
  oracleDid: decodeOptional(row.oracle_did),
  lastProcessedCount: int(row.last_processed_count),
  // JSON text, not jsonb: jsonb refuses "\u0000" inside strings, which a JSON object may hold.
  userContext: SessionStore.decodeUserContext(row.user_context)
})

const unavailable = (failure: PgFailure) =>
  new SessionStore.SessionStoreError({
    reason: "unavailable",
    message: `session storage unavailable: ${failure.message}`,
    cause: failure.cause
  })

const notFound = (id: string) =>
  new SessionStore.SessionStoreError({ reason: "not-found", message: `Session '${id}' not found` })

/** Builds the Postgres SessionStore on a database. */
export const makeSessionStore = (
  db: PgDatabaseService
): Effect.Effect<SessionStore.SessionStoreService, never, Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const s = db.schema
    const sql = <A>(effect: Effect.Effect<A, PgFailure | SessionStore.SessionStoreError>) =>
      Effect.mapError(Effect.zipRight(db.ready, effect), (e) => (e._tag === "PgFailure" ? unavailable(e) : e))

    const insert = (
      userDid: string,
      input: SessionStore.NewSession,
      failIfExists: boolean
    ): Effect.Effect<{ session: SessionStore.Session; created: boolean }, SessionStore.SessionStoreError> =>
      Effect.gen(function* () {
        const did = yield* SessionStore.validateUserDid(userDid)
        const v = yield* SessionStore.validateNewSession(input)
        const now = yield* clock.now()
        const owner = ownerKey(did)
        const inserted = yield* sql(
          query<SessionRow>(
            db,
            `INSERT INTO ${s}.sessions (owner, did, session_id, title, created_at, updated_at,
               oracle_name, oracle_did, last_processed_count, user_context)
             VALUES ($1, $2, $3, $4, $5, $5, $6, $7, 0, $8)
             ON CONFLICT (owner, session_id) DO NOTHING
             RETURNING ${COLUMNS}`,
            [
              owner,
              encodeText(did),
              v.sessionId,
              encodeText(v.title),
              now,
              encodeOptional(v.oracleName),
              encodeOptional(v.oracleDid),
              v.userContext === undefined ? null : JSON.stringify(v.userContext)
            ]
          )
        )
        const created = inserted.rows[0]
        if (created !== undefined)
          return { session: SessionStore.toSession(toRecord(created)), created: true }
        if (failIfExists) {
          return yield* Effect.fail(
            new SessionStore.SessionStoreError({
              reason: "already-exists",
              message: `Session '${v.sessionId}' already exists`
            })
          )
        }
        // Sessions are deleted, never re-keyed: the row that won the insert is still there
        // unless deleted since, which reads as a lost race and is retried as a fresh insert.
        const existing = yield* sql(
          query<SessionRow>(db, `SELECT ${COLUMNS} FROM ${s}.sessions WHERE owner = $1 AND session_id = $2`, [
            owner,
            v.sessionId
          ])
        )
        const row = existing.rows[0]
        return row === undefined
          ? yield* insert(userDid, input, failIfExists)
          : { session: SessionStore.toSession(toRecord(row)), created: false }
      })

    const modify = (userDid: string, sessionId: string, patch: SessionStore.SessionPatch) =>
      Effect.gen(function* () {
        const did = yield* SessionStore.validateUserDid(userDid)
        const id = yield* SessionStore.validateSessionId(sessionId)
        const now = yield* clock.now()
        const owner = ownerKey(did)
        return yield* sql(
          transaction<SessionStore.Session, SessionStore.SessionStoreError>(db, async (client) => {
            const row = (
              await client.query<SessionRow>(
                `SELECT ${COLUMNS} FROM ${s}.sessions WHERE owner = $1 AND session_id = $2 FOR UPDATE`,
                [owner, id]
              )
            ).rows[0]
            if (row === undefined) throw new Abort(notFound(id))
            // applyPatch is pure; run under the row lock so read-modify-write is atomic.
            const next = Effect.runSync(Effect.either(SessionStore.applyPatch(toRecord(row), patch, now)))
            if (Either.isLeft(next)) throw new Abort(next.left)
            const n = next.right
            await client.query(
              `UPDATE ${s}.sessions SET title = $3, updated_at = $4, oracle_name = $5, oracle_did = $6,
                 last_processed_count = $7, user_context = $8
               WHERE owner = $1 AND session_id = $2`,
              [
                owner,
                id,
                encodeText(n.title),
                n.updatedAtMs,
                encodeOptional(n.oracleName),
                encodeOptional(n.oracleDid),
                n.lastProcessedCount,
                n.userContext === undefined ? null : JSON.stringify(n.userContext)
              ]
            )
            return SessionStore.toSession(n)
          })
        )
      })

    return {
      create: (userDid, input) => Effect.map(insert(userDid, input, true), (r) => r.session),
      ensure: (userDid, input) => insert(userDid, input, false),
      get: (userDid, sessionId) =>
        Effect.gen(function* () {
          const did = yield* SessionStore.validateUserDid(userDid)
          const id = yield* SessionStore.validateSessionId(sessionId)
          const result = yield* sql(
            query<SessionRow>(
              db,
              `SELECT ${COLUMNS} FROM ${s}.sessions WHERE owner = $1 AND session_id = $2`,
              [ownerKey(did), id]
            )
          )
          const row = result.rows[0]
          return row === undefined ? undefined : SessionStore.toSession(toRecord(row))
        }),
      list: (userDid, options) =>
        Effect.gen(function* () {
          const did = yield* SessionStore.validateUserDid(userDid)
          const { limit, offset } = yield* SessionStore.validateListOptions(options)
          // One statement, so the page and the total come from the same snapshot. COLLATE "C"
          // compares UTF-8 bytes, i.e. code points: the order the port prescribes.
          const result = yield* sql(
            query<SessionRow & { total: string; present: boolean | null }>(
              db,
              `WITH t AS (SELECT count(*) AS total FROM ${s}.sessions WHERE owner = $1)
               SELECT t.total, p.* FROM t LEFT JOIN LATERAL (
                 SELECT true AS present, ${COLUMNS} FROM ${s}.sessions WHERE owner = $1
                 ORDER BY updated_at DESC, created_at DESC, session_id COLLATE "C" LIMIT $2 OFFSET $3
               ) p ON true`,
              [ownerKey(did), limit, offset]
            )
          )
          return {
            sessions: result.rows
              .filter((r) => r.present === true)
              .map((r) => SessionStore.toSession(toRecord(r))),
            total: int(result.rows[0]?.total ?? 0)
          }
        }),
      update: modify,
      touch: (userDid, sessionId) => modify(userDid, sessionId, {}),
      delete: (userDid, sessionId) =>
        Effect.gen(function* () {
          const did = yield* SessionStore.validateUserDid(userDid)
          const id = yield* SessionStore.validateSessionId(sessionId)
          const result = yield* sql(
            query(db, `DELETE FROM ${s}.sessions WHERE owner = $1 AND session_id = $2`, [ownerKey(did), id])
          )
          return (result.rowCount ?? 0) > 0
        })
    }
  })

/** The SessionStore port on the `PgDatabase`. */
export const layerSessionStore: Layer.Layer<SessionStore.SessionStore, never, PgDatabase | Clock.Clock> =
  Layer.effect(SessionStore.SessionStore, Effect.flatMap(PgDatabase, makeSessionStore))
