/**
 * The SessionStore port itself (`SessionStore.ts` is its public face and says what it is for).
 */
import { Context, Effect, Schema } from "effect"
import { parseJsonObject } from "../json.js"
import { cutAtWord } from "../text.js"

/** One chat session of one user. */
export interface Session {
  readonly sessionId: string
  readonly title: string
  /** ISO-8601 creation time. */
  readonly createdAt: string
  /** ISO-8601 time of the last create/update/touch; never earlier than `createdAt`. */
  readonly lastUpdatedAt: string
  readonly oracleName: string | undefined
  readonly oracleDid: string | undefined
  /** How many messages of the thread a background job (e.g. memory extraction) has processed. */
  readonly lastProcessedCount: number
  /** Free-form JSON object carried with the session (a JSON round-trip copy of what was given). */
  readonly userContext: Readonly<Record<string, unknown>> | undefined
}

/** What `create`/`ensure` take. The host picks the id (the client's, or one it mints). */
export interface NewSession {
  readonly sessionId: string
  /** Defaults to `DEFAULT_TITLE`. */
  readonly title?: string | undefined
  readonly oracleName?: string | undefined
  readonly oracleDid?: string | undefined
  readonly userContext?: Readonly<Record<string, unknown>> | undefined
}

/**
 * A partial update. An absent key leaves the field as is; `null` clears an optional field.
 * Every update also moves `lastUpdatedAt` to now.
 */
export interface SessionPatch {
  readonly title?: string | undefined
  readonly oracleName?: string | null | undefined
  readonly oracleDid?: string | null | undefined
  readonly lastProcessedCount?: number | undefined
  readonly userContext?: Readonly<Record<string, unknown>> | null | undefined
}

/** A page of sessions, newest activity first, and how many the user has in all. */
export interface SessionPage {
  readonly sessions: ReadonlyArray<Session>
  readonly total: number
}

/** Paging of `list`: `limit` in 1..MAX_PAGE_SIZE (default DEFAULT_PAGE_SIZE), `offset` ≥ 0. */
export interface ListOptions {
  readonly limit?: number | undefined
  readonly offset?: number | undefined
}

/** Title given to a session created without one. */
export const DEFAULT_TITLE = "New chat"
/** Page size of `list` when no limit is given. */
export const DEFAULT_PAGE_SIZE = 20
/** Largest page `list` returns; a larger limit is refused, not silently clamped. */
export const MAX_PAGE_SIZE = 500
/** Longest accepted session id (ids are chosen by clients, so they are bounded). */
export const MAX_SESSION_ID_LENGTH = 256
/** Longest accepted title. */
export const MAX_TITLE_LENGTH = 1_000

/** Longest title `titleFrom` makes from a message. */
export const MAX_DERIVED_TITLE_LENGTH = 60

/**
 * The title a session still called `DEFAULT_TITLE` takes from the first user message posted to
 * it (the host applies it when it opens the session for a turn): the message's text on one line
 * (runs of whitespace made one space), at most `MAX_DERIVED_TITLE_LENGTH` characters. A longer
 * one is cut at its last space in the second half of the limit (else mid-word, for a very long
 * word) and marked with `…`. A message with no text leaves the default title.
 */
export const titleFrom = (message: string): string => {
  const text = message.replace(/\s+/g, " ").trim()
  return text === "" ? DEFAULT_TITLE : cutAtWord(text, MAX_DERIVED_TITLE_LENGTH)
}

/** Why a session operation failed. */
export type SessionStoreErrorReason = "not-found" | "already-exists" | "invalid-input" | "unavailable"

/** The one error of the port; `reason` says which case (the host maps NotFound → 404, etc.). */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>()("SessionStoreError", {
  reason: Schema.Literal("not-found", "already-exists", "invalid-input", "unavailable"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** The operations of the SessionStore port. */
export interface SessionStoreService {
  /** Creates a session; fails `already-exists` when the user already has that id. */
  readonly create: (userDid: string, input: NewSession) => Effect.Effect<Session, SessionStoreError>
  /**
   * The session, creating it when absent, atomically (the "created on first contact" path:
   * two concurrent first messages create one session). `created` says which happened.
   */
  readonly ensure: (
    userDid: string,
    input: NewSession
  ) => Effect.Effect<{ readonly session: Session; readonly created: boolean }, SessionStoreError>
  /** The session, or `undefined` when the user has none with that id. */
  readonly get: (userDid: string, sessionId: string) => Effect.Effect<Session | undefined, SessionStoreError>
  /** A page of the user's sessions ordered by `lastUpdatedAt` desc, then `createdAt` desc, then id. */
  readonly list: (userDid: string, options?: ListOptions) => Effect.Effect<SessionPage, SessionStoreError>
  /** Applies `patch`; fails `not-found` when the session does not exist. */
  readonly update: (
    userDid: string,
    sessionId: string,
    patch: SessionPatch
  ) => Effect.Effect<Session, SessionStoreError>
  /** Moves `lastUpdatedAt` to now; fails `not-found` when the session does not exist. */
  readonly touch: (userDid: string, sessionId: string) => Effect.Effect<Session, SessionStoreError>
  /** Deletes the session; `true` when it existed. */
  readonly delete: (userDid: string, sessionId: string) => Effect.Effect<boolean, SessionStoreError>
}

/** The SessionStore port. */
export class SessionStore extends Context.Tag("@plugboard/core/SessionStore")<
  SessionStore,
  SessionStoreService
>() {}

// ---------------------------------------------------------------------------------------------
// Validation shared by every implementation, so they refuse exactly the same inputs.

const invalid = (message: string) => new SessionStoreError({ reason: "invalid-input", message })

// Control characters in an id would make logs and file listings ambiguous.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/
const SEPARATOR = /[/\\]/

/**
 * Checks a user DID: any non-empty string. It is only ever a key (the SQLite store hashes it
 * into a file name), so hostile DIDs need no further restriction here.
 */
export const validateUserDid = (userDid: unknown): Effect.Effect<string, SessionStoreError> =>
  typeof userDid === "string" && userDid.length > 0
    ? Effect.succeed(userDid)
    : Effect.fail(invalid("userDid must be a non-empty string"))

/**
 * Checks a session id: 1..MAX_SESSION_ID_LENGTH chars, no control characters, no path separator
 * (`/` or `\`) and not a dot segment (`.` or `..`). Clients choose ids ("created on first
 * contact"), and a path parameter arrives percent-decoded: `..%2F..%2Fetc%2Fpasswd` must not
 * become a session named like a path, whatever a store or a log later does with the name.
 */
export const validateSessionId = (sessionId: unknown): Effect.Effect<string, SessionStoreError> =>
  typeof sessionId === "string" &&
  sessionId.length > 0 &&
  sessionId.length <= MAX_SESSION_ID_LENGTH &&
  !CONTROL.test(sessionId) &&
  !SEPARATOR.test(sessionId) &&
  sessionId !== "." &&
  sessionId !== ".."
    ? Effect.succeed(sessionId)
    : Effect.fail(
        invalid(
          `sessionId must be 1..${MAX_SESSION_ID_LENGTH} characters without control characters or '/' or '\\', and not '.' or '..'`
        )
      )

const validateTitle = (title: unknown): Effect.Effect<string, SessionStoreError> =>
  typeof title === "string" && title.length <= MAX_TITLE_LENGTH
    ? Effect.succeed(title)
    : Effect.fail(invalid(`title must be a string of at most ${MAX_TITLE_LENGTH} characters`))

const validateOptionalString = (
  field: string,
  value: unknown
): Effect.Effect<string | undefined, SessionStoreError> =>
  value === undefined || value === null
    ? Effect.succeed(undefined)
    : typeof value === "string"
      ? Effect.succeed(value)
      : Effect.fail(invalid(`${field} must be a string`))

/**
 * Copies a user context through JSON, as the SQLite store does, so both implementations hand
 * back the same value (no shared mutable object, no functions, no `undefined` members).
 */
const normalizeUserContext = (
  value: unknown
): Effect.Effect<Readonly<Record<string, unknown>> | undefined, SessionStoreError> => {
  if (value === undefined || value === null) return Effect.succeed(undefined)
  if (typeof value !== "object" || Array.isArray(value)) {
    return Effect.fail(invalid("userContext must be a JSON object"))
  }
  return Effect.try({
    try: () => JSON.parse(JSON.stringify(value)) as Record<string, unknown>,
    catch: (cause) =>
      new SessionStoreError({ reason: "invalid-input", message: "userContext is not JSON", cause })
  })
}

/**
 * A session's stored user context, decoded. Context that cannot be decoded (a damaged store) is
 * dropped rather than failing every read of the user's sessions: the session stays usable.
 */
export const decodeUserContext = (json: string | null): Readonly<Record<string, unknown>> | undefined =>
  json === null ? undefined : parseJsonObject(json)

/** Checks and fills a `NewSession`: the values an implementation stores. */
export const validateNewSession = (
  input: NewSession
): Effect.Effect<
  {
    readonly sessionId: string
    readonly title: string
    readonly oracleName: string | undefined
    readonly oracleDid: string | undefined
    readonly userContext: Readonly<Record<string, unknown>> | undefined
  },
  SessionStoreError
> =>
  Effect.all({
    sessionId: validateSessionId(input?.sessionId),
    title: validateTitle(input?.title ?? DEFAULT_TITLE),
    oracleName: validateOptionalString("oracleName", input?.oracleName),
    oracleDid: validateOptionalString("oracleDid", input?.oracleDid),
    userContext: normalizeUserContext(input?.userContext)
  })

/** Checks `list` paging and fills defaults. */
export const validateListOptions = (
  options: ListOptions | undefined
): Effect.Effect<{ readonly limit: number; readonly offset: number }, SessionStoreError> => {
  const limit = options?.limit ?? DEFAULT_PAGE_SIZE
  const offset = options?.offset ?? 0
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    return Effect.fail(invalid(`limit must be an integer in 1..${MAX_PAGE_SIZE}`))
  }
  if (!Number.isSafeInteger(offset) || offset < 0) {
    return Effect.fail(invalid("offset must be a non-negative integer"))
  }
  return Effect.succeed({ limit, offset })
}

/** The stored shape both implementations work on: times in epoch milliseconds. */
export interface SessionRecord {
  readonly sessionId: string
  readonly title: string
  readonly createdAtMs: number
  readonly updatedAtMs: number
  readonly oracleName: string | undefined
  readonly oracleDid: string | undefined
  readonly lastProcessedCount: number
  readonly userContext: Readonly<Record<string, unknown>> | undefined
}

/** Converts a stored record to the port's `Session`. */
export const toSession = (record: SessionRecord): Session => ({
  sessionId: record.sessionId,
  title: record.title,
  createdAt: new Date(record.createdAtMs).toISOString(),
  lastUpdatedAt: new Date(record.updatedAtMs).toISOString(),
  oracleName: record.oracleName,
  oracleDid: record.oracleDid,
  lastProcessedCount: record.lastProcessedCount,
  userContext: record.userContext
})

/**
 * Applies a patch to a record at time `nowMs` (validated). `lastUpdatedAt` never moves
 * backwards, even if the clock does.
 */
export const applyPatch = (
  record: SessionRecord,
  patch: SessionPatch,
  nowMs: number
): Effect.Effect<SessionRecord, SessionStoreError> =>
  Effect.gen(function* () {
    const p = patch ?? {}
    const title = p.title === undefined ? record.title : yield* validateTitle(p.title)
    const oracleName =
      p.oracleName === undefined
        ? record.oracleName
        : yield* validateOptionalString("oracleName", p.oracleName)
    const oracleDid =
      p.oracleDid === undefined ? record.oracleDid : yield* validateOptionalString("oracleDid", p.oracleDid)
    if (
      p.lastProcessedCount !== undefined &&
      (!Number.isSafeInteger(p.lastProcessedCount) || p.lastProcessedCount < 0)
    ) {
      return yield* Effect.fail(invalid("lastProcessedCount must be a non-negative integer"))
    }
    const userContext =
      p.userContext === undefined ? record.userContext : yield* normalizeUserContext(p.userContext)
    return {
      ...record,
      title,
      oracleName,
      oracleDid,
      lastProcessedCount: p.lastProcessedCount ?? record.lastProcessedCount,
      userContext,
      updatedAtMs: Math.max(record.updatedAtMs, nowMs)
    }
  })
