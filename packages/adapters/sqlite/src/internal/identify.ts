/**
 * "Is this our file?" for a store that keeps a database of its own (the run store, the
 * loaded-plugins store): empty (new), or a database of that store at this schema version; anything
 * else is refused with `SqliteOpenError`. Only reads: a foreign file must be refused before WAL
 * mode (which rewrites the header) is set.
 */
import type BetterSqlite3 from "better-sqlite3"
import { SqliteOpenError } from "../errors.js"

/** What a store's file must be: its `PRAGMA application_id`, schema version and tables. */
export interface FileKind {
  readonly applicationId: number
  readonly schemaVersion: number
  readonly tables: ReadonlyArray<string>
}

/** `empty` (no application, no table) or `ours`; throws `SqliteOpenError` for anything else. */
export const identifyFile = (
  db: BetterSqlite3.Database,
  filename: string,
  kind: FileKind
): "empty" | "ours" => {
  const applicationId = db.pragma("application_id", { simple: true }) as number
  const version = db.pragma("user_version", { simple: true }) as number
  const tables = db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
    .pluck()
    .all() as Array<string>
  if (applicationId === 0 && tables.length === 0) return "empty"
  if (applicationId !== kind.applicationId) {
    throw new SqliteOpenError({
      reason: "not-a-database",
      path: filename,
      message: `a database of another application (application_id ${applicationId}, tables: ${tables.slice(0, 5).join(", ")})`
    })
  }
  if (version !== kind.schemaVersion) {
    throw new SqliteOpenError({
      reason: version > kind.schemaVersion ? "schema-too-new" : "corrupt",
      path: filename,
      message: `schema version ${version}; this build reads version ${kind.schemaVersion}`
    })
  }
  for (const table of kind.tables) {
    if (!tables.includes(table)) {
      throw new SqliteOpenError({ reason: "corrupt", path: filename, message: `table '${table}' is missing` })
    }
  }
  return "ours"
}
