/**
 * The local record of which remote snapshot a user's database descends from, kept next to the
 * database (`<db>.matrix-sync.json`). The sync engine uploads only when the room's current pointer
 * is the one recorded here (or there is none): a host whose database was not restored from, or
 * uploaded to, the room's snapshot never overwrites it — e.g. a host that failed to restore and
 * then created an empty database.
 */
import { randomUUID } from "node:crypto"
import { readFile, rename, rm, writeFile } from "node:fs/promises"

/** What the ledger records. */
export interface LedgerEntry {
  /** SHA-256 of the snapshot the local database was last restored from or uploaded as. */
  readonly sha256: string
  readonly mxc: string
  readonly at: number
}

/** Path of the ledger of the database at `databasePath`. */
export const ledgerPath = (databasePath: string): string => `${databasePath}.matrix-sync.json`

/** Reads the ledger; missing or unreadable is `undefined` (then only an empty room may be written). */
export const readLedger = async (databasePath: string): Promise<LedgerEntry | undefined> => {
  try {
    const json = JSON.parse(await readFile(ledgerPath(databasePath), "utf8")) as Partial<LedgerEntry>
    return typeof json.sha256 === "string" && typeof json.mxc === "string" && typeof json.at === "number"
      ? { sha256: json.sha256, mxc: json.mxc, at: json.at }
      : undefined
  } catch {
    return undefined
  }
}

/** Writes the ledger atomically (temp file + rename in the same directory). */
export const writeLedger = async (databasePath: string, entry: LedgerEntry): Promise<void> => {
  const target = ledgerPath(databasePath)
  const tmp = `${target}.${randomUUID()}.tmp`
  try {
    await writeFile(tmp, JSON.stringify(entry), { mode: 0o600 })
    await rename(tmp, target)
  } catch (e) {
    await rm(tmp, { force: true })
    throw e
  }
}
