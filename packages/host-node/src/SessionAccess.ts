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
 * client-chosen id is. The turn service's abort map closes that window in this process
 * (`RunningTurns.ts`): a turn is entered under the thread's lock key before its session is
 * opened, and a post by another DID to a thread held by someone else is a 404; under the lock, a
 * turn that waited checks the thread again. Across processes sharing one saver nothing claims the
 * id before the first save, so two users' first contacts with the same client-chosen id at the
 * same moment on two hosts can both be accepted until one saves (the later one is then refused
 * under the lock, or gets 404s after). Minted ids (`ses_…`, 128 random bits) cannot meet that
 * way: use them when several processes share a saver.
 */
import { randomBytes } from "node:crypto"
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph-checkpoint"
import { type Checkpointer, type RuntimeLogger, SessionStore } from "@plugboard/core"
import { type PrefetchedRead, TurnSaver } from "@plugboard/langgraph"
import { Effect } from "effect"
import { HttpFailure, unavailable } from "./Http.js"
import { TurnRefused } from "./TurnRefused.js"

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

/** The user's saver, as the `Checkpointer` port resolves it. */
export type SaverFor = (did: string) => Effect.Effect<BaseCheckpointSaver, Checkpointer.CheckpointerError>

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
  saverFor: SaverFor,
  did: string,
  sessionId: string
): Effect.Effect<boolean, HttpFailure> =>
  Effect.flatMap(Effect.mapError(saverFor(did), storageFailure("load checkpointer")), (saver) =>
    Effect.tryPromise({
      try: async () => writtenByOther(await saver.getTuple({ configurable: { thread_id: sessionId } }), did),
      catch: storageFailure("load thread")
    })
  )

/** What `openSession` uses. */
export interface SessionAccessServices {
  readonly sessions: SessionStore.SessionStoreService
  readonly saverFor: SaverFor
  readonly oracleName: string
  readonly oracleDid: string
  /**
   * Whether users' threads can share a saver (the host's `checkpointerForUser`): only then can a
   * thread be somebody else's, and only then does opening a session read it to find out.
   */
  readonly threadsShared?: boolean | undefined
  readonly logger: RuntimeLogger
}

/** An opened session and the saver its turn runs on (with the thread's read when opening made one). */
export interface OpenedSession {
  readonly session: SessionStore.Session
  readonly saver: TurnSaver
}

/** A session store's failure as the turn's refusal. */
const refusal = (error: SessionStore.SessionStoreError): TurnRefused =>
  error.reason === "unavailable"
    ? new TurnRefused({
        reason: "storage-unavailable",
        message: "The session could not be used",
        detail: "session storage",
        cause: error
      })
    : new TurnRefused({
        reason: error.reason === "invalid-input" ? "invalid-input" : "session-not-found",
        message: error.message
      })

const notFoundRefusal = (sessionId: string) =>
  new TurnRefused({ reason: "session-not-found", message: `Session '${sessionId}' not found` })

/**
 * The session a message is posted to: the user's own whose thread no other user wrote, or
 * created on first contact when the id is the client's own choice and no other user's thread has
 * it; otherwise `session-not-found`. The turn's `TurnSaver` is made here, and only here.
 */
export const openSession = (
  s: SessionAccessServices,
  did: string,
  sessionId: string,
  /** The user's message: a session still titled "New chat" takes its title from it (`titleFrom`). */
  message?: string | undefined
): Effect.Effect<OpenedSession, TurnRefused> =>
  Effect.gen(function* () {
    const saver = yield* Effect.mapError(
      s.saverFor(did),
      (e) =>
        new TurnRefused({
          reason: "storage-unavailable",
          message: "load checkpointer",
          detail: "the user's storage",
          cause: e
        })
    )
    const turnSaver = new TurnSaver(saver, s.logger)
    const existing = yield* s.sessions.get(did, sessionId).pipe(Effect.mapError(refusal))
    if (existing === undefined && isMinted(sessionId)) return yield* notFoundRefusal(sessionId)
    // Per-user savers (the default) hold only their user's threads: nothing to read here, the
    // turn reads the thread once. A shared saver's thread may be another user's: read it here,
    // and that read is the turn's load (`TurnSaver.prefetch`). When it fails, the turn goes on
    // as on any failed load (logged, an empty state, saved only if the thread is still empty
    // then), so another user's thread is never written.
    if (s.threadsShared === true) {
      const read = yield* readThread(saver, sessionId)
      if (read._tag === "Read" && writtenByOther(read.tuple, did)) return yield* notFoundRefusal(sessionId)
      turnSaver.prefetch(sessionId, read)
    }
    // A post is the session's activity (docs/spec/pipeline.md#sessions): an existing session is
    // touched now, a new one created with this time; one write either way, none after the turn.
    // A session with no title of its own is named after its first message, in that same write.
    const title = message === undefined ? undefined : SessionStore.titleFrom(message)
    const retitle = title !== undefined && title !== SessionStore.DEFAULT_TITLE
    if (existing !== undefined) {
      const session = yield* (
        retitle && existing.title === SessionStore.DEFAULT_TITLE
          ? s.sessions.update(did, sessionId, { title })
          : s.sessions.touch(did, sessionId)
      ).pipe(Effect.mapError(refusal))
      return { session, saver: turnSaver }
    }
    const { session } = yield* s.sessions
      .ensure(did, {
        sessionId,
        oracleName: s.oracleName,
        oracleDid: s.oracleDid,
        ...(retitle ? { title } : {})
      })
      .pipe(Effect.mapError(refusal))
    return { session, saver: turnSaver }
  })
