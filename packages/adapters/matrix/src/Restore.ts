/**
 * Restoring one user's database from the room's snapshot.
 *
 * The room is the shared source of truth. A host's database is replaced only by a snapshot that
 * passed every check (`verifySnapshot`), inside the user's write lock, by an atomic rename in the
 * same directory. A local database whose content is in no snapshot (written while the host could
 * not restore, or never synced) is moved aside next to it, never deleted. Any failure leaves the
 * local files exactly as they were.
 */
import { existsSync, renameSync, rmSync } from "node:fs"
import { rm } from "node:fs/promises"
import { dirname } from "node:path"
import { moveAside, SIDE_FILES } from "@plugboard/sqlite"
import { MatrixNotFound, MatrixSyncEngineError } from "./MatrixSyncEngineError.js"
import { takeSnapshot, verifySnapshot } from "./Snapshot.js"
import type { SnapshotPointer } from "./SnapshotPointer.js"
import type { SnapshotStore } from "./SnapshotStore.js"
import {
  confirmedAt,
  descendsFrom,
  entryOf,
  type FileIdentity,
  fileIdentity,
  readLedger,
  writeLedger
} from "./SyncLedger.js"
import type { UserDatabaseDirectory } from "./UserDatabaseDirectory.js"

/** What a restore did. */
export type RestoreResult =
  | { readonly _tag: "NoBackup" }
  | { readonly _tag: "LocalPresent" }
  | {
      readonly _tag: "Restored"
      readonly sha256: string
      readonly size: number
      /** Where a local database with content in no snapshot was moved. */
      readonly movedAside: string | undefined
    }

/**
 * Restores `did`. Throws `MatrixSyncEngineError` (`unavailable`, `rejected`, `corrupt`); `onPointer`
 * learns the pointer as soon as it is read, for error messages; `onFile`, the local file the
 * answer is about (read with the answer, not after it: a turn may move the file aside since).
 */
export const restoreUser = async (options: {
  readonly did: string
  readonly store: SnapshotStore
  readonly databases: UserDatabaseDirectory
  readonly maxBytes: number
  readonly now: () => number
  readonly onPointer?: (pointer: SnapshotPointer) => void
  readonly onFile?: (file: FileIdentity | undefined) => void
}): Promise<RestoreResult> => {
  const { did, store, databases, now } = options
  const path = databases.databasePath(did)
  const key = databases.storageKey(did)
  const hadLocal = existsSync(path)
  const localFile = hadLocal ? fileIdentity(path) : undefined
  let pointer: SnapshotPointer
  try {
    pointer = await store.readPointer(await store.room(key, { create: false }), key)
  } catch (e) {
    if (e instanceof MatrixNotFound) {
      options.onFile?.(localFile)
      return { _tag: hadLocal ? "LocalPresent" : "NoBackup" }
    }
    throw e
  }
  options.onPointer?.(pointer)
  if (pointer.compressedSize > options.maxBytes) {
    throw new MatrixSyncEngineError({
      reason: "corrupt",
      message: `announces ${pointer.compressedSize} B of gzip, over the ${options.maxBytes} B limit`
    })
  }
  if (hadLocal) {
    const file = localFile
    const ledger = await readLedger(path, file)
    if (descendsFrom(ledger, pointer.sha256)) {
      options.onFile?.(file)
      // The pointer write of this host's last upload landed though its answer was lost.
      if (ledger.base?.sha256 !== pointer.sha256)
        await writeLedger(path, confirmedAt(entryOf(pointer, now())), file)
      return { _tag: "LocalPresent" }
    }
  }

  // The room holds a snapshot this host's database is not: fetch it and check everything.
  const compressed = await store.download(pointer.mxc, { maxBytes: pointer.compressedSize })
  if (compressed.length !== pointer.compressedSize) {
    throw new MatrixSyncEngineError({
      reason: "corrupt",
      message: `truncated: expected ${pointer.compressedSize} B of gzip, got ${compressed.length} B`
    })
  }
  const tmp = await verifySnapshot({
    compressed,
    expectedSha256: pointer.sha256,
    expectedSize: pointer.size,
    directory: dirname(path),
    maxBytes: options.maxBytes
  })
  const verified = pointer
  try {
    return await databases.withUserWriteLock(did, async (db) => {
      let movedAside: string | undefined
      if (existsSync(path)) {
        const file = fileIdentity(path)
        const local = await takeSnapshot({
          workDirectory: dirname(path),
          withLock: (fn) => fn(db),
          now,
          compress: false
        })
        const ledger = await readLedger(path, file)
        if (local.sha256 === verified.sha256) {
          // Same content, only the record was missing.
          await writeLedger(path, confirmedAt(entryOf(verified, now())), file)
          options.onFile?.(file)
          return { _tag: "LocalPresent" } as const
        }
        db.closeConnection()
        // Unchanged since the last sync: its content is in the room's history; else keep it.
        if (local.sha256 !== ledger.base?.sha256) movedAside = moveAside(path, "conflict", now())
      }
      // Journal files of the old database would be replayed onto the new one.
      for (const suffix of SIDE_FILES) rmSync(`${path}${suffix}`, { force: true })
      renameSync(tmp, path)
      // After the rename, for the file now in place: a crash in between leaves no record of it,
      // and the next restore finds the local content equal to the room's and writes it.
      const restored = fileIdentity(path)
      await writeLedger(path, confirmedAt(entryOf(verified, now())), restored)
      options.onFile?.(restored)
      return { _tag: "Restored", sha256: verified.sha256, size: verified.size, movedAside } as const
    })
  } finally {
    await rm(tmp, { force: true })
  }
}
