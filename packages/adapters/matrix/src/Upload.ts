/**
 * Uploading one user's database: an online backup under the user's write lock, skipped when its
 * hash is the one last synced; otherwise uploaded only over the room snapshot it descends from
 * (the ledger), so that no host ever replaces a snapshot whose content it does not contain.
 * The new snapshot is recorded as unconfirmed before the pointer write, so that a write that
 * landed but whose answer was lost is recognised at the next sync instead of looking diverged.
 */
import { MatrixNotFound, MatrixSyncEngineError } from "./MatrixSyncEngineError.js"
import { takeSnapshot } from "./Snapshot.js"
import { SNAPSHOT_SCHEMA_VERSION, type SnapshotPointer } from "./SnapshotPointer.js"
import type { SnapshotStore } from "./SnapshotStore.js"
import {
  confirmedAt,
  descendsFrom,
  entryOf,
  type FileIdentity,
  fileIdentity,
  type LedgerEntry,
  readLedger,
  type SyncLedger,
  writeLedger
} from "./SyncLedger.js"
import type { UserDatabaseDirectory } from "./UserDatabaseDirectory.js"

/** Result of one sync attempt that did not fail. */
export type SyncOutcome =
  | {
      readonly _tag: "Uploaded"
      readonly sha256: string
      readonly size: number
      readonly compressedSize: number
      readonly mxc: string
    }
  | { readonly _tag: "Unchanged"; readonly sha256: string }
  | { readonly _tag: "NoLocalDatabase" }
  | {
      readonly _tag: "Refused"
      readonly reason: "restore-pending" | "restore-failed" | "diverged" | "remote-unreadable"
      readonly message: string
    }

/** Uploads `did`'s database (which must exist). Throws `MatrixSyncEngineError` on homeserver failures. */
export const uploadUser = async (options: {
  readonly did: string
  readonly store: SnapshotStore
  readonly databases: UserDatabaseDirectory
  readonly workDirectory: string
  readonly now: () => number
  readonly afterSnapshot?: ((did: string) => Promise<void>) | undefined
  /** Upload over a room pointer that cannot be read (an operator adopted the local database). */
  readonly overUnreadable?: boolean | undefined
  /** Told which file the snapshot was taken of (for the engine's record of it). */
  readonly onFile?: ((file: FileIdentity | undefined) => void) | undefined
}): Promise<SyncOutcome> => {
  const { did, store, databases, now } = options
  const path = databases.databasePath(did)
  // The file and its record are read together with the backup, inside the user's lock: a turn
  // may move the file aside (taking its record along) at any moment outside it.
  let file: FileIdentity | undefined
  let ledger: SyncLedger = { base: undefined, unconfirmed: undefined }
  const snapshot = await takeSnapshot({
    workDirectory: options.workDirectory,
    withLock: (fn) =>
      databases.withUserWriteLock(did, async (db) => {
        file = fileIdentity(path)
        ledger = await readLedger(path, file)
        return fn(db)
      }),
    now: now,
    unlessSha256After: () => (options.overUnreadable === true ? undefined : ledger.base?.sha256)
  })
  options.onFile?.(file)
  // Unchanged since the last sync means nothing to do — unless the room's pointer is unreadable
  // and an operator adopted this database to replace it.
  if (options.overUnreadable !== true && ledger.base?.sha256 === snapshot.sha256) {
    return { _tag: "Unchanged", sha256: snapshot.sha256 }
  }
  await options.afterSnapshot?.(did)
  const key = databases.storageKey(did)
  const roomId = await store.room(key, { create: true })
  let remote: SnapshotPointer | undefined
  try {
    remote = await store.readPointer(roomId, key)
  } catch (e) {
    if (e instanceof MatrixSyncEngineError && e.reason === "corrupt") {
      // Only an operator's adoptLocal lets a database replace a pointer nobody can read.
      if (options.overUnreadable !== true) {
        return { _tag: "Refused", reason: "remote-unreadable", message: e.message }
      }
    } else if (!(e instanceof MatrixNotFound)) throw e
  }
  if (remote !== undefined) {
    if (remote.sha256 === snapshot.sha256) {
      await writeLedger(path, confirmedAt(entryOf(remote, now())), file)
      return { _tag: "Unchanged", sha256: snapshot.sha256 }
    }
    if (!descendsFrom(ledger, remote.sha256)) {
      const from = ledger.base ?? ledger.unconfirmed
      const message =
        `the room holds snapshot ${remote.sha256.slice(0, 12)} (${new Date(remote.createdAt).toISOString()}) ` +
        `but the local database descends from ${from ? from.sha256.slice(0, 12) : "no snapshot"}; ` +
        "keeping the room's snapshot (restore it, or adoptLocal to replace it)"
      return { _tag: "Refused", reason: "diverged", message }
    }
  }
  const mxc = await store.upload(snapshot.compressed, `${key}.sqlite.gz`)
  const uploaded: LedgerEntry = { sha256: snapshot.sha256, mxc, at: now() }
  // Before the pointer write: if it lands and its answer is lost, the next sync still knows.
  await writeLedger(
    path,
    { base: remote === undefined ? ledger.base : entryOf(remote, now()), unconfirmed: uploaded },
    file
  )
  await store.writePointer(roomId, key, {
    mxc,
    sha256: snapshot.sha256,
    size: snapshot.size,
    compressedSize: snapshot.compressed.length,
    encoding: "gzip",
    createdAt: snapshot.createdAt,
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    ...(remote === undefined ? {} : { previousSha256: remote.sha256 })
  })
  await writeLedger(path, confirmedAt(uploaded), file)
  return {
    _tag: "Uploaded",
    sha256: snapshot.sha256,
    size: snapshot.size,
    compressedSize: snapshot.compressed.length,
    mxc
  }
}
