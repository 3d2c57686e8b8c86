/**
 * The `RunStore` port: durable, resumable turns.
 *
 * A turn is a **Run**: an id, its session and user, the request id the client keys its
 * streamed message by, a status, and an append-only log of numbered frames — every SSE event
 * the turn emits, numbered 1, 2, 3, … with no gap. The log is what makes a turn outlive the
 * HTTP request that started it:
 *
 * - the POST stream is one follower of the log, and a client whose connection dropped rejoins
 *   as another, from the last frame it applied (`GET /runs/:runId?after=N` replays the frames
 *   numbered above N, then follows live until the final `done`);
 * - a page reload asks which run of the session is still active and replays it from 0;
 * - a run cut short (aborted, failed, or in flight when the process died) ends with a `done`
 *   frame `{status, partialText}` carrying the text the user already saw, which QiForge
 *   clients put in place of what they had; a run that finished says `{status: "finished"}`.
 *
 * The store owns those invariants so that every implementation keeps them alike: frame ids are
 * dense and ordered, `done` is always the last frame and written exactly once, `partialText` is
 * the concatenation of the `content` of the run's `message` frames, and nothing is appended
 * after the end. Every operation is scoped by the user's DID: a run is only ever visible to its
 * own user, and another user's run id reads as unknown.
 *
 * Time comes from the `Clock` port (epoch milliseconds), so tests move it instead of sleeping.
 * The in-memory store (`makeMemory`) and the SQLite and Postgres stores pass the same
 * `RunStoreConformance`. The port, its validation, the follow algorithm and the memory store each
 * live in a module of their own under `internal/runStore/`; this module is their public face.
 */
export * from "./internal/runStore/follow.js"
export * from "./internal/runStore/memory.js"
export * from "./internal/runStore/port.js"
export * from "./internal/runStore/validation.js"
