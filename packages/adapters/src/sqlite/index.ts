/**
 * `@plugboard/adapters/sqlite` — per-user SQLite persistence: a LangGraph checkpoint saver,
 * the SessionStore port on the same per-user database, and the registry that maps user DIDs
 * to database files.
 */
export * from "./Database.js"
export * from "./errors.js"
export * from "./Retention.js"
export * from "./SqliteSaver.js"
export * from "./SqliteSessionStore.js"
export * from "./UserDatabases.js"
export * from "./UserGate.js"
