/**
 * One plugboard SQLite database file: opening it safely (pragmas, schema, a health check),
 * cached prepared statements, and transactions that never surface `SQLITE_BUSY`.
 *
 * Why better-sqlite3 directly and not `@effect/sql-sqlite-node` (which wraps the same driver):
 * LangGraph's `BaseCheckpointSaver` is a Promise API called many times per turn, and a
 * synchronous transaction cannot interleave with another one of the same process (no await
 * inside it), so in-process writers need no lock at all. `@effect/sql` runs every statement in
 * a fiber, under a scope and the connection's semaphore: measured on this project's machine
 * (2026-11-25, same process, three rounds), a primary-key upsert plus read cost 2.6–3.2× the
 * direct statements (about 57 µs against 21), and a one-statement write transaction 2.8–3.7×.
 * That overhead would buy nothing here, so the session store (on this class) and the ledger and
 * run store (on better-sqlite3 themselves) do without it too, and the package does not depend on
 * `@effect/sql`. Effect stays at the edges: the ports' services and their layers.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs"
import { describe } from "@plugboard/core"
import BetterSqlite3 from "better-sqlite3"
import { isCorruption, SqliteOpenError, SqliteStorageError, sqliteCode } from "./errors.js"
import { ensureFileId } from "./FileId.js"
import { GroupCommit } from "./internal/groupCommit.js"

/** The schema version this code writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = 1

/** How to open a database file. */
export interface DatabaseOptions {
  /** Path of the file (created when missing). */
  readonly filename: string
  /**
   * How long SQLite itself waits for another process's lock before returning BUSY (default
   * 200 ms). Kept short because it blocks the event loop; longer waits are async retries.
   */
  readonly busyTimeoutMs?: number | undefined
  /** Total time a write keeps retrying a busy database before failing `busy` (default 30 s). */
  readonly busyRetryMs?: number | undefined
  /**
   * `NORMAL` (default) survives a process crash with every committed transaction (WAL), and
   * can lose the last commits only on power loss; `FULL` fsyncs every commit.
   */
  readonly synchronous?: "NORMAL" | "FULL" | undefined
  /** Health check on open: `quick` runs `PRAGMA quick_check` (default); `none` skips it. */
  readonly verify?: "quick" | "none" | undefined
  /** When set, the file records this owner on first open and refuses another owner later. */
  readonly ownerDid?: string | undefined
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS checkpoints (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  type TEXT NOT NULL,
  checkpoint BLOB NOT NULL,
  channel_versions TEXT NOT NULL,
  metadata_type TEXT NOT NULL,
  metadata BLOB NOT NULL,
  needs_ancestors INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  channel TEXT NOT NULL,
  version TEXT NOT NULL,
  type TEXT NOT NULL,
  value BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);
CREATE TABLE IF NOT EXISTS writes (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT NOT NULL,
  value BLOB,
  task_path TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY,
  title TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  oracle_name TEXT,
  oracle_did TEXT,
  last_processed_count INTEGER NOT NULL DEFAULT 0,
  user_context TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_activity ON sessions (updated_at DESC, created_at DESC, session_id);
CREATE TABLE IF NOT EXISTS plugboard_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS connections (
  server TEXT PRIMARY KEY,
  sealed TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`

/**
 * Tables added after schema version 1 without a version of their own: created on open when
 * missing, so a file of an earlier build gains them, and a build that predates them still opens a
 * file that has them (it ignores the table): a user's snapshot moves between hosts of both builds.
 */
const ADDED_TABLES = ["connections"] as const

const missingAddedTable = (db: BetterSqlite3.Database): boolean => {
  const present = new Set(
    db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as Array<string>
  )
  return ADDED_TABLES.some((table) => !present.has(table))
}

/** An open plugboard database. Not shared across processes' memory; one per file per registry. */
export class Database {
  /** The better-sqlite3 handle (for `backup()` and diagnostics). */
  readonly db: BetterSqlite3.Database
  readonly filename: string
  private readonly statements = new Map<string, BetterSqlite3.Statement>()
  private readonly groups: GroupCommit
  private closed = false

  private constructor(db: BetterSqlite3.Database, filename: string, busyRetryMs: number) {
    this.db = db
    this.filename = filename
    this.groups = new GroupCommit(db, { filename, busyRetryMs, failure: toStorageError })
  }

  /**
   * Opens (creating when missing) and checks a database. Throws `SqliteOpenError` for a file
   * that is not a usable database; it never modifies or removes such a file.
   */
  static open(options: DatabaseOptions): Database {
    const { filename } = options
    let db: BetterSqlite3.Database | undefined
    try {
      checkHeader(filename)
      db = new BetterSqlite3(filename)
      // Set first: every later statement may need to wait for another process.
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 200))}`)
      // A deleted conversation must not survive in the bytes: without this, SQLite leaves deleted
      // rows in free pages and in the unused space of pages, where a copy of the file (the
      // Matrix sync uploads an online backup, which copies every page) still holds them. ON
      // (not FAST) also zeroes pages moved to the freelist. Per connection, so set on every open.
      db.pragma("secure_delete = ON")
      const version = db.pragma("user_version", { simple: true }) as number
      if (version > SCHEMA_VERSION) {
        throw new SqliteOpenError({
          reason: "schema-too-new",
          path: filename,
          message: `schema version ${version} is newer than this code's ${SCHEMA_VERSION}`
        })
      }
      if (version === 0 && tableCount(db) === 0) {
        // auto_vacuum must be chosen before the first table exists.
        db.pragma("auto_vacuum = INCREMENTAL")
      }
      const mode = db.pragma("journal_mode = WAL", { simple: true })
      if (mode !== "wal") throw new Error(`could not enable WAL (journal_mode=${String(mode)})`)
      db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`)
      if ((options.verify ?? "quick") === "quick") {
        const rows = db.pragma("quick_check") as Array<{ quick_check: string }>
        if (rows.length !== 1 || rows[0]?.quick_check !== "ok") {
          throw new SqliteOpenError({
            reason: "corrupt",
            path: filename,
            message: `quick_check failed: ${rows
              .slice(0, 3)
              .map((r) => r.quick_check)
              .join("; ")}`
          })
        }
      }
      if (version < SCHEMA_VERSION || missingAddedTable(db)) {
        db.transaction(() => {
          db!.exec(SCHEMA)
          db!.pragma(`user_version = ${SCHEMA_VERSION}`)
        }).immediate()
      }
      if (options.ownerDid !== undefined) checkOwner(db, filename, options.ownerDid)
      ensureFileId(db)
      return new Database(db, filename, options.busyRetryMs ?? 30_000)
    } catch (error) {
      try {
        db?.close()
      } catch {
        // Closing a handle on a broken file can fail too; the open error is what matters.
      }
      throw toOpenError(filename, error)
    }
  }

  /** True once `close()` ran. */
  get isClosed(): boolean {
    return this.closed
  }

  /** A prepared statement for `sql`, prepared once per connection. */
  statement(sql: string): BetterSqlite3.Statement {
    let stmt = this.statements.get(sql)
    if (stmt === undefined) {
      stmt = this.db.prepare(sql)
      this.statements.set(sql, stmt)
    }
    return stmt
  }

  /**
   * Runs `fn` in an IMMEDIATE transaction (the write lock is taken up front, so a lock upgrade
   * can never deadlock into BUSY) and resolves once it has committed. If another process holds
   * the lock, retries asynchronously with jittered backoff for up to `busyRetryMs`, never
   * blocking the event loop for longer than `busyTimeoutMs` per attempt.
   *
   * Writes asked for in the same turn of the event loop commit together (group commit,
   * `internal/groupCommit.ts`): one transaction, each write in a savepoint of its own. A write
   * that throws rolls back to its savepoint and fails alone; the others still commit. Groups
   * commit in the order they were asked for.
   */
  write<T>(fn: () => T): Promise<T> {
    return this.groups.write(fn)
  }

  /** How many write transactions have committed (a group counts once): for tests and diagnostics. */
  get commits(): number {
    return this.groups.commits
  }

  /** How many times an operation found the database locked by another connection and retried. */
  get busyRetries(): number {
    return this.groups.busyRetries
  }

  /**
   * Runs a read (retried like a write in the rare cases a reader sees BUSY, e.g. recovery). Writes
   * already asked for commit first, so a read sees every write asked for before it.
   */
  read<T>(fn: () => T): Promise<T> {
    return this.groups.read(fn)
  }

  /** Frees up to `pages` unused pages back to the file system (auto_vacuum=INCREMENTAL). */
  incrementalVacuum(pages = 1000): void {
    this.db.pragma(`incremental_vacuum(${Math.max(1, Math.trunc(pages))})`)
  }

  /** Frees every unused page back to the file system (auto_vacuum=INCREMENTAL). */
  vacuumFreePages(): void {
    const free = this.db.pragma("freelist_count", { simple: true }) as number
    if (free > 0) this.incrementalVacuum(free)
  }

  /**
   * Copies the WAL into the database file and truncates the WAL to zero bytes, so the old page
   * images it holds (deleted rows included) leave the disk. Best effort: returns false when
   * another connection's reader kept it from completing (the WAL is then truncated by a later
   * checkpoint). Must run outside a transaction.
   */
  truncateWal(): boolean {
    const [row] = this.db.pragma("wal_checkpoint(TRUNCATE)") as Array<{ busy: number }>
    return row?.busy === 0
  }

  /** Runs `PRAGMA integrity_check`; returns its messages (`["ok"]` when sound). */
  integrityCheck(): Array<string> {
    return (this.db.pragma("integrity_check") as Array<{ integrity_check: string }>).map(
      (r) => r.integrity_check
    )
  }

  /** Closes the connection (idempotent). Checkpoints the WAL into the main file first. */
  close(): void {
    if (this.closed) return
    // Writes still waiting for their group commit get one attempt now, before the handle goes.
    this.groups.close()
    this.closed = true
    this.statements.clear()
    this.db.close()
  }
}

const MAGIC = Buffer.from("SQLite format 3\u0000", "latin1")

/**
 * Refuses a non-empty file that does not start with SQLite's magic header before SQLite
 * touches it: SQLite would otherwise treat a `-wal` file next to it as its own, and may
 * rewrite or remove it on close. (An empty file is a valid, empty database.)
 */
export const checkHeader = (filename: string): void => {
  let fd: number | undefined
  try {
    fd = openSync(filename, "r")
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === "ENOENT") return // a new database
    throw new SqliteOpenError({
      reason: code === "EACCES" || code === "EPERM" ? "unreadable" : "unavailable",
      path: filename,
      message: `${code ?? "error"}: cannot read the file`,
      cause: error
    })
  }
  try {
    if (!fstatSync(fd).isFile()) {
      throw new SqliteOpenError({
        reason: "unreadable",
        path: filename,
        message: "not a regular file (a directory or a device where the database should be)"
      })
    }
    const head = Buffer.alloc(MAGIC.length)
    const n = readSync(fd, head, 0, MAGIC.length, 0)
    if (n > 0 && (n < MAGIC.length || !head.equals(MAGIC))) {
      throw new SqliteOpenError({
        reason: "not-a-database",
        path: filename,
        message: "the file does not start with the SQLite header"
      })
    }
  } catch (error) {
    if (error instanceof SqliteOpenError) throw error
    const code = (error as NodeJS.ErrnoException).code
    throw new SqliteOpenError({
      reason: "unavailable",
      path: filename,
      message: `${code ?? "error"}: cannot read the file's header`,
      cause: error
    })
  } finally {
    closeSync(fd)
  }
}

const tableCount = (db: BetterSqlite3.Database): number =>
  (db.prepare("SELECT count(*) AS n FROM sqlite_schema").get() as { n: number }).n

const checkOwner = (db: BetterSqlite3.Database, filename: string, ownerDid: string) => {
  const row = db.prepare("SELECT value FROM plugboard_meta WHERE key = 'owner_did'").get() as
    | { value: string }
    | undefined
  if (row === undefined) {
    db.prepare("INSERT OR IGNORE INTO plugboard_meta (key, value) VALUES ('owner_did', ?)").run(ownerDid)
  } else if (row.value !== ownerDid) {
    throw new SqliteOpenError({
      reason: "owner-mismatch",
      path: filename,
      message: "the database records a different owner DID"
    })
  }
}

/**
 * Only positive evidence of damage is `not-a-database` or `corrupt` (both move the file aside); any
 * other failure (BUSY, CANTOPEN under EMFILE, IOERR, NOMEM, FULL, an unknown error) is
 * `unavailable`: the file may be perfectly sound, so it stays where it is.
 */
const toOpenError = (filename: string, error: unknown): SqliteOpenError => {
  if (error instanceof SqliteOpenError) return error
  const code = sqliteCode(error)
  const detail = describe(error)
  const reason =
    code === "SQLITE_NOTADB"
      ? "not-a-database"
      : code?.startsWith("SQLITE_CORRUPT")
        ? "corrupt"
        : "unavailable"
  return new SqliteOpenError({
    reason,
    path: filename,
    message: `${code ?? "error"}: ${detail}`,
    cause: error
  })
}

/** Wraps a driver error into a `SqliteStorageError` when it is one we classify. */
export const toStorageError = (error: unknown): unknown => {
  if (isCorruption(error)) {
    return new SqliteStorageError({
      reason: "corrupt",
      message: describe(error),
      cause: error
    })
  }
  return error
}
