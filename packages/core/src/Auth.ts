/**
 * The `Auth` port: turns a request's credentials into the user's DID
 * (docs/spec/wire.md#authentication). The host maps every `AuthError` to 401 and never runs the agent.
 * Implementations: the UCAN adapter (`@plugboard/ucan`) and `layerTest` here.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { Capability } from "./Access.js"

/** The credential headers of one request, as the host read them (header names lower-cased). */
export interface Credentials {
  /** `Authorization` header, e.g. `Bearer <token>`. */
  readonly authorization?: string | undefined
  /** `X-Auth-Type` header, e.g. `ucan`. */
  readonly authType?: string | undefined
  /** `x-ucan-delegation` header. */
  readonly ucanDelegation?: string | undefined
}

/** A verified caller. `expiresAt` (epoch millis) bounds how long the result may be cached. */
export interface Verified {
  readonly did: string
  readonly expiresAt?: number | undefined
  /**
   * The capabilities the credentials prove beyond signing in (the UCAN's, each proven from an
   * authority the oracle trusts): what a plugin's `requires` is checked against (`Access`).
   * Absent: none.
   */
  readonly capabilities?: ReadonlyArray<Capability> | undefined
}

/** Why credentials were refused. */
export const AuthErrorReason = Schema.Literal(
  "missing",
  "malformed",
  "unsupported",
  "bad-signature",
  "expired",
  "not-yet-valid",
  "wrong-audience",
  "wrong-capability",
  "no-expiry",
  "expiry-too-far",
  "replayed",
  "unavailable"
)
/** Why credentials were refused. */
export type AuthErrorReason = typeof AuthErrorReason.Type

/** Credentials were refused. Always a 401; `message` is safe to show the client. */
export class AuthError extends Schema.TaggedError<AuthError>()("AuthError", {
  reason: AuthErrorReason,
  message: Schema.String
}) {}

/** The operations of the Auth port. */
export interface AuthService {
  /** Verifies credentials; fails with `AuthError` for anything that is not a valid credential. */
  readonly verify: (credentials: Credentials) => Effect.Effect<Verified, AuthError>
}

/** The Auth port. */
export class Auth extends Context.Tag("@plugboard/core/Auth")<Auth, AuthService>() {}

const MAX_DID_LENGTH = 2048
// W3C DID Core ABNF: did:<method>:*( *idchar ":" ) 1*idchar, the method lower-case alphanumeric.
const ID_CHAR = "(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})"
const DID = new RegExp(`^did:[a-z0-9]+:(?:${ID_CHAR}*:)*${ID_CHAR}+$`)

/** True when `value` is a syntactically valid DID (W3C DID Core) of reasonable length. */
export const isDid = (value: unknown): value is string =>
  typeof value === "string" && value.length <= MAX_DID_LENGTH && DID.test(value)

/**
 * Extracts the token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
 * Shared by adapters so every one of them words the same failures the same way.
 */
export const parseBearer = (authorization: string | undefined): Effect.Effect<string, AuthError> => {
  if (authorization === undefined || authorization.trim() === "") {
    return Effect.fail(new AuthError({ reason: "missing", message: "Missing Authorization header." }))
  }
  const match = /^\s*Bearer[ \t]+(\S+)\s*$/i.exec(authorization)
  if (match === null) {
    return Effect.fail(
      new AuthError({ reason: "malformed", message: "Authorization header must be 'Bearer <token>'." })
    )
  }
  return Effect.succeed(match[1]!)
}

const TEST_PREFIX = "test:"

/**
 * Verifies `Bearer test:<did>` (or `x-ucan-delegation: test:<did>`): the DID after the prefix
 * becomes the user, no signature involved. FOR TESTS ONLY — anyone can claim any DID with it;
 * no server composes it by default.
 */
export const makeTest: AuthService = {
  verify: (credentials) => {
    const token =
      credentials.authorization !== undefined && credentials.authorization.trim() !== ""
        ? parseBearer(credentials.authorization)
        : credentials.ucanDelegation !== undefined && credentials.ucanDelegation.trim() !== ""
          ? Effect.succeed(credentials.ucanDelegation.trim())
          : Effect.fail(new AuthError({ reason: "missing", message: "Missing Authorization header." }))
    return Effect.flatMap(token, (value) => {
      if (!value.startsWith(TEST_PREFIX)) {
        return Effect.fail(
          new AuthError({ reason: "malformed", message: "Test auth expects a 'test:<did>' token." })
        )
      }
      const did = value.slice(TEST_PREFIX.length)
      return isDid(did)
        ? Effect.succeed({ did })
        : Effect.fail(
            new AuthError({ reason: "malformed", message: "Test token does not carry a valid DID." })
          )
    })
  }
}

/** `Auth` accepting `Bearer test:<did>` tokens. For tests only; never the default of a server. */
export const layerTest: Layer.Layer<Auth> = Layer.succeed(Auth, makeTest)

/** Builds the credentials `layerTest` accepts for `did`. */
export const testCredentials = (did: string): Credentials => ({
  authorization: `Bearer ${TEST_PREFIX}${did}`
})
