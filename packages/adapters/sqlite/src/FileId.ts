/**
 * Every plugboard database carries a random id of its own (`plugboard_meta.file_id`), given when
 * the file is created. A copy of the file (an online backup, a snapshot restored on another host,
 * a directory copied elsewhere) keeps it; a new file (after the old one was deleted or moved
 * aside) gets another. So "is this still the file that record was written about?" has an answer
 * that survives copies, remounts and inode reuse, which a file's device and inode numbers do not.
 */
import { randomUUID } from "node:crypto"
import BetterSqlite3 from "better-sqlite3"

/** The `plugboard_meta` key of the file id. */
export const FILE_ID_KEY = "file_id"

/** Gives an open database its file id when it has none (new files, and files from before ids). */
export const ensureFileId = (db: BetterSqlite3.Database): void => {
  const row = db.prepare("SELECT value FROM plugboard_meta WHERE key = ?").get(FILE_ID_KEY)
  if (row === undefined) {
    db.prepare("INSERT OR IGNORE INTO plugboard_meta (key, value) VALUES (?, ?)").run(
      FILE_ID_KEY,
      randomUUID()
    )
  }
}

/**
 * The file id of the database at `path`, read through a read-only connection of its own;
 * `undefined` when there is no file, it has no id (not a plugboard database, or one from before
 * ids) or it cannot be read now.
 */
export const readFileId = (path: string): string | undefined => {
  let db: BetterSqlite3.Database | undefined
  try {
    db = new BetterSqlite3(path, { readonly: true, fileMustExist: true })
    const row = db.prepare("SELECT value FROM plugboard_meta WHERE key = ?").get(FILE_ID_KEY) as
      | { value: unknown }
      | undefined
    return typeof row?.value === "string" ? row.value : undefined
  } catch {
    return undefined
  } finally {
    try {
      db?.close()
    } catch {
      // A handle on a damaged file may fail to close; there is nothing to release then.
    }
  }
}
