/**
 * The one opener of the SQLite files a store keeps of its own (the run store, the loaded-plugins
 * store, the connection store, the wait store): create the folder, refuse a file that is not
 * SQLite (`checkHeader`) or not ours (`identifyFile`) before anything writes to it, then WAL and
 * `synchronous = NORMAL`, and on an empty file the schema, the application id and the version, in
 * one immediate transaction that checks again under the lock (another process may have created it
 * meanwhile). A file that fails any step is closed and never modified.
 */
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import BetterSqlite3 from "better-sqlite3"
import { checkHeader } from "../Database.js"
import { SqliteOpenError } from "../errors.js"
import { type FileKind, identifyFile } from "./identify.js"

/** What a store's file is and how it is set up. */
export interface OwnedFile {
  readonly kind: FileKind
  /** The statements that create the schema on an empty file. */
  readonly schema: string
  /** How long a statement waits for another process's write lock. */
  readonly busyTimeoutMs: number
  /** `secure_delete` and a `quick_check` first (a store whose pruned rows must not linger). */
  readonly scrubbed?: boolean | undefined
  /** `auto_vacuum = INCREMENTAL` on a new file (chosen before the first table exists). */
  readonly incrementalVacuum?: boolean | undefined
  /** `foreign_keys = ON`. */
  readonly foreignKeys?: boolean | undefined
}

/** Opens (creating when empty) the store's file; throws `SqliteOpenError` or SQLite's error. */
export const openOwnedFile = (filename: string, file: OwnedFile): BetterSqlite3.Database => {
  mkdirSync(dirname(filename), { recursive: true })
  checkHeader(filename)
  const db = new BetterSqlite3(filename, { timeout: file.busyTimeoutMs })
  try {
    if (file.scrubbed === true) {
      db.pragma("secure_delete = ON")
      const check = db.pragma("quick_check(1)", { simple: true })
      if (check !== "ok")
        throw new SqliteOpenError({
          reason: "corrupt",
          path: filename,
          message: `quick_check: ${String(check)}`
        })
    }
    const kind = identifyFile(db, filename, file.kind)
    if (kind === "empty" && file.incrementalVacuum === true) db.pragma("auto_vacuum = INCREMENTAL")
    const mode = db.pragma("journal_mode = WAL", { simple: true })
    if (mode !== "wal") throw new Error(`could not enable WAL (journal_mode=${String(mode)})`)
    db.pragma("synchronous = NORMAL")
    if (file.foreignKeys === true) db.pragma("foreign_keys = ON")
    if (kind === "empty") {
      db.transaction(() => {
        if (identifyFile(db, filename, file.kind) === "ours") return
        db.exec(file.schema)
        db.pragma(`application_id = ${file.kind.applicationId}`)
        db.pragma(`user_version = ${file.kind.schemaVersion}`)
      }).immediate()
    }
    return db
  } catch (error) {
    db.close()
    throw error
  }
}
