/**
 * The `WaitStore` port on Postgres: one `waits` table, so a wait opened by a turn on one host is
 * answered from any other (docs/waiting.md). Reads are scoped by the owner digest of the user's
 * DID, as in every other table; the wait id is the primary key, so an id opened twice is a
 * `conflict` whoever opened it.
 *
 * An answer is recorded at most once across every host: the wait is read and core's rule
 * (`WaitStore.admit`) applied to it — what it checks (the request, the user, the deadline) never
 * changes once a wait is opened — then recorded by one conditional
 * `UPDATE … WHERE answered_at IS NULL`. Of answers racing from any number of connections, the
 * row lock lets exactly one change the row; every other re-checks the condition after the
 * winner's commit, changes nothing, and reads the winner's answer back (`already`).
 */
import { type Wait, WaitStore } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { decodeText, encodeText, int, ownerKey, type PgFailure, query } from "./internal/sql.js"
import { PgDatabase, type PgDatabaseService } from "./PgDatabase.js"

interface Row {
  wait_id: string
  did: string
  run_id: string
  session_id: string
  request: string
  created_at: string
  deadline: string
  answer: string | null
  answered_by: string | null
  answered_at: string | null
}

const COLUMNS =
  "wait_id, did, run_id, session_id, request, created_at, deadline, answer, answered_by, answered_at"

const toRecord = (row: Row): WaitStore.WaitRecord => ({
  waitId: row.wait_id,
  did: decodeText(row.did),
  runId: row.run_id,
  sessionId: row.session_id,
  request: JSON.parse(row.request) as Wait.WaitRequest,
  createdAtMs: int(row.created_at),
  deadlineMs: int(row.deadline),
  ...(row.answer === null
    ? {}
    : {
        answered: {
          answer: JSON.parse(row.answer) as Wait.WaitAnswer,
          by: decodeText(row.answered_by ?? ""),
          atMs: int(row.answered_at ?? 0)
        }
      })
})

const unavailable = (failure: PgFailure) =>
  new WaitStore.WaitStoreError({
    reason: "unavailable",
    message: `wait storage unavailable: ${failure.message}`,
    cause: failure.cause
  })

const notFound = (waitId: string) =>
  new WaitStore.WaitStoreError({ reason: "not-found", message: `no wait ${waitId}` })

/** Builds the Postgres WaitStore on a database. */
export const makeWaitStore = (db: PgDatabaseService): WaitStore.WaitStoreService => {
  const s = db.schema
  const sql = <A>(effect: Effect.Effect<A, PgFailure>) =>
    Effect.mapError(Effect.zipRight(db.ready, effect), unavailable)
  const selectOwn = (did: string, waitId: string) =>
    Effect.map(
      sql(
        query<Row>(db, `SELECT ${COLUMNS} FROM ${s}.waits WHERE wait_id = $1 AND owner = $2`, [
          waitId,
          ownerKey(did)
        ])
      ),
      (result) => (result.rows[0] === undefined ? undefined : toRecord(result.rows[0]))
    )
  /** The user's waits, oldest first, with the extra condition `where` (a fixed SQL fragment). */
  const selectUser = (did: string, limit: number | undefined, where: string) =>
    Effect.gen(function* () {
      yield* WaitStore.validateKey(did, "x")
      const n = yield* WaitStore.validateLimit(limit)
      const result = yield* sql(
        query<Row>(
          db,
          `SELECT ${COLUMNS} FROM ${s}.waits WHERE owner = $1${where} ORDER BY created_at, wait_id LIMIT $2`,
          [ownerKey(did), n]
        )
      )
      return result.rows.map(toRecord)
    })
  return {
    open: (wait) =>
      Effect.flatMap(WaitStore.validateNew(wait), (w) =>
        Effect.flatMap(
          sql(
            query(
              db,
              `INSERT INTO ${s}.waits (wait_id, owner, did, run_id, session_id, request, created_at, deadline)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (wait_id) DO NOTHING`,
              [
                w.waitId,
                ownerKey(w.did),
                encodeText(w.did),
                w.runId,
                w.sessionId,
                JSON.stringify(w.request),
                w.createdAtMs,
                w.deadlineMs
              ]
            )
          ),
          (result) =>
            result.rowCount === 1
              ? Effect.void
              : Effect.fail(
                  new WaitStore.WaitStoreError({ reason: "conflict", message: `wait ${w.waitId} exists` })
                )
        )
      ),
    get: (did, waitId) => Effect.flatMap(WaitStore.validateKey(did, waitId), () => selectOwn(did, waitId)),
    answer: (did, waitId, answer, by, atMs) =>
      Effect.gen(function* () {
        yield* WaitStore.validateKey(did, waitId)
        const valid = yield* WaitStore.validateAnswer(answer, by, atMs)
        const stored = yield* selectOwn(did, waitId)
        if (stored === undefined) return yield* Effect.fail(notFound(waitId))
        if (stored.answered !== undefined) return { _tag: "already", record: stored } as const
        const refused = WaitStore.admit(stored, valid, by, atMs)
        if (refused !== undefined) return yield* Effect.fail(refused)
        // The one write: only the first answer finds `answered_at` still NULL.
        const written = yield* sql(
          query<Row>(
            db,
            `UPDATE ${s}.waits SET answer = $1, answered_by = $2, answered_at = $3
             WHERE wait_id = $4 AND owner = $5 AND answered_at IS NULL RETURNING ${COLUMNS}`,
            [JSON.stringify(valid), encodeText(by), atMs, waitId, ownerKey(did)]
          )
        )
        if (written.rows[0] !== undefined)
          return { _tag: "answered", record: toRecord(written.rows[0]) } as const
        // Another answer was committed between the read and the write: read it back.
        const first = yield* selectOwn(did, waitId)
        if (first?.answered === undefined)
          return yield* Effect.fail(
            new WaitStore.WaitStoreError({
              reason: "unavailable",
              message: `wait ${waitId} was neither answered by this answer nor by another`
            })
          )
        return { _tag: "already", record: first } as const
      }),
    list: (did, limit) => selectUser(did, limit, ""),
    unanswered: (did, limit) => selectUser(did, limit, " AND answered_at IS NULL"),
    due: (nowMs, limit) =>
      Effect.gen(function* () {
        if (typeof nowMs !== "number" || !Number.isSafeInteger(nowMs) || nowMs < 0)
          return yield* Effect.fail(
            new WaitStore.WaitStoreError({
              reason: "invalid",
              message: `nowMs must be a non-negative integer of epoch milliseconds, got ${String(nowMs)}`
            })
          )
        const n = yield* WaitStore.validateLimit(limit)
        const result = yield* sql(
          query<{ wait_id: string; did: string }>(
            db,
            `SELECT wait_id, did FROM ${s}.waits WHERE answered_at IS NULL AND deadline <= $1
             ORDER BY deadline, wait_id LIMIT $2`,
            [nowMs, n]
          )
        )
        return result.rows.map((r) => ({ did: decodeText(r.did), waitId: r.wait_id }))
      })
  }
}

/** The Postgres WaitStore as a layer over the `PgDatabase`. */
export const layerWaitStore: Layer.Layer<WaitStore.WaitStore, never, PgDatabase> = Layer.effect(
  WaitStore.WaitStore,
  Effect.map(PgDatabase, makeWaitStore)
)
