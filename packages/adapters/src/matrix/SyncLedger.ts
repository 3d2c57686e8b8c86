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
 */
import { randomUUID } from "node:crypto"
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

/**
 * Reads the ledger. Missing or unreadable reads as empty (then only an empty room may be
 * written). The base is stored flat, as the first version of this file had it.
 */
export const readLedger = async (databasePath: string): Promise<SyncLedger> => {
  try {
    const json = JSON.parse(await readFile(ledgerPath(databasePath), "utf8")) as { unconfirmed?: unknown }
    return { base: decodeEntry(json), unconfirmed: decodeEntry(json?.unconfirmed) }
  } catch {
    return { base: undefined, unconfirmed: undefined }
  }
}

/** Writes the ledger atomically (temp file + rename in the same directory). */
export const writeLedger = async (databasePath: string, ledger: SyncLedger): Promise<void> => {
  const target = ledgerPath(databasePath)
  const tmp = `${target}.${randomUUID()}.tmp`
  const content = {
    ...(ledger.base ?? {}),
    ...(ledger.unconfirmed === undefined ? {} : { unconfirmed: ledger.unconfirmed })
  }
  try {
    await writeFile(tmp, JSON.stringify(content), { mode: 0o600 })
    await rename(tmp, target)
  } catch (e) {
    await rm(tmp, { force: true })
    throw e
  }
}
