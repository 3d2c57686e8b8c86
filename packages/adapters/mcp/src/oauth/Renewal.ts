/**
 * Renewing a user's tokens with their refresh token, safely across hosts (docs/oauth.md#several-hosts).
 *
 * Authorization servers rotate refresh tokens, and many (oidc-provider, as OAuth's security
 * practice asks) revoke the whole grant when a rotated one is sent again. Two hosts that both
 * read refresh token R1 and both send it therefore lose the connection, whoever writes last. So a
 * host first claims the renewal in the record itself, with a compare-and-set over the version it
 * read (`Records.writeIf`): of hosts that read the same record, one claim applies; the others
 * read again and wait for the claimant's tokens (or, when not forced and the old access token is
 * still valid, use it meanwhile). The claim is void past `untilMs`, so a host that stopped
 * mid-renewal holds nobody up for long. The claimant writes its new tokens over whatever the
 * record became meanwhile (a flow started elsewhere keeps its verifier). A refusal
 * (`invalid_grant`) after another writer renewed is not a disconnect: their tokens are used.
 * Within one process, `Connections` still runs one renewal per user and server at a time.
 */
import { randomBytes } from "node:crypto"
import { type FetchLike, type OAuthTokens, refreshAuthorization } from "@modelcontextprotocol/client"
import { Duration, Effect, Either, Option } from "effect"
import { describeError } from "../McpError.js"
import * as ClientIdentity from "./ClientIdentity.js"
import type { ServerMetadata } from "./Metadata.js"
import { OAuthError } from "./OAuthError.js"
import type { Conflict, Loaded, Records } from "./Records.js"
import type * as Secret from "./Secret.js"

/** OAuth error codes after which the grant is gone for good (RFC 6749 §5.2): connect again. */
export const FINAL_ERRORS: ReadonlySet<string> = new Set([
  "invalid_grant",
  "invalid_client",
  "unauthorized_client",
  "invalid_scope"
])

/** The RFC 6749 code of an SDK error, when it has one. */
export const oauthCode = (error: unknown): string | undefined => {
  // The SDK v2's `OAuthError` carries the RFC 6749 code in `code` (the v1 one in `errorCode`).
  const { code, errorCode } = (error ?? {}) as { code?: unknown; errorCode?: unknown }
  return typeof code === "string" ? code : typeof errorCode === "string" ? errorCode : undefined
}

/** What a renewal needs of the connections. */
export interface RenewalOptions {
  readonly records: Records
  readonly metadataOf: (server: string) => Effect.Effect<ServerMetadata, OAuthError>
  readonly needsConnect: (server: string, why: string, cause?: unknown) => OAuthError
  readonly toTokens: (tokens: OAuthTokens) => Secret.Tokens
  readonly fetchFn: FetchLike
  readonly now: () => number
  readonly skewMs: number
  /** How long a claim holds the other hosts off. */
  readonly claimMs: number
  /** How often a host waiting for another's renewal reads the record again. */
  readonly pollMs: number
}

/**
 * The renewal: the access token to use, given the one the caller saw (`seen`); `force` renews
 * whatever the expiry (the MCP server refused `seen`).
 */
export type Renew = (
  user: string,
  server: string,
  seen: string,
  force: boolean
) => Effect.Effect<string, OAuthError>

// A conditional write's new version, or none when another writer came first.
const applied = <A>(
  write: Effect.Effect<A, OAuthError | Conflict>
): Effect.Effect<Option.Option<A>, OAuthError> =>
  Effect.catchTag(Effect.asSome(write), "Conflict", () => Effect.succeedNone)

const withoutClaim = ({ renewing: _claim, ...record }: Secret.Secret): Secret.Secret => record

/** The renewal over the records. */
export const make = (options: RenewalOptions): Renew => {
  const { records, needsConnect, now } = options

  // The new tokens, written over the latest record: the client's own where it still is, else
  // the record the renewal started from (another client's flow in between is superseded).
  const keep =
    (base: Secret.Secret, tokens: Secret.Tokens) =>
    (latest: Secret.Secret | undefined): Secret.Secret | undefined =>
      latest === undefined
        ? undefined
        : latest.client.client_id === base.client.client_id && latest.issuer === base.issuer
          ? { ...withoutClaim(latest), tokens }
          : { ...withoutClaim(base), tokens }

  // Withdraws this host's claim (the renewal did not happen), unless another writer replaced it.
  const release = (user: string, server: string, from: Loaded, mine: Secret.Renewing) =>
    Effect.ignore(
      records.update(user, server, from, (latest) =>
        latest?.renewing?.id === mine.id ? withoutClaim(latest) : undefined
      )
    )

  return (user, server, seen, force) =>
    Effect.gen(function* () {
      for (;;) {
        const found = yield* records.read(user, server)
        if (found.problem !== undefined) return yield* found.problem
        const record = found.record
        const old = record?.tokens
        if (record === undefined || old === undefined) {
          return yield* needsConnect(server, "this account is not connected")
        }
        // Another writer renewed since the caller read: theirs is the token.
        if (old.access_token !== seen) return old.access_token
        const valid = old.expiresAtMs === undefined || now() < old.expiresAtMs
        if (!force && (old.expiresAtMs === undefined || now() + options.skewMs < old.expiresAtMs)) {
          return old.access_token
        }
        const claim = record.renewing
        if (claim !== undefined && now() < claim.untilMs) {
          // Another host is renewing: wait for its tokens (the old ones serve meanwhile if they may).
          if (!force && valid) return old.access_token
          yield* Effect.sleep(Duration.millis(options.pollMs))
          continue
        }
        const { tokens: _old, ...rest } = withoutClaim(record)
        const refreshToken = old.refresh_token
        if (refreshToken === undefined) {
          if (Option.isNone(yield* applied(records.writeIf(user, server, found.version, rest)))) continue
          return yield* needsConnect(
            server,
            force
              ? "the server refused the access token and gave no refresh token"
              : "the access token expired and the server gave no refresh token"
          )
        }
        const mine: Secret.Renewing = {
          id: randomBytes(12).toString("base64url"),
          untilMs: now() + options.claimMs
        }
        const claimed = yield* applied(
          records.writeIf(user, server, found.version, { ...record, renewing: mine })
        )
        // Another writer came first (maybe another host's claim): read again.
        if (Option.isNone(claimed)) continue
        const from = { version: claimed.value, record: { ...record, renewing: mine } }
        const meta = yield* Effect.tapError(options.metadataOf(server), () =>
          release(user, server, from, mine)
        )
        const outcome = yield* Effect.either(
          Effect.tryPromise({
            try: () =>
              refreshAuthorization(meta.issuer, {
                metadata: meta.authorizationServer,
                clientInformation: record.client,
                refreshToken,
                resource: record.resource,
                fetchFn: options.fetchFn
              }),
            catch: (cause) => cause
          })
        )
        if (Either.isRight(outcome)) {
          const tokens = options.toTokens(outcome.right)
          const written = yield* records.update(user, server, from, keep(record, tokens))
          // Disconnected elsewhere meanwhile: the new tokens are not kept.
          if (written === undefined) return yield* needsConnect(server, "this account is not connected")
          return tokens.access_token
        }
        const code = oauthCode(outcome.left)
        if (code !== undefined && FINAL_ERRORS.has(code)) {
          // Refused: unless another writer has renewed meanwhile, the grant is gone.
          const latest = yield* records.update(user, server, from, (latest) =>
            latest?.tokens === undefined || latest.tokens.access_token !== seen
              ? undefined
              : (({ tokens: _gone, ...left }) => left)(withoutClaim(latest))
          )
          if (latest?.tokens !== undefined && latest.tokens.access_token !== seen)
            return latest.tokens.access_token
          return yield* needsConnect(
            server,
            `the authorization server refused to renew the connection (${code})${ClientIdentity.documentHint(record.client, code)}`,
            outcome.left
          )
        }
        yield* release(user, server, from, mine)
        // The server could not be asked: keep everything; a token still valid is still used
        // (unless the MCP server just refused it).
        if (!force && old.expiresAtMs !== undefined && now() < old.expiresAtMs) return old.access_token
        return yield* new OAuthError({
          reason: "unreachable",
          server,
          message: `the access token to '${server}' ${force ? "was refused" : "expired"} and its authorization server could not renew it now (${describeError(outcome.left)}); try again later`,
          cause: outcome.left
        })
      }
    })
}
