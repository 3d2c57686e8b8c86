/**
 * Taking and verifying snapshots of a user's SQLite database.
 *
 * A snapshot is made with SQLite's online backup API (a consistent copy even with WAL and open
 * connections; a raw copy of a file being written can be torn), then gzip-compressed. A downloaded
 * snapshot is trusted only after every check passes: it decompresses, has the announced size and
 * SHA-256, starts with the SQLite header, and `PRAGMA integrity_check` says `ok` on a temp file.
 */
import { constants } from "node:buffer"
import { createHash, randomUUID } from "node:crypto"
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs"
import { readFile, rm } from "node:fs/promises"
import { join } from "node:path"
import { promisify } from "node:util"
import { gunzip, gzip } from "node:zlib"
import { describe } from "@plugboard/core"
import Database from "better-sqlite3"
import { MatrixSyncEngineError } from "./MatrixSyncEngineError.js"
import type { QuiescentDatabase } from "./UserDatabaseDirectory.js"

const gzipAsync = promisify(gzip)
const gunzipAsync = promisify(gunzip)

/** The 16 bytes every SQLite 3 database file starts with. */
export const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1")

/**
 * The file length the SQLite header announces (page count × page size), when the header's count
 * is valid (its "version-valid-for" equals the change counter, as in every file SQLite wrote
 * since 3.7.0, online backups included); `undefined` otherwise.
 */
const announcedLength = (raw: Buffer): number | undefined => {
  const pageSize = raw.readUInt16BE(16) === 1 ? 65_536 : raw.readUInt16BE(16)
  const pages = raw.readUInt32BE(28)
  const valid = raw.readUInt32BE(92) === raw.readUInt32BE(24)
  return valid && pages > 0 ? pages * pageSize : undefined
}

/** A compressed, hashed snapshot ready to upload. */
export interface Snapshot {
  /** Lowercase hex SHA-256 of the uncompressed SQLite file. */
  readonly sha256: string
  /** Uncompressed size in bytes. */
  readonly size: number
  /** gzip of the SQLite file. */
  readonly compressed: Uint8Array
  /** When the backup finished, ms since the epoch. */
  readonly createdAt: number
}

/** SHA-256 of bytes, lowercase hex. */
export const sha256Hex = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

/**
 * Backs up the user's database into a temp file in `workDirectory` while `withLock` is held (the
 * user's write lock: only the backup step holds it), then hashes and compresses it outside the
 * lock. `compress: false` only hashes (to compare the local state with a snapshot); so does a
 * hash equal to `unlessSha256`, leaving `compressed` empty.
 */
export const takeSnapshot = async (options: {
  readonly workDirectory: string
  readonly withLock: <A>(fn: (db: QuiescentDatabase) => Promise<A>) => Promise<A>
  readonly now: () => number
  readonly compress?: boolean
  /** Skips compression when the content hashes to this (an unchanged database). */
  readonly unlessSha256?: string | undefined
  /** Asked once the backup is taken, in place of `unlessSha256`: for a value read under the lock. */
  readonly unlessSha256After?: (() => string | undefined) | undefined
}): Promise<Snapshot> => {
  const tmp = join(options.workDirectory, `.snapshot-${randomUUID()}.sqlite`)
  try {
    const createdAt = await options.withLock(async (db) => {
      await db.backup(tmp)
      return options.now()
    })
    const raw = await readFile(tmp)
    const sha256 = sha256Hex(raw)
    const unless = options.unlessSha256After?.() ?? options.unlessSha256
    const skip = options.compress === false || sha256 === unless
    const compressed = skip ? new Uint8Array() : await gzipAsync(raw, { level: 6 })
    return { sha256, size: raw.length, compressed, createdAt }
  } finally {
    await rm(tmp, { force: true })
    await removeSideFiles(tmp)
  }
}

const corrupt = (message: string, cause?: unknown) =>
  new MatrixSyncEngineError({ reason: "corrupt", message, cause })

/**
 * Verifies a downloaded snapshot and writes it to a new temp file in `directory` (the directory
 * of the final database, so that moving it into place is an atomic same-filesystem link).
 * Returns the temp file's path; on any failure nothing is left behind and a `corrupt` error
 * says which check failed.
 */
export const verifySnapshot = async (options: {
  readonly compressed: Uint8Array
  readonly expectedSha256: string
  readonly expectedSize: number
  readonly directory: string
  readonly maxBytes: number
}): Promise<string> => {
  if (options.expectedSize > options.maxBytes) {
    throw corrupt(`announced size ${options.expectedSize} B exceeds the limit of ${options.maxBytes} B`)
  }
  // Decompression stops at the announced size: a small gzip can expand to gigabytes (a "size
  // bomb"), and one bad pointer must not cost more memory than the snapshot it announces.
  const cap = Math.min(Math.max(1, options.expectedSize), constants.MAX_LENGTH)
  let raw: Buffer
  try {
    raw = await gunzipAsync(options.compressed, { maxOutputLength: cap })
  } catch (e) {
    if (typeof e === "object" && e !== null && "code" in e && e.code === "ERR_BUFFER_TOO_LARGE") {
      throw corrupt(
        `size mismatch: expected ${options.expectedSize} B, decompresses to more (stopped after ${cap} B)`,
        e
      )
    }
    throw corrupt(`cannot decompress (${describe(e)})`, e)
  }
  if (raw.length !== options.expectedSize) {
    throw corrupt(`size mismatch: expected ${options.expectedSize} B, got ${raw.length} B`)
  }
  const actual = sha256Hex(raw)
  if (actual !== options.expectedSha256) {
    throw corrupt(`sha256 mismatch: expected ${options.expectedSha256}, got ${actual}`)
  }
  if (raw.length < 100 || !raw.subarray(0, 16).equals(SQLITE_HEADER)) {
    throw corrupt("not a SQLite 3 database (bad header)")
  }
  const announced = announcedLength(raw)
  if (announced !== undefined && announced > raw.length) {
    throw corrupt(`truncated: the SQLite header announces ${announced} B, the file has ${raw.length} B`)
  }
  const tmp = join(options.directory, `.restore-${randomUUID()}.sqlite.tmp`)
  try {
    const fd = openSync(tmp, "wx", 0o600)
    try {
      writeSync(fd, raw)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    let db: Database.Database
    try {
      db = new Database(tmp, { readonly: true, fileMustExist: true })
    } catch (e) {
      await removeSideFiles(tmp)
      throw corrupt(`cannot be opened by SQLite (${describe(e)})`, e)
    }
    let verdict: string
    try {
      const rows = db.pragma("integrity_check") as Array<{ integrity_check: string }>
      verdict = rows.map((r) => r.integrity_check).join("; ")
    } catch (e) {
      // Damage bad enough makes the check itself fail (SQLITE_CORRUPT) rather than list problems.
      verdict = describe(e)
    } finally {
      db.close()
      // A read-only connection to a WAL-mode file leaves (empty) side files behind.
      await removeSideFiles(tmp)
    }
    if (verdict !== "ok") throw corrupt(`PRAGMA integrity_check failed: ${verdict.slice(0, 300)}`)
    return tmp
  } catch (e) {
    await rm(tmp, { force: true })
    await removeSideFiles(tmp)
    throw e
  }
}

const removeSideFiles = async (path: string): Promise<void> => {
  for (const suffix of ["-wal", "-shm", "-journal"]) await rm(`${path}${suffix}`, { force: true })
}
