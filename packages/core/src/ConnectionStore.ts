/**
 * The `ConnectionStore` port: what each user keeps of each account they connected (an OAuth
 * connection to a remote MCP server, docs/oauth.md), one record per (user DID, server name).
 *
 * The store holds opaque text and never sees a token: records reach it sealed by `TokenVault`
 * (this folder), which encrypts them with the operator's key and binds each to its user and
 * server, so a row copied to another user's slot does not open. What the store adds is the
 * bookkeeping a user is shown (`GET /connections`): which servers, since when.
 *
 * Every implementation (the in-memory one here, SQLite in `@plugboard/sqlite`, Postgres in
 * `@plugboard/postgres`) passes `ConnectionStoreConformance` (`@plugboard/testing`).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { isPluginName } from "./Plugin.js"

/** Why an operation failed. */
export type ConnectionStoreErrorReason = "invalid" | "unavailable"

/**
 * The one error of the port. `invalid`: a user, a server name or a record that breaks the rules
 * below (reported before anything is read or written). `unavailable`: the file or engine failed.
 */
export class ConnectionStoreError extends Schema.TaggedError<ConnectionStoreError>()("ConnectionStoreError", {
  reason: Schema.Literal("invalid", "unavailable"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** One stored record: the sealed text and when it was last written (epoch ms). */
export interface StoredConnection {
  readonly server: string
  readonly sealed: string
  readonly updatedAtMs: number
}

/** The operations of the port. */
export interface ConnectionStoreService {
  /** The user's record for `server`, or undefined when there is none. */
  readonly get: (
    user: string,
    server: string
  ) => Effect.Effect<StoredConnection | undefined, ConnectionStoreError>
  /** Writes (or replaces) the user's record for `server`. */
  readonly put: (
    user: string,
    server: string,
    sealed: string,
    updatedAtMs: number
  ) => Effect.Effect<void, ConnectionStoreError>
  /**
   * A compare-and-set: writes `next` (or forgets the record, `next` undefined) only when the
   * stored record is still `expected` (its sealed text; undefined: there is none), in one atomic
   * step; true when it applied. Two hosts that read the same record and both write it back
   * cannot lose one's write unseen: the second is told it did not apply, and reads again
   * (docs/oauth.md#several-hosts). A sealed text names a version, since the vault seals each
   * write under a fresh random IV.
   */
  readonly compareAndSet: (
    user: string,
    server: string,
    expected: string | undefined,
    next: { readonly sealed: string; readonly updatedAtMs: number } | undefined
  ) => Effect.Effect<boolean, ConnectionStoreError>
  /** Forgets the user's record for `server`; true when there was one. */
  readonly remove: (user: string, server: string) => Effect.Effect<boolean, ConnectionStoreError>
  /** Every record of the user, by server name. */
  readonly list: (user: string) => Effect.Effect<ReadonlyArray<StoredConnection>, ConnectionStoreError>
}

/** The ConnectionStore port. */
export class ConnectionStore extends Context.Tag("@plugboard/core/ConnectionStore")<
  ConnectionStore,
  ConnectionStoreService
>() {}

/** Longest user DID the store accepts. */
export const MAX_USER_LENGTH = 2_048
/** Longest sealed record (tokens, client registration and a verifier fit in far less). */
export const MAX_SEALED_LENGTH = 64 * 1024

const invalid = (message: string) => new ConnectionStoreError({ reason: "invalid", message })

/** Checks a user DID: a non-empty string of at most `MAX_USER_LENGTH` characters. */
export const validateUser = (user: unknown): Effect.Effect<string, ConnectionStoreError> =>
  typeof user === "string" && user.length > 0 && user.length <= MAX_USER_LENGTH
    ? Effect.succeed(user)
    : Effect.fail(invalid(`a user must be a DID of 1 to ${MAX_USER_LENGTH} characters`))

/** Checks a server name: a plugin name (kebab-case), as every MCP server of the catalog has. */
export const validateServer = (server: unknown): Effect.Effect<string, ConnectionStoreError> =>
  typeof server === "string" && isPluginName(server)
    ? Effect.succeed(server)
    : Effect.fail(
        invalid(`'${String(server).slice(0, 100)}' is not a server name (kebab-case: a-z, 0-9 and '-')`)
      )

/** Checks a record about to be written. */
export const validateRecord = (
  sealed: unknown,
  updatedAtMs: unknown
): Effect.Effect<void, ConnectionStoreError> => {
  if (typeof sealed !== "string" || sealed.length === 0 || sealed.length > MAX_SEALED_LENGTH) {
    return Effect.fail(invalid(`a sealed record is 1 to ${MAX_SEALED_LENGTH} characters of text`))
  }
  if (typeof updatedAtMs !== "number" || !Number.isSafeInteger(updatedAtMs) || updatedAtMs < 0) {
    return Effect.fail(invalid(`updatedAtMs must be a non-negative integer, got ${String(updatedAtMs)}`))
  }
  return Effect.void
}

/** Checks a compare-and-set's arguments (the key, the expected text, the record to write). */
export const validateSwap = (
  user: unknown,
  server: unknown,
  expected: unknown,
  next: unknown
): Effect.Effect<readonly [string, string], ConnectionStoreError> =>
  Effect.flatMap(validateKey(user, server), (key) => {
    if (expected !== undefined && typeof expected !== "string") {
      return Effect.fail(invalid("the expected record is its sealed text, or undefined for none"))
    }
    if (next === undefined) return Effect.succeed(key)
    if (typeof next !== "object" || next === null) {
      return Effect.fail(invalid("the record to write is { sealed, updatedAtMs }, or undefined to forget it"))
    }
    const { sealed, updatedAtMs } = next as { sealed?: unknown; updatedAtMs?: unknown }
    return Effect.as(validateRecord(sealed, updatedAtMs), key)
  })

/** Checks a (user, server) pair. */
export const validateKey = (
  user: unknown,
  server: unknown
): Effect.Effect<readonly [string, string], ConnectionStoreError> =>
  Effect.zip(validateUser(user), validateServer(server))

/** A store in this process's memory: every record is lost with it. */
export const makeMemory = (): ConnectionStoreService => {
  const users = new Map<string, Map<string, StoredConnection>>()
  return {
    get: (user, server) => Effect.map(validateKey(user, server), ([u, s]) => users.get(u)?.get(s)),
    put: (user, server, sealed, updatedAtMs) =>
      Effect.flatMap(validateKey(user, server), ([u, s]) =>
        Effect.map(validateRecord(sealed, updatedAtMs), () => {
          const records = users.get(u) ?? new Map<string, StoredConnection>()
          records.set(s, { server: s, sealed, updatedAtMs })
          users.set(u, records)
        })
      ),
    compareAndSet: (user, server, expected, next) =>
      Effect.map(validateSwap(user, server, expected, next), ([u, s]) => {
        const records = users.get(u) ?? new Map<string, StoredConnection>()
        if (records.get(s)?.sealed !== expected) return false
        if (next === undefined) records.delete(s)
        else records.set(s, { server: s, sealed: next.sealed, updatedAtMs: next.updatedAtMs })
        users.set(u, records)
        return true
      }),
    remove: (user, server) =>
      Effect.map(validateKey(user, server), ([u, s]) => users.get(u)?.delete(s) ?? false),
    list: (user) =>
      Effect.map(validateUser(user), (u) =>
        [...(users.get(u)?.values() ?? [])].sort((a, b) => (a.server < b.server ? -1 : 1))
      )
  }
}

/** The in-memory store as a layer (a fresh store per layer build). */
export const layerMemory: Layer.Layer<ConnectionStore> = Layer.sync(ConnectionStore, makeMemory)
