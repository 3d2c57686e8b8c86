/**
 * Who may use a session id. Sessions live in the user's own store, so another user's id is
 * simply unknown there; two rules keep it that way when ids travel between users:
 *
 * - Ids minted by `POST /sessions` are recognisable (`ses_` + 128 random bits). An unknown minted
 *   id is somebody else's (or a deleted one), so `POST /messages/:id` answers 404 instead of
 *   creating it on first contact (docs/spec/pipeline.md#sessions: creation on first contact is
 *   for ids a client chose itself).
 * - The thread of a session id may already exist in the user's checkpointer when the host shares
 *   one saver between users (`hooks.checkpointerForUser`, e.g. LangGraph's Postgres saver), where
 *   thread id = session id is one namespace for everybody. Each checkpoint records the DID of the
 *   turn that wrote it (`config.did` of the graph state): a thread written by another user is
 *   answered 404, never read, continued or deleted — checked on every post, not only the first.
 *
 * A turn saves its thread only when it ends, so until then nothing in the saver says whose a new
 * client-chosen id is. `ThreadClaims` closes that window in this process: a post claims the
 * (saver, session id) pair before it checks anything and holds it until its turn has ended (and
 * saved); a post by another DID to a pair held by someone else is a 404. Across processes sharing
 * one saver nothing claims the id before the first save, so two users' first contacts with the
 * same client-chosen id at the same moment on two hosts can still both be accepted (the later
 * save wins the thread; the other user then gets 404s). Minted ids (`ses_…`, 128 random bits)
 * cannot meet that way: use them when several processes share a saver.
 */
import { randomBytes } from "node:crypto"
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph-checkpoint"
import type { RuntimeLogger, SessionStore } from "@plugboard/core"
import { type PrefetchedRead, TurnSaver } from "@plugboard/langgraph"
import { Effect } from "effect"
import { HttpFailure, unavailable } from "./Http.js"

/** Maps a SessionStore failure to its HTTP status. */
export const sessionFailure = (error: SessionStore.SessionStoreError): HttpFailure => {
  switch (error.reason) {
    case "not-found":
      return new HttpFailure({ status: 404, message: error.message, error: "session-not-found" })
    case "already-exists":
      return new HttpFailure({ status: 409, message: error.message, error: "session-exists" })
    case "invalid-input":
      return new HttpFailure({ status: 400, message: error.message, error: "invalid-input" })
    case "unavailable":
      return unavailable("The session could not be used", "session storage", "storage-unavailable", error)
  }
}

/** Prefix of the session ids the server mints. */
export const MINTED_PREFIX = "ses_"

/** A fresh session id for `POST /sessions`. */
export const mintSessionId = (): string => `${MINTED_PREFIX}${randomBytes(16).toString("base64url")}`

/** Whether the id has the shape of one the server minted. */
export const isMinted = (sessionId: string): boolean =>
  sessionId.startsWith(MINTED_PREFIX) && /^ses_[\w-]{22}$/.test(sessionId)

/** The 404 every refusal answers: another user's session is indistinguishable from none. */
export const notFound = (sessionId: string): HttpFailure =>
  new HttpFailure({ status: 404, message: `Session '${sessionId}' not found`, error: "session-not-found" })

/** The DID that wrote a checkpoint, when it recorded one. */
export const ownerOf = (channelValues: Record<string, unknown> | undefined): string | undefined => {
  const config = channelValues?.config as { readonly did?: unknown } | undefined
  return typeof config?.did === "string" ? config.did : undefined
}

const storageFailure = (what: string) => (error: unknown) =>
  unavailable(what, "the user's storage", "storage-unavailable", error)

const loadSaver = (saverFor: (did: string) => Promise<BaseCheckpointSaver>, did: string) =>
  Effect.tryPromise({ try: () => saverFor(did), catch: storageFailure("load checkpointer") })

/** Whether `tuple` (a thread's latest checkpoint) was written by somebody else than `did`. */
const writtenByOther = (tuple: CheckpointTuple | undefined, did: string): boolean => {
  const owner = ownerOf(tuple?.checkpoint.channel_values)
  return owner !== undefined && owner !== did
}

/** Reads the thread of `sessionId`: its latest checkpoint, or why it could not be read. */
const readThread = (saver: BaseCheckpointSaver, sessionId: string): Effect.Effect<PrefetchedRead> =>
  Effect.promise(() =>
    saver.getTuple({ configurable: { thread_id: sessionId } }).then(
      (tuple): PrefetchedRead => ({ _tag: "Read", tuple }),
      (error: unknown): PrefetchedRead => ({ _tag: "Failed", error })
    )
  )

/** Whether the thread of `sessionId` in the user's saver was written by somebody else. */
export const threadOfOther = (
  saverFor: (did: string) => Promise<BaseCheckpointSaver>,
  did: string,
  sessionId: string
): Effect.Effect<boolean, HttpFailure> =>
  Effect.flatMap(loadSaver(saverFor, did), (saver) =>
    Effect.tryPromise({
      try: async () => writtenByOther(await saver.getTuple({ configurable: { thread_id: sessionId } }), did),
      catch: storageFailure("load thread")
    })
  )

/**
 * Which DID is posting to which thread right now, per saver (thread ids are one namespace per
 * saver: per-user SQLite savers never meet, one saver shared by users does). A claim is held
 * from the post's first check until its turn has ended; several claims of one DID stack.
 */
export class ThreadClaims {
  private readonly bySaver = new WeakMap<object, Map<string, { did: string; count: number }>>()

  /** Claims `sessionId` of `saver` for `did`: the release (idempotent), or `undefined` when another DID holds it. */
  claim(saver: object, sessionId: string, did: string): (() => void) | undefined {
    let threads = this.bySaver.get(saver)
    if (threads === undefined) {
      threads = new Map()
      this.bySaver.set(saver, threads)
    }
    const held = threads.get(sessionId)
    if (held !== undefined && held.did !== did) return undefined
    const entry = held ?? { did, count: 0 }
    entry.count += 1
    threads.set(sessionId, entry)
    let released = false
    const map = threads
    return () => {
      if (released) return
      released = true
      entry.count -= 1
      if (entry.count === 0 && map.get(sessionId) === entry) map.delete(sessionId)
    }
  }

  /** Whether a DID other than `did` holds `sessionId` of `saver`. */
  heldByOther(saver: object, sessionId: string, did: string): boolean {
    const held = this.bySaver.get(saver)?.get(sessionId)
    return held !== undefined && held.did !== did
  }
}

/** What `openSession` uses. */
export interface SessionAccessServices {
  readonly sessions: SessionStore.SessionStoreService
  readonly saverFor: (did: string) => Promise<BaseCheckpointSaver>
  readonly claims: ThreadClaims
  readonly oracleName: string
  readonly oracleDid: string
  /**
   * Whether users' threads can share a saver (the host's `checkpointerForUser`): only then can a
   * thread be somebody else's, and only then does opening a session read it to find out.
   */
  readonly threadsShared?: boolean | undefined
  readonly logger: RuntimeLogger
}

/**
 * An opened session, the saver its turn runs on (with the thread's read when opening made one),
 * and the claim on its thread, to release when the turn posted to it has ended.
 */
export interface OpenedSession {
  readonly session: SessionStore.Session
  readonly saver: TurnSaver
  readonly release: () => void
}

/**
 * The session a message is posted to: the user's own whose thread no other user wrote, or
 * created on first contact when the id is the client's own choice and no other user's thread has
 * it or is being written to it; otherwise 404. The caller releases the claim once the turn ended.
 */
export const openSession = (
  s: SessionAccessServices,
  did: string,
  sessionId: string
): Effect.Effect<OpenedSession, HttpFailure> =>
  Effect.gen(function* () {
    const saver = yield* loadSaver(s.saverFor, did)
    const turnSaver = new TurnSaver(saver, s.logger)
    // Claimed before any check (synchronously after the saver is known), so of two first
    // contacts in this process exactly one passes.
    const release = s.claims.claim(saver, sessionId, did)
    if (release === undefined) return yield* Effect.fail(notFound(sessionId))
    const session = yield* Effect.gen(function* () {
      const existing = yield* s.sessions.get(did, sessionId).pipe(Effect.mapError(sessionFailure))
      if (existing === undefined && isMinted(sessionId)) return yield* Effect.fail(notFound(sessionId))
      // Per-user savers (the default) hold only their user's threads: nothing to read here, the
      // turn reads the thread once. A shared saver's thread may be another user's: read it here,
      // and that read is the turn's load (`TurnSaver.prefetch`). When it fails, the turn goes on
      // as on any failed load (logged, an empty state, saved only if the thread is still empty
      // then), so another user's thread is never written.
      if (s.threadsShared === true) {
        const read = yield* readThread(saver, sessionId)
        if (read._tag === "Read" && writtenByOther(read.tuple, did))
          return yield* Effect.fail(notFound(sessionId))
        turnSaver.prefetch(sessionId, read)
      }
      // A post is the session's activity (docs/spec/pipeline.md#sessions): an existing session is
      // touched now, a new one created with this time; one write either way, none after the turn.
      if (existing !== undefined)
        return yield* s.sessions.touch(did, sessionId).pipe(Effect.mapError(sessionFailure))
      const { session } = yield* s.sessions
        .ensure(did, { sessionId, oracleName: s.oracleName, oracleDid: s.oracleDid })
        .pipe(Effect.mapError(sessionFailure))
      return session
    }).pipe(Effect.onError(() => Effect.sync(release)))
    return { session, saver: turnSaver, release }
  })
