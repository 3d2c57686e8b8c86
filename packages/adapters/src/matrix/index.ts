/**
 * `@plugboard/adapters/matrix`: background replication of per-user SQLite databases to a Matrix
 * homeserver (snapshots as media, pointed at by an `org.plugboard.snapshot` room state event),
 * and restore of a user's database on a host that does not have it.
 */
export * from "./MatrixSyncEngine.js"
export * from "./MatrixSyncError.js"
export * from "./MatrixSyncLayer.js"
export * from "./MemorySnapshotStore.js"
export * from "./Restore.js"
export * from "./SharedSecretRegistration.js"
export * from "./Snapshot.js"
export * from "./SnapshotPointer.js"
export * from "./SnapshotStore.js"
export * from "./SyncLedger.js"
export * from "./Upload.js"
export * from "./UserDatabases.js"
