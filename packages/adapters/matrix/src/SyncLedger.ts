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
 * A record speaks for one file only: it names the database file it describes, and is read as
 * empty next to any other. The name is the file id plugboard's databases carry inside them
 * (`sqlite/FileId.ts`: a copy keeps it, a new file gets another), and the file's inode and birth
 * time for a file without one. So a database deleted, replaced or moved aside while its record
 * stayed (an operator's `rm`, a crash half-way through a move, a sync that snapshotted the old file
 * while a turn moved it aside) never lends that record to the new one, while the same file
 * remounted, or copied with its record to another host, keeps it. A record from before records
 * named their file is taken as it is (what it meant when it was written).
 */
import { randomUUID } from "node:crypto"
import { type BigIntStats, statSync } from "node:fs"
import { readFile, rename, rm, writeFile } from "node:fs/promises"
import { readFileId, SYNC_RECORD_SUFFIX } from "@plugboard/sqlite"
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
  /** The file id stored in the database (`plugboard_meta.file_id`), when it has one. */
  readonly id?: string | undefined
  readonly ino: string
  /** Birth time in ns; "0" where the file system does not keep one. */
  readonly birth: string
}

/**
 * The identity of the file at `path` now, or `undefined` when there is none. `withId: false` skips
 * reading the file id (which opens the database): the inode alone, for a cheap "still the same
 * file?" check where a false "no" only costs a homeserver round trip.
 */
export const fileIdentity = (
  path: string,
  options: { readonly withId?: boolean } = {}
): FileIdentity | undefined => {
  let stat: BigIntStats
  try {
    stat = statSync(path, { bigint: true })
  } catch {
    return undefined
  }
  const id = options.withId === false ? undefined : readFileId(path)
  return { ...(id === undefined ? {} : { id }), ino: String(stat.ino), birth: String(stat.birthtimeNs) }
}

/**
 * True when both name the same file: by file id when both have one, else by inode and birth time
 * (the device is left out: a volume mounted again gets another device number).
 */
export const sameFile = (a: FileIdentity | undefined, b: FileIdentity | undefined): boolean => {
  if (a === undefined || b === undefined) return false
  if (a.id !== undefined && b.id !== undefined) return a.id === b.id
  return a.ino === b.ino && a.birth === b.birth
}

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
      recorded === undefined || // written before records named their file
      (typeof recorded === "object" &&
        recorded !== null &&
        sameFile(file, {
          ...(typeof recorded.id === "string" ? { id: recorded.id } : {}),
          ino: String(recorded.ino),
          birth: String(recorded.birth)
        }))
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
