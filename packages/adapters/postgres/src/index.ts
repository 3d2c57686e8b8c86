/**
 * `@plugboard/postgres` — the state ports on a shared Postgres (docs/deployment.md, `DATABASE_URL`):
 * the checkpointer (LangGraph's `PostgresSaver`, scoped per user), sessions, the credit ledger and
 * runs with their frames, users' sealed OAuth connections, and the waits of runs that wait for their user. Every store is built on one `PgDatabase` (a pool and a schema) and
 * applies the versioned migrations at first use.
 */

export { redactUrl } from "./internal/sql.js"
export {
  DEFAULT_SCHEMA,
  layer as layerDatabase,
  layerConfig as layerDatabaseConfig,
  make as makeDatabase,
  migrations,
  PgDatabase,
  type PgDatabaseOptions,
  type PgDatabaseService,
  PgFailure,
  SCHEMA_VERSION
} from "./PgDatabase.js"
export {
  layerCheckpointer,
  makeCheckpointer,
  PostgresCheckpointError,
  UserScopedSaver
} from "./PostgresCheckpointer.js"
export { layerConnectionStore, makeConnectionStore } from "./PostgresConnectionStore.js"
export { layerCreditLedger, makeCreditLedger } from "./PostgresCreditLedger.js"
export { layerRunStore, makeRunStore, type PostgresRunStoreOptions } from "./PostgresRunStore.js"
export { layerSessionStore, makeSessionStore } from "./PostgresSessionStore.js"
export { layerWaitStore, makeWaitStore } from "./PostgresWaitStore.js"
