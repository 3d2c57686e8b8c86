/**
 * The `WaitStore` port on one SQLite file of its own (`<data>/waits.sqlite`): the waits of runs
 * that wait for their user, and how each was answered (docs/waiting.md).
 *
 * Why a file of its own, beside `runs.sqlite`: a wait outlives its run's retention as the user's
 * audit record, and the host's timeout sweep reads every user's open waits at once, as the run
 * store's boot sweep does. An answer is one conditional `UPDATE … WHERE answered_at IS NULL`
 * inside an immediate transaction that first reads the wait and applies core's rule
 * (`WaitStore.admit`): of answers racing from two connections (two hosts on one file, or a double
 * click), exactly one changes the row, and every other reads the first back.
 *
 * A file that cannot be a wait store (not SQLite, damaged, another application's, a newer schema)
 * fails the layer with `unavailable` naming the file; it is never modified, moved or deleted.
 */
import { join } from "node:path"
import { describe, type Wait, WaitStore } from "@plugboard/core"
import type BetterSqlite3 from "better-sqlite3"
import { Effect, Layer, type Scope } from "effect"
import { isCorruption, SqliteOpenError, sqliteCode } from "./errors.js"
import { openOwnedFile } from "./internal/ownedFile.js"

/** Options of the SQLite wait store. */
export interface SqliteWaitStoreOptions {
  /** Path of the database (see `waitsFile`); its directory is created when missing. */
  readonly filename: string
  /** How long a statement waits for another process's write lock (default 5000 ms). */
  readonly busyTimeoutMs?: number | undefined
}

/** The file name of the store inside a host's data directory. */
export const WAITS_FILE_NAME = "waits.sqlite"

/** The store's path inside the data directory `directory`. */
export const waitsFile = (directory: string): string => join(directory, WAITS_FILE_NAME)

/** `PRAGMA application_id` of a plugboard wait store ("PBWT"). */
export const WAITS_APPLICATION_ID = 0x50425754
/** Schema version of the store (`PRAGMA user_version`). */
export const WAITS_SCHEMA_VERSION = 1

const SCHEMA = `
CREATE TABLE waits (
  wait_id TEXT PRIMARY KEY,
  user_did TEXT NOT NULL,
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  request TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  deadline INTEGER NOT NULL,
  answer TEXT,
  answered_by TEXT,
  answered_at INTEGER
) STRICT;
CREATE INDEX waits_by_user ON waits (user_did, created_at, wait_id);
CREATE INDEX waits_open ON waits (deadline, wait_id) WHERE answered_at IS NULL;
`

const FILE_KIND = {
  applicationId: WAITS_APPLICATION_ID,
  schemaVersion: WAITS_SCHEMA_VERSION,
  tables: ["waits"]
} as const

const failure = (filename: string, doing: string, error: unknown): WaitStore.WaitStoreError => {
  const why =
    error instanceof SqliteOpenError
      ? error.reason
      : isCorruption(error)
        ? "corrupt"
        : (sqliteCode(error) ?? "error")
  return new WaitStore.WaitStoreError({
    reason: "unavailable",
    message: `wait store ${filename} ${doing} (${why}: ${describe(error)})${doing === "cannot be opened" ? "; the file was left untouched" : ""}`,
    cause: error
  })
}

interface Row {
  wait_id: string
  user_did: string
  run_id: string
  session_id: string
  request: string
  created_at: number
  deadline: number
  answer: string | null
  answered_by: string | null
  answered_at: number | null
}

const toRecord = (row: Row): WaitStore.WaitRecord => ({
  waitId: row.wait_id,
  did: row.user_did,
  runId: row.run_id,
  sessionId: row.session_id,
  request: JSON.parse(row.request) as Wait.WaitRequest,
  createdAtMs: row.created_at,
  deadlineMs: row.deadline,
  ...(row.answer === null
    ? {}
    : {
        answered: {
          answer: JSON.parse(row.answer) as Wait.WaitAnswer,
          by: row.answered_by ?? "",
          atMs: row.answered_at ?? 0
        }
      })
})

const COLUMNS =
  "wait_id, user_did, run_id, session_id, request, created_at, deadline, answer, answered_by, answered_at"

/** Opens the store for the life of the scope. */
export const makeWaitStore = (
  options: SqliteWaitStoreOptions
): Effect.Effect<WaitStore.WaitStoreService, WaitStore.WaitStoreError, Scope.Scope> =>
  Effect.gen(function* () {
    const filename = options.filename
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () =>
          openOwnedFile(filename, {
            kind: FILE_KIND,
            schema: SCHEMA,
            busyTimeoutMs: options.busyTimeoutMs ?? 5000
          }),
        catch: (error) => failure(filename, "cannot be opened", error)
      }),
      (db: BetterSqlite3.Database) => Effect.sync(() => db.close())
    )
    const insert = db.prepare<[string, string, string, string, string, number, number]>(
      `INSERT INTO waits (wait_id, user_did, run_id, session_id, request, created_at, deadline)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (wait_id) DO NOTHING`
    )
    const selectOwn = db.prepare<[string, string], Row>(
      `SELECT ${COLUMNS} FROM waits WHERE wait_id = ? AND user_did = ?`
    )
    const record = db.prepare<[string, string, number, string]>(
      "UPDATE waits SET answer = ?, answered_by = ?, answered_at = ? WHERE wait_id = ? AND answered_at IS NULL"
    )
    const selectUser = db.prepare<[string, number], Row>(
      `SELECT ${COLUMNS} FROM waits WHERE user_did = ? ORDER BY created_at, wait_id LIMIT ?`
    )
    const selectUnanswered = db.prepare<[string, number], Row>(
      `SELECT ${COLUMNS} FROM waits WHERE user_did = ? AND answered_at IS NULL ORDER BY created_at, wait_id LIMIT ?`
    )
    const selectDue = db.prepare<[number, number], { wait_id: string; user_did: string }>(
      `SELECT wait_id, user_did FROM waits WHERE answered_at IS NULL AND deadline <= ?
       ORDER BY deadline, wait_id LIMIT ?`
    )
    const attempt = <A>(doing: string, f: () => A) =>
      Effect.try({ try: f, catch: (error) => failure(filename, doing, error) })
    /** The user's waits the statement `select` reads, oldest first. */
    const readUser = (select: typeof selectUser, did: string, limit: number | undefined) =>
      Effect.gen(function* () {
        yield* WaitStore.validateKey(did, "x")
        const n = yield* WaitStore.validateLimit(limit)
        return yield* attempt("cannot be read", () => select.all(did, n).map(toRecord))
      })

    const service: WaitStore.WaitStoreService = {
      open: (wait) =>
        Effect.flatMap(WaitStore.validateNew(wait), (w) =>
          Effect.flatMap(
            attempt(
              "cannot be written",
              () =>
                insert.run(
                  w.waitId,
                  w.did,
                  w.runId,
                  w.sessionId,
                  JSON.stringify(w.request),
                  w.createdAtMs,
                  w.deadlineMs
                ).changes
            ),
            (changes) =>
              changes === 1
                ? Effect.void
                : Effect.fail(
                    new WaitStore.WaitStoreError({ reason: "conflict", message: `wait ${w.waitId} exists` })
                  )
          )
        ),
      get: (did, waitId) =>
        Effect.flatMap(WaitStore.validateKey(did, waitId), () =>
          attempt("cannot be read", () => {
            const row = selectOwn.get(waitId, did)
            return row === undefined ? undefined : toRecord(row)
          })
        ),
      answer: (did, waitId, answer, by, atMs) =>
        Effect.gen(function* () {
          yield* WaitStore.validateKey(did, waitId)
          const valid = yield* WaitStore.validateAnswer(answer, by, atMs)
          // Read, decide and write in one immediate transaction: an answer racing on another
          // connection (another host on this file) waits for the lock, then reads this one's.
          const outcome = yield* attempt("cannot be written", () =>
            db
              .transaction(
                ():
                  | WaitStore.AnswerOutcome
                  | { readonly _tag: "refused"; readonly error: WaitStore.WaitStoreError } => {
                  const row = selectOwn.get(waitId, did)
                  if (row === undefined)
                    return {
                      _tag: "refused",
                      error: new WaitStore.WaitStoreError({
                        reason: "not-found",
                        message: `no wait ${waitId}`
                      })
                    }
                  const stored = toRecord(row)
                  if (stored.answered !== undefined) return { _tag: "already", record: stored }
                  const refused = WaitStore.admit(stored, valid, by, atMs)
                  if (refused !== undefined) return { _tag: "refused", error: refused }
                  record.run(JSON.stringify(valid), by, atMs, waitId)
                  return { _tag: "answered", record: { ...stored, answered: { answer: valid, by, atMs } } }
                }
              )
              .immediate()
          )
          return outcome._tag === "refused" ? yield* Effect.fail(outcome.error) : outcome
        }),
      list: (did, limit) => readUser(selectUser, did, limit),
      unanswered: (did, limit) => readUser(selectUnanswered, did, limit),
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
          return yield* attempt("cannot be read", () =>
            selectDue.all(nowMs, n).map((r) => ({ did: r.user_did, waitId: r.wait_id }))
          )
        })
    }
    return service
  })

/** The store as a layer, open for the life of the layer. */
export const layerWaitStore = (
  options: SqliteWaitStoreOptions
): Layer.Layer<WaitStore.WaitStore, WaitStore.WaitStoreError> =>
  Layer.scoped(WaitStore.WaitStore, makeWaitStore(options))
