/**
 * The `RunStore` port on one SQLite file of its own (`<data>/runs.sqlite`): runs and their
 * numbered frames, so that a turn outlives its HTTP request and its process.
 *
 * Why one shared file and not the per-user databases: runs are short-lived, written on every
 * streamed chunk, and the boot sweep (`interruptUnfinished`) and `prune` must see every user's
 * runs at once; a per-user file would mean opening every user's database at boot. The file is
 * WAL with `synchronous = NORMAL`, so every committed frame survives a process crash (only a
 * power loss can take the last commits), which is what lets a restarted host report a run cut
 * off by `kill -9` as `interrupted` with all the text its client saw.
 *
 * Every change checks and writes together (the next frame id, the partial text, the status)
 * inside an IMMEDIATE transaction, and a follower is woken by an in-process notifier after the
 * commit. The writes are committed in groups, as the user files' are (`internal/groupCommit.ts`):
 * those made in the same turn of the event loop share one transaction, each in a savepoint of its
 * own, committed before the next turn (a commit, not the statements, is most of a write's cost:
 * with many turns at once, one turn's end, another's frames and a third's creation go in one), and
 * each answers only once its group has committed. They keep their call order; a write the store
 * refuses (an ended run, a duplicate id) fails alone, with nothing written. A read first commits
 * the writes asked for before it. Another process writing the same file is seen by followers within `pollMs`;
 * real cross-process fan-out belongs to the shared engines. The rules (validation, the `done`
 * payload, how a follow reads) are core's; this file only stores.
 *
 * A file that cannot be a run store (not SQLite, damaged, unreadable, another application's,
 * a newer schema) fails the layer with an `unavailable` error naming the file and why; it is
 * never modified, moved or deleted.
 */
import { join } from "node:path"
import { Clock, describe, RunStore } from "@plugboard/core"
import type BetterSqlite3 from "better-sqlite3"
import { Effect, Layer, Option, type Scope, Stream } from "effect"
import { isCorruption, SqliteOpenError, sqliteCode } from "./errors.js"
import { GroupCommit } from "./internal/groupCommit.js"
import { openOwnedFile } from "./internal/ownedFile.js"

/** Options of the SQLite run store. */
export interface SqliteRunStoreOptions {
  /** Path of the runs database (see `runsFile`); its directory is created when missing. */
  readonly filename: string
  /** How long a statement waits for another process's write lock (default 5000 ms). */
  readonly busyTimeoutMs?: number | undefined
  /** How often (real ms) a follower re-reads without a wake-up, to see other processes' frames (default 1000). */
  readonly pollMs?: number | undefined
}

/** The file name of the run store inside a host's data directory. */
export const RUNS_FILE_NAME = "runs.sqlite"

/** The run store's path inside the data directory `directory`. */
export const runsFile = (directory: string): string => join(directory, RUNS_FILE_NAME)

/** `PRAGMA application_id` of a plugboard run store ("PBRN"), so a foreign database is recognised. */
export const RUNS_APPLICATION_ID = 0x5042524e
/** Schema version of the run store (`PRAGMA user_version`). */
export const RUNS_SCHEMA_VERSION = 1

const SCHEMA = `
CREATE TABLE runs (
  did TEXT NOT NULL,
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'interrupted', 'aborted', 'failed')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  ended_at INTEGER,
  last_frame_id INTEGER NOT NULL DEFAULT 0,
  partial_text TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (did, run_id)
) STRICT;
CREATE INDEX runs_active ON runs (did, session_id, created_at) WHERE status IN ('queued', 'running');
CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at IS NOT NULL;
CREATE TABLE frames (
  did TEXT NOT NULL,
  run_id TEXT NOT NULL,
  id INTEGER NOT NULL CHECK (id > 0),
  event TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (did, run_id, id),
  FOREIGN KEY (did, run_id) REFERENCES runs (did, run_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
`

const RUN_STORE_FILE = {
  applicationId: RUNS_APPLICATION_ID,
  schemaVersion: RUNS_SCHEMA_VERSION,
  tables: ["runs", "frames"]
} as const

const openDatabase = (filename: string, busyTimeoutMs: number): BetterSqlite3.Database =>
  // Pruned answers must not linger in free pages (see Database.open for the same choice).
  openOwnedFile(filename, {
    kind: RUN_STORE_FILE,
    schema: SCHEMA,
    busyTimeoutMs,
    scrubbed: true,
    incrementalVacuum: true,
    foreignKeys: true
  })

/** Why the file cannot be used, as the port's error. */
const openFailure = (filename: string, error: unknown): RunStore.RunStoreError => {
  const code = sqliteCode(error)
  const reason =
    error instanceof SqliteOpenError
      ? error.reason
      : code === "SQLITE_NOTADB"
        ? "not-a-database"
        : code?.startsWith("SQLITE_CORRUPT")
          ? "corrupt"
          : "unavailable"
  const detail = describe(error)
  return new RunStore.RunStoreError({
    reason: "unavailable",
    message: `run store ${filename} cannot be opened (${reason}: ${detail}); the file was left untouched`,
    cause: error
  })
}

/** A driver failure after open, as the port's error (a typed port error passes through). */
const storageFailure = (filename: string, error: unknown): RunStore.RunStoreError => {
  if (error instanceof RunStore.RunStoreError) return error
  const detail = describe(error)
  return new RunStore.RunStoreError({
    reason: "unavailable",
    message: isCorruption(error)
      ? `run store ${filename} is corrupt (${detail})`
      : `run store ${filename} is unavailable (${sqliteCode(error) ?? "error"}: ${detail})`,
    cause: error
  })
}

interface RunRow {
  readonly did: string
  readonly run_id: string
  readonly session_id: string
  readonly request_id: string
  readonly status: RunStore.RunStatus
  readonly created_at: number
  readonly updated_at: number
  readonly ended_at: number | null
  readonly last_frame_id: number
  readonly partial_text: string
}

interface FrameRow {
  readonly id: number
  readonly event: string
  readonly data: string
}

const toRun = (row: RunRow): RunStore.Run => ({
  runId: row.run_id,
  sessionId: row.session_id,
  did: row.did,
  requestId: row.request_id,
  status: row.status,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  ...(row.ended_at === null ? {} : { endedAt: row.ended_at }),
  lastFrameId: row.last_frame_id,
  partialText: row.partial_text
})

const toFrame = (row: FrameRow): RunStore.Frame => ({
  id: row.id,
  event: row.event,
  data: RunStore.decodeFrameData(row.data)
})

const ACTIVE = "status IN ('queued', 'running')"

/**
 * Opens (creating when missing) the run store at `options.filename` for the life of the scope.
 * Fails `unavailable` for a file that cannot be a run store, and never changes such a file.
 */
export const makeRunStore = (
  options: SqliteRunStoreOptions
): Effect.Effect<RunStore.RunStoreService, RunStore.RunStoreError, Scope.Scope | Clock.Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const filename = options.filename
    const pollMs = options.pollMs ?? 1000
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => openDatabase(filename, options.busyTimeoutMs ?? 5000),
        catch: (error) => openFailure(filename, error)
      }),
      (db) =>
        Effect.sync(() => {
          groups.close()
          db.close()
        })
    )
    const notifier = RunStore.makeNotifier()

    const selectRun = db.prepare<[string, string], RunRow>("SELECT * FROM runs WHERE did = ? AND run_id = ?")
    const insertRun = db.prepare(
      `INSERT OR IGNORE INTO runs (did, run_id, session_id, request_id, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`
    )
    const setStatus = db.prepare<[RunStore.RunStatus, number, string, string]>(
      "UPDATE runs SET status = ?, updated_at = ? WHERE did = ? AND run_id = ?"
    )
    const bumpFrames = db.prepare<[number, string, number, string, string], { last_frame_id: number }>(
      `UPDATE runs SET last_frame_id = last_frame_id + ?, partial_text = partial_text || ?, updated_at = ?
       WHERE did = ? AND run_id = ? AND ${ACTIVE} RETURNING last_frame_id`
    )
    const endRun = db.prepare<[RunStore.EndStatus, number, number, number, string, string]>(
      "UPDATE runs SET status = ?, last_frame_id = ?, updated_at = ?, ended_at = ? WHERE did = ? AND run_id = ?"
    )
    // One statement checks the run is active and ends it, taking the ids of the frames before
    // `done` and `done`'s own; what it returns is all `done` needs (no read first).
    const endActive = db.prepare<
      [RunStore.EndStatus, number, string, number, number, string, string],
      { last_frame_id: number; partial_text: string }
    >(
      `UPDATE runs SET status = ?, last_frame_id = last_frame_id + ?, partial_text = partial_text || ?,
         updated_at = ?, ended_at = ?
       WHERE did = ? AND run_id = ? AND ${ACTIVE} RETURNING last_frame_id, partial_text`
    )
    const insertFrame = db.prepare<[string, string, number, string, string]>(
      "INSERT INTO frames (did, run_id, id, event, data) VALUES (?, ?, ?, ?, ?)"
    )
    const selectFrames = db.prepare<[string, string, number], FrameRow>(
      "SELECT id, event, data FROM frames WHERE did = ? AND run_id = ? AND id > ? ORDER BY id"
    )
    const selectActiveForSession = db.prepare<[string, string], RunRow>(
      `SELECT * FROM runs WHERE did = ? AND session_id = ? AND ${ACTIVE}
       ORDER BY created_at DESC, rowid DESC LIMIT 1`
    )
    const selectAllActive = db.prepare<[], RunRow>(`SELECT * FROM runs WHERE ${ACTIVE}`)
    const deleteEnded = db.prepare<[number]>("DELETE FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?")
    const deleteOfSession = db.prepare<[string, string], { run_id: string; last_frame_id: number }>(
      "DELETE FROM runs WHERE did = ? AND session_id = ? RETURNING run_id, last_frame_id"
    )

    // A busy file fails at once, after the driver's own wait (`busyTimeoutMs`), as it always has.
    const groups = new GroupCommit(db, {
      filename,
      busyRetryMs: 0,
      failure: (error) => storageFailure(filename, error)
    })

    /** Stores one append inside the group's transaction: its frames, or throws why the run refused it. */
    const storeAppend = (
      did: string,
      runId: string,
      frames: ReadonlyArray<RunStore.NormalizedFrame>,
      now: number
    ): ReadonlyArray<RunStore.Frame> => {
      const text = frames.map((f) => f.text).join("")
      const bumped = bumpFrames.get(frames.length, text, now, did, runId)
      if (bumped === undefined) throw RunStore.ended(runId, existing(did, runId).status)
      const first = bumped.last_frame_id - frames.length + 1
      return frames.map((frame, i) => {
        insertFrame.run(did, runId, first + i, frame.event, frame.json)
        return { id: first + i, event: frame.event, data: frame.data }
      })
    }

    /** The group commit's answer as an effect (its errors are the port's: see `failure`). */
    const settled = <A>(run: () => Promise<A>, committed?: (a: A) => void) =>
      Effect.async<A, RunStore.RunStoreError>((resume) => {
        run().then(
          (a) => {
            committed?.(a)
            resume(Effect.succeed(a))
          },
          (error: RunStore.RunStoreError) => resume(Effect.fail(error))
        )
      })
    /** Queues `f` for this turn's group commit; `committed` runs once the group committed. */
    const write = <A>(f: () => A, committed?: (a: A) => void) => settled(() => groups.write(f), committed)
    // A deferred transaction gives a read one snapshot even while another process writes.
    const read = <A>(f: () => A) => settled(() => groups.read(db.transaction(f)))

    const existing = (did: string, runId: string): RunRow => {
      const row = selectRun.get(did, runId)
      if (row === undefined) throw RunStore.notFound(runId)
      return row
    }

    /**
     * Appends `frames` (checked), then `done`, and ends the run if it is active, inside the
     * caller's transaction; throws why not (unknown, or ended) before writing anything.
     */
    const endIfActive = (
      did: string,
      runId: string,
      outcome: RunStore.EndOutcome,
      now: number,
      frames: ReadonlyArray<RunStore.NormalizedFrame>
    ): RunStore.Frame => {
      const text = frames.map((f) => f.text).join("")
      const row = endActive.get(outcome.status, frames.length + 1, text, now, now, did, runId)
      if (row === undefined) throw RunStore.ended(runId, existing(did, runId).status)
      const first = row.last_frame_id - frames.length
      frames.forEach((frame, i) => {
        insertFrame.run(did, runId, first + i, frame.event, frame.json)
      })
      const done: RunStore.Frame = {
        id: row.last_frame_id,
        event: RunStore.DONE_EVENT,
        data: RunStore.doneData(outcome, row.partial_text)
      }
      insertFrame.run(did, runId, done.id, done.event, JSON.stringify(done.data))
      return done
    }

    /**
     * Appends the `done` frame and ends the run, inside the caller's transaction: the boot sweep's
     * end, of a row its scan already read. Why not `endIfActive` for it too: that UPDATE …
     * RETURNING exists so a turn's end needs no read first, while the sweep has read every row
     * already; ending the sweep's runs through it (checking each is active again, appending to
     * its text, returning both) measured slower: 20,000 runs in 244–367 ms against 212–323
     * (issue 37, four runs a side, alternated).
     */
    const endRow = (row: RunRow, outcome: RunStore.EndOutcome, now: number): RunStore.Frame => {
      const status = outcome.status
      const done: RunStore.Frame = {
        id: row.last_frame_id + 1,
        event: RunStore.DONE_EVENT,
        data: RunStore.doneData(outcome, row.partial_text)
      }
      insertFrame.run(row.did, row.run_id, done.id, done.event, JSON.stringify(done.data))
      endRun.run(status, done.id, now, now, row.did, row.run_id)
      return done
    }

    const readLog = (did: string, runId: string, after: number) =>
      read((): RunStore.LogSlice => {
        const row = existing(did, runId)
        return {
          frames: selectFrames.all(did, runId, after).map(toFrame),
          ended: !RunStore.isActive(row.status),
          lastFrameId: row.last_frame_id
        }
      })

    const ids = (did: string, runId: string) =>
      Effect.all([RunStore.validateDid(did), RunStore.validateId("runId", runId)])

    /** Queues the frames for the next group commit, and answers once it committed. */
    const appendFrames = (did: string, runId: string, inputs: ReadonlyArray<RunStore.FrameInput>) =>
      Effect.gen(function* () {
        const { did: d, runId: id, frames } = yield* RunStore.validateAppend(did, runId, inputs)
        if (frames.length === 0) return []
        const now = yield* clock.now()
        return yield* write(
          () => storeAppend(d, id, frames, now),
          (stored) => notifier.publish(d, id, stored.at(-1)!.id)
        )
      })

    const service: RunStore.RunStoreService = {
      create: (input) =>
        Effect.gen(function* () {
          const now = yield* clock.now()
          const run = yield* RunStore.validateNewRun(input, now)
          const { did, sessionId, requestId, runId, status } = run
          return yield* write((): RunStore.Run => {
            if (insertRun.run(did, runId, sessionId, requestId, status, now, now).changes === 0) {
              throw new RunStore.RunStoreError({
                reason: "invalid",
                message: `Run '${runId}' already exists`
              })
            }
            // The row as inserted: nothing to read back.
            return run
          })
        }),
      start: (did, runId) =>
        Effect.gen(function* () {
          const [d, id] = yield* ids(did, runId)
          const now = yield* clock.now()
          return yield* write(() => {
            const row = existing(d, id)
            if (!RunStore.isActive(row.status)) throw RunStore.ended(id, row.status)
            if (row.status === "running") {
              throw new RunStore.RunStoreError({
                reason: "invalid",
                message: `Run '${id}' is already running`
              })
            }
            setStatus.run("running", now, d, id)
            return toRun({ ...row, status: "running", updated_at: now })
          })
        }),
      append: RunStore.appendOne(appendFrames),
      appendAll: appendFrames,
      end: (did, runId, outcome, frames) =>
        Effect.gen(function* () {
          const checked = yield* RunStore.validateEnd(did, runId, outcome, frames)
          const { did: d, runId: id } = checked
          const now = yield* clock.now()
          return yield* write(
            () => endIfActive(d, id, checked.outcome, now, checked.frames),
            (done) => notifier.publish(d, id, done.id)
          )
        }),
      get: (did, runId) =>
        Effect.flatMap(ids(did, runId), ([d, id]) =>
          read(() => Option.map(Option.fromNullable(selectRun.get(d, id)), toRun))
        ),
      frames: (did, runId, after) =>
        Effect.flatMap(Effect.all([ids(did, runId), RunStore.validateAfter(after)]), ([[d, id], a]) =>
          Effect.map(readLog(d, id, a), (slice) => slice.frames)
        ),
      follow: (did, runId, after) =>
        Stream.unwrap(
          Effect.map(Effect.all([ids(did, runId), RunStore.validateAfter(after)]), ([[d, id], a]) =>
            RunStore.followLog(a, {
              read: (cursor) => readLog(d, id, cursor),
              subscribe: notifier.subscribe(d, id),
              pollMs
            })
          )
        ),
      activeForSession: (did, sessionId) =>
        Effect.flatMap(
          Effect.all([RunStore.validateDid(did), RunStore.validateId("sessionId", sessionId)]),
          ([d, s]) => read(() => Option.map(Option.fromNullable(selectActiveForSession.get(d, s)), toRun))
        ),
      interruptUnfinished: () =>
        Effect.gen(function* () {
          const now = yield* clock.now()
          const ended = yield* write(() =>
            selectAllActive
              .all()
              .map((row) => ({ row, done: endRow(row, { status: "interrupted", reason: "restart" }, now) }))
          )
          for (const { row, done } of ended) notifier.publish(row.did, row.run_id, done.id)
          return ended.map(({ row }) => ({ did: row.did, runId: row.run_id }))
        }),
      deleteSession: (did, sessionId) =>
        Effect.gen(function* () {
          const [d, sid] = yield* Effect.all([
            RunStore.validateDid(did),
            RunStore.validateId("sessionId", sessionId)
          ])
          const deleted = yield* write(() => deleteOfSession.all(d, sid))
          // A follower of a deleted run reads again, finds nothing and ends.
          for (const row of deleted) notifier.publish(d, row.run_id, row.last_frame_id)
          return deleted.length
        }),
      prune: (olderThanMs) =>
        Effect.gen(function* () {
          const retention = yield* RunStore.validateRetention(olderThanMs)
          const now = yield* clock.now()
          const deleted = yield* write(() => deleteEnded.run(now - retention).changes)
          // Give the freed pages back to the file system; best effort, outside the transaction.
          if (deleted > 0) yield* Effect.ignore(Effect.try(() => db.pragma("incremental_vacuum")))
          return deleted
        })
    }
    return service
  })

/** The SQLite run store as a layer; the file closes when the layer is released. */
export const layerRunStore = (
  options: SqliteRunStoreOptions
): Layer.Layer<RunStore.RunStore, RunStore.RunStoreError, Clock.Clock> =>
  Layer.scoped(RunStore.RunStore, makeRunStore(options))
