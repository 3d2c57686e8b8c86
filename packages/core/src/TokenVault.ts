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

/** The vault's operations. */
export interface TokenVaultService {
  readonly get: (user: string, server: string) => Effect.Effect<ConnectionSecret | undefined, TokenVaultError>
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
export const make = (store: Store.ConnectionStoreService, cipher: Cipher): TokenVaultService => ({
  get: (user, server) =>
    Effect.flatMap(Effect.mapError(store.get(user, server), fromStore), (record) => {
      if (record === undefined) return Effect.succeed(undefined)
      const plain = cipher.open(record.sealed, sealContext(user, server))
      const parsed = plain === undefined ? undefined : safeParse(plain)
      return isObject(parsed)
        ? Effect.succeed(parsed)
        : Effect.fail(
            new TokenVaultError({
              reason: "sealed",
              message: `the stored connection of server '${server}' does not open with this key (the key changed, or the record was moved or altered); connect again`
            })
          )
    }),
  put: (user, server, secret, nowMs) =>
    Effect.flatMap(Effect.mapError(Store.validateKey(user, server), fromStore), () => {
      if (!isObject(secret)) {
        return Effect.fail(
          new TokenVaultError({ reason: "invalid", message: "a connection secret is a JSON object" })
        )
      }
      const sealed = cipher.seal(JSON.stringify(secret), sealContext(user, server))
      return Effect.mapError(store.put(user, server, sealed, nowMs), fromStore)
    }),
  remove: (user, server) => Effect.mapError(store.remove(user, server), fromStore),
  list: (user) =>
    Effect.map(Effect.mapError(store.list(user), fromStore), (records) =>
      records.map(({ server, updatedAtMs }) => ({ server, updatedAtMs }))
    )
})

const safeParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
