/**
 * The token vault: each user's connection secrets (OAuth tokens, the client registration, a PKCE
 * verifier in flight), sealed before they reach a `ConnectionStore` and opened after, so a store's
 * file or table holds nothing readable without the operator's key (docs/oauth.md#at-rest).
 *
 * The rule of sealing lives here, once: a record is JSON, sealed with the `Cipher` under the
 * context `user + server`, so a sealed record moved to another user's or server's slot fails to
 * open (an authenticated cipher refuses a changed context) and is reported, never used. The
 * cipher itself is an adapter's (none is shipped yet: docs/oauth.md#not-built-yet); core has no
 * crypto API.
 */
import { Effect, Schema } from "effect"
import * as Store from "./ConnectionStore.js"

/**
 * An authenticated cipher. `seal` encrypts `plaintext` bound to `context`; `open` returns the
 * plaintext, or undefined when the text was not sealed by this key under this context (another
 * key, another slot, a changed byte).
 */
export interface Cipher {
  readonly seal: (plaintext: string, context: string) => string
  readonly open: (sealed: string, context: string) => string | undefined
  /**
   * Whether `sealed` opens only with a key this cipher no longer seals with (a previous key,
   * after a rotation): the vault then seals the record again under the current key, with a
   * compare-and-set, when it reads it (docs/oauth.md#at-rest). Absent: never.
   */
  readonly isStale?: ((sealed: string, context: string) => boolean) | undefined
}

/** What a connection keeps: a JSON object whose fields the connection's client defines. */
export type ConnectionSecret = Readonly<Record<string, unknown>>

/** Why a vault operation failed. */
export type TokenVaultErrorReason = "invalid" | "unavailable" | "sealed"

/**
 * The vault's error. `invalid` and `unavailable` as the store's; `sealed`: a stored record does
 * not open with this key (the key changed, or the record was moved or altered). A `sealed`
 * record is treated as no connection by callers that can ask the user to connect again.
 */
export class TokenVaultError extends Schema.TaggedError<TokenVaultError>()("TokenVaultError", {
  reason: Schema.Literal("invalid", "unavailable", "sealed"),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** What `list` tells about a connection: never a secret. */
export interface ConnectionSummary {
  readonly server: string
  readonly updatedAtMs: number
}

/**
 * A record as `read` found it, with its version: the sealed text, which each write makes anew (a
 * fresh random IV), so a conditional write names exactly the record it was computed from. A
 * record that does not open comes with its version and the `sealed` error, so that a caller may
 * still replace it conditionally (a new connect over a record of another key).
 */
export type VersionedSecret =
  | { readonly version: string; readonly secret: ConnectionSecret; readonly problem?: undefined }
  | { readonly version: string; readonly secret?: undefined; readonly problem: TokenVaultError }

/** The vault's operations. */
export interface TokenVaultService {
  readonly get: (user: string, server: string) => Effect.Effect<ConnectionSecret | undefined, TokenVaultError>
  /** The record and its version; undefined when there is none. */
  readonly read: (user: string, server: string) => Effect.Effect<VersionedSecret | undefined, TokenVaultError>
  /**
   * Seals and writes `secret` only if the stored record is still `version` (undefined: none),
   * atomically (`ConnectionStore.compareAndSet`): the new version when it applied, undefined when
   * another writer came first (read again and decide again).
   */
  readonly putIf: (
    user: string,
    server: string,
    version: string | undefined,
    secret: ConnectionSecret,
    nowMs: number
  ) => Effect.Effect<string | undefined, TokenVaultError>
  /** Forgets the record only if it is still `version`; true when it applied. */
  readonly removeIf: (
    user: string,
    server: string,
    version: string
  ) => Effect.Effect<boolean, TokenVaultError>
  readonly put: (
    user: string,
    server: string,
    secret: ConnectionSecret,
    nowMs: number
  ) => Effect.Effect<void, TokenVaultError>
  readonly remove: (user: string, server: string) => Effect.Effect<boolean, TokenVaultError>
  readonly list: (user: string) => Effect.Effect<ReadonlyArray<ConnectionSummary>, TokenVaultError>
}

/** The context a record is sealed under: its user and server, unambiguously joined. */
export const sealContext = (user: string, server: string): string => JSON.stringify([user, server])

const fromStore = (error: Store.ConnectionStoreError): TokenVaultError =>
  new TokenVaultError({ reason: error.reason, message: error.message, cause: error })

const isObject = (value: unknown): value is ConnectionSecret =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The vault over a store and a cipher. */
export const make = (store: Store.ConnectionStoreService, cipher: Cipher): TokenVaultService => {
  // A record sealed under a previous key, sealed again under the current one over its version
  // (never a blind write: a writer that came first wins). Its new version, or the old one when
  // the write did not apply or failed (the record still opens; the next read tries again).
  const reseal = (user: string, server: string, record: Store.StoredConnection, plain: string) => {
    const sealed = cipher.seal(plain, sealContext(user, server))
    return Effect.orElseSucceed(
      Effect.map(
        store.compareAndSet(user, server, record.sealed, { sealed, updatedAtMs: record.updatedAtMs }),
        (applied) => (applied ? sealed : record.sealed)
      ),
      () => record.sealed
    )
  }
  const read: TokenVaultService["read"] = (user, server) =>
    Effect.flatMap(Effect.mapError(store.get(user, server), fromStore), (record) => {
      if (record === undefined) return Effect.succeed(undefined)
      const context = sealContext(user, server)
      const plain = cipher.open(record.sealed, context)
      const parsed = plain === undefined ? undefined : safeParse(plain)
      if (isObject(parsed) && plain !== undefined && cipher.isStale?.(record.sealed, context) === true) {
        return Effect.map(
          reseal(user, server, record, plain),
          (version): VersionedSecret => ({ version, secret: parsed })
        )
      }
      return Effect.succeed<VersionedSecret>(
        isObject(parsed)
          ? { version: record.sealed, secret: parsed }
          : {
              version: record.sealed,
              problem: new TokenVaultError({
                reason: "sealed",
                message: `the stored connection of server '${server}' does not open with this key (the key changed, or the record was moved or altered); connect again`
              })
            }
      )
    })
  const seal = (user: string, server: string, secret: ConnectionSecret) =>
    Effect.flatMap(Effect.mapError(Store.validateKey(user, server), fromStore), () =>
      isObject(secret)
        ? Effect.succeed(cipher.seal(JSON.stringify(secret), sealContext(user, server)))
        : Effect.fail(
            new TokenVaultError({ reason: "invalid", message: "a connection secret is a JSON object" })
          )
    )
  return {
    get: (user, server) =>
      Effect.flatMap(read(user, server), (found) =>
        found === undefined
          ? Effect.succeed(undefined)
          : found.problem === undefined
            ? Effect.succeed(found.secret)
            : Effect.fail(found.problem)
      ),
    read,
    put: (user, server, secret, nowMs) =>
      Effect.flatMap(seal(user, server, secret), (sealed) =>
        Effect.mapError(store.put(user, server, sealed, nowMs), fromStore)
      ),
    putIf: (user, server, version, secret, nowMs) =>
      Effect.flatMap(seal(user, server, secret), (sealed) =>
        Effect.map(
          Effect.mapError(
            store.compareAndSet(user, server, version, { sealed, updatedAtMs: nowMs }),
            fromStore
          ),
          (applied) => (applied ? sealed : undefined)
        )
      ),
    removeIf: (user, server, version) =>
      Effect.mapError(store.compareAndSet(user, server, version, undefined), fromStore),
    remove: (user, server) => Effect.mapError(store.remove(user, server), fromStore),
    list: (user) =>
      Effect.map(Effect.mapError(store.list(user), fromStore), (records) =>
        records.map(({ server, updatedAtMs }) => ({ server, updatedAtMs }))
      )
  }
}

const safeParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
