/**
 * `@plugboard/matrix`: background replication of per-user SQLite databases to a Matrix
 * homeserver (snapshots as media, pointed at by an `org.plugboard.snapshot` room state event),
 * and restore of a user's database on a host that does not have it.
 */
export {
  consoleSyncLogger,
  type FlushReport,
  MatrixSyncEngine,
  type MatrixSyncEngineOptions,
  type RestoreOutcome,
  type RestoreStatus,
  type SyncLogger,
  type SyncOutcome
} from "./MatrixSyncEngine.js"
export {
  MatrixNotFound,
  MatrixSyncEngineError,
  type MatrixSyncEngineErrorReason
} from "./MatrixSyncEngineError.js"
export { layerMatrixSync, matrixSyncFromEngine } from "./MatrixSyncLayer.js"
export { type MemorySnapshotStore, memorySnapshotStore } from "./MemorySnapshotStore.js"
export { registerWithSharedSecret, type SharedSecretRegistration } from "./SharedSecretRegistration.js"
export { type Snapshot, sha256Hex, takeSnapshot, verifySnapshot } from "./Snapshot.js"
export { SNAPSHOT_EVENT_TYPE, SnapshotPointer } from "./SnapshotPointer.js"
export {
  type MatrixAccount,
  type MatrixSnapshotStoreOptions,
  matrixSnapshotStore,
  type SnapshotStore
} from "./SnapshotStore.js"
export type { LedgerEntry } from "./SyncLedger.js"
export { type CancelTimer, type SyncTimers, systemTimers } from "./SyncTimers.js"
export {
  type QuiescentDatabase,
  type UserDatabaseDirectory,
  userDatabaseDirectory
} from "./UserDatabaseDirectory.js"
