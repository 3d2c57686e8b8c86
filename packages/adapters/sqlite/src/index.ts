/**
 * `@plugboard/sqlite` — per-user SQLite persistence: a LangGraph checkpoint saver,
 * the SessionStore port on the same per-user database, and the registry that maps user DIDs
 * to database files; the RunStore port on a shared file of its own (`runs.sqlite`); and the
 * LoadedPluginsStore port, the MCP gateway's threads kept by key (`loaded-plugins.sqlite`); and the
 * ConnectionStore port, users' sealed OAuth connections (in each user's database, or in a host file
 * of its own, `connections.sqlite`, for the gateway); and the WaitStore
 * port, the waits of runs that wait for their user (`waits.sqlite`).
 */
export { Database, type DatabaseOptions, SCHEMA_VERSION } from "./Database.js"
export type { DeltaItem, DeltaItemSource } from "./DeltaItems.js"
export {
  SqliteOpenError,
  type SqliteOpenErrorReason,
  SqliteStorageError,
  type SqliteStorageErrorReason
} from "./errors.js"
export { readFileId } from "./FileId.js"
export { moveAside, SIDE_FILES, SYNC_RECORD_SUFFIX } from "./MoveAside.js"
export { prune, type RetentionOptions } from "./Retention.js"
export {
  CONNECTIONS_APPLICATION_ID,
  CONNECTIONS_FILE_NAME,
  CONNECTIONS_SCHEMA_VERSION,
  connectionsFile,
  layerConnectionStore,
  makeConnectionStore,
  type SqliteConnectionStoreOptions
} from "./SqliteConnectionStore.js"
export {
  LOADED_PLUGINS_APPLICATION_ID,
  LOADED_PLUGINS_FILE_NAME,
  LOADED_PLUGINS_SCHEMA_VERSION,
  layerLoadedPluginsStore,
  loadedPluginsFile,
  makeLoadedPluginsStore,
  type SqliteLoadedPluginsStoreOptions
} from "./SqliteLoadedPluginsStore.js"
export {
  layerRunStore,
  makeRunStore,
  RUNS_APPLICATION_ID,
  RUNS_FILE_NAME,
  RUNS_SCHEMA_VERSION,
  runsFile,
  type SqliteRunStoreOptions
} from "./SqliteRunStore.js"
export {
  type DamagedThread,
  type MakeSqliteSaverOptions,
  makeSqliteSaver,
  type OwnedSqliteSaver,
  type SaverBackend,
  SqliteSaver,
  type SqliteSaverOptions
} from "./SqliteSaver.js"
export {
  layerCheckpointer,
  layerSessionStore,
  layerUserDatabases,
  layerUserDatabasesConfig,
  makeCheckpointer,
  makeSessionStore,
  UserDatabases
} from "./SqliteSessionStore.js"
export {
  layerWaitStore,
  makeWaitStore,
  type SqliteWaitStoreOptions,
  WAITS_APPLICATION_ID,
  WAITS_FILE_NAME,
  WAITS_SCHEMA_VERSION,
  waitsFile
} from "./SqliteWaitStore.js"
export {
  layerUserConnectionStore,
  makeUserConnectionStore,
  type UserConnectionStoreOptions
} from "./UserConnectionStore.js"
export {
  databaseFileName,
  type OpenReport,
  type QuiescentDatabase,
  storageKey,
  UserDatabaseRegistry,
  type UserDatabaseRegistryOptions
} from "./UserDatabaseRegistry.js"
export { UserGate } from "./UserGate.js"
