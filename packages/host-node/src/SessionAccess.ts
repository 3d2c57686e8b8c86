/**
 * Who may use a session id. Sessions live in the user's own store, so another user's id is
 * simply unknown there; two rules keep it that way when ids travel between users:
 *
 * - Ids minted by `POST /sessions` are recognisable (`ses_` + 128 random bits). An unknown minted
 *   id is somebody else's (or a deleted one), so `POST /messages/:id` answers 404 instead of
 *   creating it on first contact (seed 002's "creates on first contact" is for ids a client
 *   chose itself).
 * - The thread of a session id may already exist in the user's checkpointer when the host shares
 *   one saver between users (`hooks.checkpointerForUser`, e.g. LangGraph's Postgres saver), where
 *   thread id = session id is one namespace for everybody. Each checkpoint records the DID of the
 *   turn that wrote it (`config.did` of the graph state): a thread written by another user is
 *   answered 404, never read, continued or deleted.
 */
import { randomBytes } from "node:crypto"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import type { SessionStore } from "@plugboard/core"
import { Effect } from "effect"
import { HttpFailure } from "./Http.js"

/** Maps a SessionStore failure to its HTTP status. */
export const sessionFailure = (error: SessionStore.SessionStoreError): HttpFailure => {
  switch (error.reason) {
    case "NotFound":
      return new HttpFailure({ status: 404, message: error.message, error: "session-not-found" })
    case "AlreadyExists":
      return new HttpFailure({ status: 409, message: error.message, error: "session-exists" })
    case "InvalidInput":
      return new HttpFailure({ status: 400, message: error.message, error: "invalid-input" })
    case "Unavailable":
      return new HttpFailure({ status: 503, message: error.message, error: "storage-unavailable" })
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
  new HttpFailure({
    status: 503,
    message: `${what}: ${error instanceof Error ? error.message : String(error)}`,
    error: "storage-unavailable"
  })

/** Whether the thread of `sessionId` in the user's saver was written by somebody else. */
export const threadOfOther = (
  saverFor: (did: string) => Promise<BaseCheckpointSaver>,
  did: string,
  sessionId: string
): Effect.Effect<boolean, HttpFailure> =>
  Effect.tryPromise({
    try: async () => {
      const tuple = await (await saverFor(did)).getTuple({ configurable: { thread_id: sessionId } })
      const owner = ownerOf(tuple?.checkpoint.channel_values)
      return owner !== undefined && owner !== did
    },
    catch: storageFailure("load thread")
  })

/** What `openSession` uses. */
export interface SessionAccessServices {
  readonly sessions: SessionStore.SessionStoreService
  readonly saverFor: (did: string) => Promise<BaseCheckpointSaver>
  readonly oracleName: string
  readonly oracleDid: string
}

/**
 * The session a message is posted to: the user's own, or created on first contact when the id
 * is the client's own choice and no other user's thread has it; otherwise 404.
 */
export const openSession = (
  s: SessionAccessServices,
  did: string,
  sessionId: string
): Effect.Effect<SessionStore.Session, HttpFailure> =>
  Effect.gen(function* () {
    const existing = yield* s.sessions.get(did, sessionId).pipe(Effect.mapError(sessionFailure))
    if (existing !== undefined) return existing
    if (isMinted(sessionId)) return yield* Effect.fail(notFound(sessionId))
    if (yield* threadOfOther(s.saverFor, did, sessionId)) return yield* Effect.fail(notFound(sessionId))
    const { session } = yield* s.sessions
      .ensure(did, { sessionId, oracleName: s.oracleName, oracleDid: s.oracleDid })
      .pipe(Effect.mapError(sessionFailure))
    return session
  })
