/**
 * The `SessionStore` port: a user's chat sessions (one LangGraph thread each, thread id =
 * session id) with the bookkeeping the server needs — title, times, the oracle that answered,
 * how many messages a background job has already processed, and the user context.
 *
 * Every operation is scoped by the user's DID: the SQLite implementation keeps each user's
 * sessions in that user's own database file, and the in-memory twin keys by DID, so one user
 * can never see, touch or delete another's session. Both pass `SessionStoreConformance`.
 *
 * Times are stamped from the `Clock` port (milliseconds) and exposed as ISO-8601 strings,
 * the shape the wire contract (`POST /sessions`, `GET /sessions`) returns.
 */
export * from "./internal/sessionStore/memory.js"
export * from "./internal/sessionStore/port.js"
