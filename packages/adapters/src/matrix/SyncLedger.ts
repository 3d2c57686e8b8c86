/**
 * The local record of which remote snapshot a user's database descends from, kept next to the
 * database (`<db>.matrix-sync.json`) and moved aside with it. The sync engine uploads only when
 * the room's current pointer is one the database descends from (or there is none): a host whose
 * database was not restored from, or uploaded to, the room's snapshot never overwrites it — e.g.
 * a host that failed to restore and then created an empty database.
 *
 * A pointer write can land on the homeserver while its answer is lost (a timeout, a dropped
 * connection). So the snapshot being pointed at is recorded as `unconfirmed` before the write:
 * if the room later names it, the database descends from it as surely as from `base`.
 *
 * A record speaks for one file only: it names the database file it describes (device, inode,
 * birth time) and is read as empty next to any other file. A database deleted, replaced or moved
 * aside while its record stayed (an operator's `rm`, a crash half-way through a move, a sync that
 * snapshotted the old file while a turn moved it aside) can never lend that record to the new one.
 */
import { randomUUID } from "node:crypto"
import { statSync } from "node:fs"
import { readFile, rename, rm, writeFile } from "node:fs/promises"
import { SYNC_RECORD_SUFFIX } from "../sqlite/MoveAside.js"
import type { SnapshotPointer } from "./SnapshotPointer.js"

/** One snapshot as the ledger records it. */
export interface LedgerEntry {
  /** SHA-256 of the snapshot (the uncompressed SQLite file). */
  readonly sha256: string
  readonly mxc: string
  readonly at: number
}

/** What the ledger file holds. */
export interface SyncLedger {
  /** The snapshot the local database was last restored from or confirmed uploaded as. */
  readonly base: LedgerEntry | undefined
  /** A snapshot uploaded and pointed at whose pointer write has not been confirmed. */
  readonly unconfirmed: LedgerEntry | undefined
}

/** Which file a record describes. Inode numbers and times are kept as decimal strings (exact). */
export interface FileIdentity {
  readonly dev: string
  readonly ino: string
  readonly birth: string
}

/** The identity of the file at `path` now, or `undefined` when there is none. */
export const fileIdentity = (path: string): FileIdentity | undefined => {
  try {
    const stat = statSync(path, { bigint: true })
    return { dev: String(stat.dev), ino: String(stat.ino), birth: String(stat.birthtimeNs) }
  } catch {
    return undefined
  }
}

/** True when both name the same file. */
export const sameFile = (a: FileIdentity | undefined, b: FileIdentity | undefined): boolean =>
  a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino && a.birth === b.birth

/** The ledger entry of the snapshot a room pointer names, recorded at `at`. */
export const entryOf = (pointer: SnapshotPointer, at: number): LedgerEntry => ({
  sha256: pointer.sha256,
  mxc: pointer.mxc,
  at
})

/** A ledger recording `entry` as the confirmed base. */
export const confirmedAt = (entry: LedgerEntry): SyncLedger => ({ base: entry, unconfirmed: undefined })

/** True when the local database's content descends from the snapshot `sha256`. */
export const descendsFrom = (ledger: SyncLedger, sha256: string): boolean =>
  ledger.base?.sha256 === sha256 || ledger.unconfirmed?.sha256 === sha256

/** Path of the ledger of the database at `databasePath`. */
export const ledgerPath = (databasePath: string): string => `${databasePath}${SYNC_RECORD_SUFFIX}`

const decodeEntry = (json: unknown): LedgerEntry | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  const { sha256, mxc, at } = json as Partial<Record<keyof LedgerEntry, unknown>>
  return typeof sha256 === "string" && typeof mxc === "string" && typeof at === "number"
    ? { sha256, mxc, at }
    : undefined
}

const EMPTY: SyncLedger = { base: undefined, unconfirmed: undefined }

/**
 * Reads the ledger of the database file at `databasePath` — of the very file `file` identifies
 * (default: the one there now). Missing, unreadable, or written for another file reads as empty
 * (then only an empty room may be written). The base is stored flat.
 */
export const readLedger = async (
  databasePath: string,
  file: FileIdentity | undefined = fileIdentity(databasePath)
): Promise<SyncLedger> => {
  try {
    const json = JSON.parse(await readFile(ledgerPath(databasePath), "utf8")) as {
      unconfirmed?: unknown
      file?: Partial<FileIdentity>
    }
    const recorded = json?.file
    const forThisFile =
      typeof recorded === "object" &&
      recorded !== null &&
      sameFile(file, { dev: String(recorded.dev), ino: String(recorded.ino), birth: String(recorded.birth) })
    return forThisFile ? { base: decodeEntry(json), unconfirmed: decodeEntry(json?.unconfirmed) } : EMPTY
  } catch {
    return EMPTY
  }
}

/**
 * Writes the ledger of the database file `file` atomically (temp file + rename in the same
 * directory). Nothing is written when that file is no longer the one at `databasePath`: the
 * record would only be ignored, and the file there now may have a record of its own.
 */
export const writeLedger = async (
  databasePath: string,
  ledger: SyncLedger,
  file: FileIdentity | undefined
): Promise<void> => {
  if (file === undefined || !sameFile(file, fileIdentity(databasePath))) return
  const target = ledgerPath(databasePath)
  const tmp = `${target}.${randomUUID()}.tmp`
  const content = {
    ...(ledger.base ?? {}),
    ...(ledger.unconfirmed === undefined ? {} : { unconfirmed: ledger.unconfirmed }),
    file
  }
  try {
    await writeFile(tmp, JSON.stringify(content), { mode: 0o600 })
    await rename(tmp, target)
  } catch (e) {
    await rm(tmp, { force: true })
    throw e
  }
}
