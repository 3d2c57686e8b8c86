/**
 * Typed errors of the SQLite adapter. They are `Data.TaggedError`s, which are real `Error`s,
 * so Promise callers (LangGraph, the conformance suite) can `catch` and log them, and Effect
 * callers can match on `_tag` / `reason`.
 */
import { Data } from "effect"

/** Why a database file could not be opened as a usable plugboard database. */
export type SqliteOpenErrorReason =
  /** The file is not an SQLite database (garbage bytes, another format, a torn header). */
  | "not-a-database"
  /** SQLite reads it but it is damaged (a truncated file, a failed integrity check). */
  | "corrupt"
  /** The file can never be read as it is: no permission to read it, or not a regular file. */
  | "unreadable"
  /**
   * The file could not be opened just now (locked by another process, too many open files, an
   * I/O error, out of memory or disk): nothing says it is damaged, so it is left in place and the
   * next operation tries again. Never a reason to move a file aside.
   */
  | "unavailable"
  /** The file was written by a newer plugboard schema; it is left untouched. */
  | "schema-too-new"
  /** The file belongs to another user (its recorded owner DID differs). */
  | "owner-mismatch"

/**
 * Opening a database failed. When the registry recovered by moving the bad file aside,
 * `movedTo` is where it went (the file is never overwritten or deleted).
 */
export class SqliteOpenError extends Data.TaggedError("SqliteOpenError")<{
  readonly reason: SqliteOpenErrorReason
  readonly path: string
  readonly message: string
  readonly movedTo?: string | undefined
  readonly cause?: unknown
}> {}

/** Why a storage operation failed after the database was open. */
export type SqliteStorageErrorReason =
  /** Another process held the write lock for longer than the retry budget. */
  | "busy"
  /** SQLite reported damage mid-operation; the registry moves the file aside on next open. */
  | "corrupt"
  /** The database was closed (the registry is shutting down). */
  | "closed"
  /** A bad argument (missing thread_id, …) — a caller bug. */
  | "invalid-input"

/** A storage operation failed. */
export class SqliteStorageError extends Data.TaggedError("SqliteStorageError")<{
  readonly reason: SqliteStorageErrorReason
  readonly message: string
  readonly cause?: unknown
}> {}

/** The `code` of a better-sqlite3 `SqliteError`, if `e` is one. */
export const sqliteCode = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && typeof (e as { code?: unknown }).code === "string"
    ? (e as { code: string }).code
    : undefined

/** True for the lock-contention codes a retry can resolve. */
export const isBusy = (e: unknown): boolean => {
  const code = sqliteCode(e)
  return code !== undefined && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
}

/** True for the codes that mean the file itself is damaged or not a database. */
export const isCorruption = (e: unknown): boolean => {
  const code = sqliteCode(e)
  return code !== undefined && (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB")
}
