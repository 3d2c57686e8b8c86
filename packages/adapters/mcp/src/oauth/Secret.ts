/**
 * What one user's connection to one server keeps, as the JSON the vault seals: the authorization
 * server it was made with, the resource indicator, the client identity (registered for this user,
 * the operator's preregistered one, or the host's client metadata document), the tokens once connected, and the PKCE verifier of a
 * flow in flight. Decoded with a schema on every read, so a record of another shape (an older
 * format, a foreign writer) is reported, never half-used.
 */
import { Either, ParseResult, Schema } from "effect"

/** The client identity a connection uses at the authorization server. */
export const Client = Schema.Struct({
  client_id: Schema.String,
  client_secret: Schema.optional(Schema.String),
  /**
   * How it was obtained: `registered` (RFC 7591, for this user), `configured` (preregistered) or
   * `metadata-document` (the client_id is the URL of the host's Client ID Metadata Document).
   */
  source: Schema.Literal("registered", "configured", "metadata-document"),
  /** The redirect URI a registered client was registered with (another one needs a new registration). */
  redirect_uri: Schema.optional(Schema.String)
})
/** The client identity a connection uses at the authorization server. */
export type Client = typeof Client.Type

/** The tokens of a connected user. `expiresAtMs` is epoch ms, absent when the server gave no expiry. */
export const Tokens = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.String,
  refresh_token: Schema.optional(Schema.String),
  scope: Schema.optional(Schema.String),
  expiresAtMs: Schema.optional(Schema.Number),
  obtainedAtMs: Schema.Number
})
/** The tokens of a connected user. */
export type Tokens = typeof Tokens.Type

/** A flow started and not yet completed: what the callback needs to finish it. */
export const Pending = Schema.Struct({
  nonce: Schema.String,
  codeVerifier: Schema.String,
  redirectUri: Schema.String,
  expiresAtMs: Schema.Number
})
/** A flow started and not yet completed. */
export type Pending = typeof Pending.Type

/**
 * A renewal in flight on some host: until `untilMs` (that host's clock), the others wait for its
 * tokens rather than send the same refresh token again (docs/oauth.md#several-hosts). `id` tells
 * the claimant its own claim. A host that stopped leaves it behind; past `untilMs` it is void.
 */
export const Renewing = Schema.Struct({
  id: Schema.String,
  untilMs: Schema.Number
})
/** A renewal in flight on some host. */
export type Renewing = typeof Renewing.Type

/** The whole record (format version 1). */
export const Secret = Schema.Struct({
  v: Schema.Literal(1),
  issuer: Schema.String,
  resource: Schema.String,
  client: Client,
  tokens: Schema.optional(Tokens),
  pending: Schema.optional(Pending),
  renewing: Schema.optional(Renewing)
})
/** The whole record (format version 1). */
export type Secret = typeof Secret.Type

const decode = Schema.decodeUnknownEither(Secret)

/** The record in an opened vault secret, or why it is not one (no values quoted: they are secrets). */
export const read = (value: unknown): Either.Either<Secret, string> =>
  Either.mapLeft(decode(value), (error) =>
    ParseResult.ArrayFormatter.formatErrorSync(error)
      .map((issue) => `${issue.path.join(".") || "record"}: ${issue._tag}`)
      .join("; ")
  )
