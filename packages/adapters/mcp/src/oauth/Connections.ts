/**
 * Each user's OAuth connections to remote MCP servers (docs/oauth.md): the authorization-code
 * flow with PKCE S256 and a sealed state, the code exchange, a refresh before expiry, and
 * disconnecting with revocation. Every secret lives in core's `TokenVault`, one record per user
 * per server, so a user's token is only ever read under that user's DID.
 *
 * The flow: `start(user, server)` discovers the server's authorization server (`Metadata.ts`),
 * gets a client identity (the operator's preregistered client, else the host's Client ID Metadata
 * Document where the authorization server supports it, else dynamic registration RFC 7591 for this
 * user; docs/oauth.md#client-identity), keeps the PKCE verifier in the user's record and returns the URL to open. The
 * authorization server sends the browser back to the host's redirect URI with `code` and
 * `state`; `complete` opens the state (sealed with the host's key, naming the user and server, so
 * the callback needs no session), checks it against the flow in flight, exchanges the code and
 * keeps the tokens. `accessToken` hands out a token refreshed `refreshSkewMs` before expiry; a
 * refresh the authorization server refuses forgets the tokens and fails with `needs-connect`.
 *
 * Every write is conditional on the record it was computed from (`Records.ts`), and a renewal is
 * claimed in the record before its refresh token is sent (`Renewal.ts`), so hosts sharing one
 * store (Postgres) neither lose each other's writes nor send one rotated refresh token twice
 * (docs/oauth.md#several-hosts).
 */
import { randomBytes } from "node:crypto"
import {
  exchangeAuthorization,
  type FetchLike,
  type OAuthTokens,
  startAuthorization
} from "@modelcontextprotocol/client"
import { ConnectionStore as Store, type TokenVault } from "@plugboard/core"
import { Effect, Either } from "effect"
import { describeError } from "../McpError.js"
import * as ClientIdentity from "./ClientIdentity.js"
import { clientIdProblem } from "./ClientMetadata.js"
import { discover, type ServerMetadata } from "./Metadata.js"
import { OAuthError } from "./OAuthError.js"
import * as Records from "./Records.js"
import * as Renewal from "./Renewal.js"
import { type Revocation, revoke } from "./Revoke.js"
import type * as Secret from "./Secret.js"

/** How a server signs its users in (its config's `auth: "oauth"` part). */
export interface OAuthServerConfig {
  /** The server's config name (kebab-case): the key of each user's record. */
  readonly name: string
  /** The MCP endpoint (Streamable HTTP). */
  readonly url: string
  /** Scopes to ask for; default: what the server's 401 asks, else its metadata's `scopes_supported`. */
  readonly scopes?: ReadonlyArray<string> | undefined
  /** A client registered with the authorization server beforehand; without it, dynamic registration. */
  readonly clientId?: string | undefined
  readonly clientSecret?: string | undefined
}

/** Options of {@link make}. */
export interface ConnectionsOptions {
  readonly vault: TokenVault.TokenVaultService
  /** Seals the flow's `state` (the host's `CONNECTIONS_KEY` cipher does). */
  readonly cipher: TokenVault.Cipher
  /** Where the authorization server sends the browser back (the host's `/oauth/callback`). */
  readonly redirectUri: string
  readonly servers: ReadonlyArray<OAuthServerConfig>
  /**
   * The https URL where the host serves its Client ID Metadata Document (`ClientMetadata.urlFor`),
   * listing `redirectUri`. Used as the client_id with every authorization server that advertises
   * `client_id_metadata_document_supported`, instead of registering; without it, registration.
   */
  readonly clientMetadataUrl?: string | undefined
  /** The client's name shown on consent screens when registering (default `plugboard`). */
  readonly clientName?: string | undefined
  /** Refresh this long before expiry (default 60 s). */
  readonly refreshSkewMs?: number | undefined
  /**
   * How long a host's claim to renew a user's token holds the other hosts off (default 30 s):
   * they wait for its tokens rather than send the same refresh token (docs/oauth.md#several-hosts).
   */
  readonly renewClaimMs?: number | undefined
  /** A flow not completed this long after `start` is refused (default 10 min). */
  readonly flowTtlMs?: number | undefined
  /** What to tell the user (and the model) to do when a connection is missing. */
  readonly connectHint?: ((server: string) => string) | undefined
  readonly fetch?: FetchLike | undefined
  readonly now?: (() => number) | undefined
}

/** A connection as a user is shown it: never a token. */
export interface ConnectionStatus {
  readonly server: string
  readonly connected: boolean
  readonly updatedAtMs: number
  readonly expiresAtMs?: number | undefined
  readonly scope?: string | undefined
  /** Why a stored record is not usable, when it is not. */
  readonly problem?: string | undefined
  /** The client identity the connection was made with (`Secret.Client`'s `source`). */
  readonly identity?: Secret.Client["source"] | undefined
}

/** What `disconnect` did. */
export interface Disconnected {
  readonly removed: boolean
  /** The revocation of the refresh token (or, without one, the access token). */
  readonly revocation: Revocation
}

/** The connections of every user to the configured servers. */
export interface Connections {
  /** Starts a flow: the authorization URL to open in the user's browser. */
  readonly start: (user: string, server: string) => Effect.Effect<{ readonly url: string }, OAuthError>
  /**
   * The user a redirect's query names (its sealed `state`), or undefined when it names none this
   * key opens: for a host to make that user's state available before `complete` writes to it.
   */
  readonly flowUser: (query: Readonly<Record<string, string | undefined>>) => string | undefined
  /** Finishes a flow from the redirect's query parameters; tells whose connection it made. */
  readonly complete: (
    query: Readonly<Record<string, string | undefined>>
  ) => Effect.Effect<{ readonly user: string; readonly server: string }, OAuthError>
  /** The user's access token for `server`, refreshed when it is about to expire. */
  readonly accessToken: (user: string, server: string) => Effect.Effect<string, OAuthError>
  /**
   * Renews the user's token now, whatever its expiry: for a server that refused the token it
   * was sent (HTTP 401). A refusal to renew is `needs-connect`, as in `accessToken`.
   */
  readonly renew: (user: string, server: string) => Effect.Effect<string, OAuthError>
  /** `Authorization: Bearer <token>` for a request of the user's to `server`. */
  readonly headers: (user: string, server: string) => Effect.Effect<Record<string, string>, OAuthError>
  /** Forgets the user's connection, revoking it first where the authorization server supports it. */
  readonly disconnect: (user: string, server: string) => Effect.Effect<Disconnected, OAuthError>
  /** The user's connections, without their secrets. */
  readonly list: (user: string) => Effect.Effect<ReadonlyArray<ConnectionStatus>, OAuthError>
}

const STATE_CONTEXT = "plugboard/oauth-state"
const DEFAULT_SKEW_MS = 60_000
const DEFAULT_FLOW_TTL_MS = 10 * 60_000
const DEFAULT_CLAIM_MS = 30_000
// How often a host waiting for another host's renewal reads the record again.
const RENEWAL_POLL_MS = 100
const { oauthCode } = Renewal

/** Bounded, single-line text from another party (an error description), so it cannot flood a log. */
const quote = (text: string | undefined): string =>
  text === undefined ? "" : text.replace(/[\r\n\t]+/g, " ").slice(0, 200)

/** The connections over a vault. */
export const make = (options: ConnectionsOptions): Connections => {
  const metadataUrl = options.clientMetadataUrl
  if (metadataUrl !== undefined) {
    const problem = clientIdProblem(metadataUrl)
    if (problem !== undefined) throw new RangeError(`clientMetadataUrl ${problem}`)
  }
  const servers = new Map(options.servers.map((s) => [s.name, s]))
  const fetchFn: FetchLike = options.fetch ?? ((url, init) => fetch(url, init))
  const now = options.now ?? Date.now
  const skew = options.refreshSkewMs ?? DEFAULT_SKEW_MS
  const flowTtl = options.flowTtlMs ?? DEFAULT_FLOW_TTL_MS
  const hint = (server: string) =>
    options.connectHint?.(server) ?? `connect your account to '${server}' and try again`
  const metadata = new Map<string, Promise<ServerMetadata>>()
  const refreshing = new Map<string, Promise<Either.Either<string, OAuthError>>>()
  const locks = new Map<string, Promise<void>>()

  /**
   * Runs `effect` alone among the writers of one user's record for one server (start, complete,
   * refresh, disconnect), in this process, so that one process sends one refresh at a time.
   * Writers on other hosts are met by the compare-and-set of each write (`Records`).
   */
  const exclusive = <A>(user: string, server: string, effect: Effect.Effect<A, OAuthError>) =>
    Effect.suspend(() => {
      const key = JSON.stringify([user, server])
      const previous = locks.get(key) ?? Promise.resolve()
      const result = previous.then(() => Effect.runPromise(Effect.either(effect)))
      const tail = result.then(() => undefined)
      locks.set(key, tail)
      void tail.then(() => {
        if (locks.get(key) === tail) locks.delete(key)
      })
      return Effect.flatten(Effect.promise(() => result))
    })

  // A user or server name the store would refuse, refused before any request is sent.
  const checkKey = (user: string, server: string) =>
    Effect.mapError(
      Store.validateKey(user, server),
      (e) => new OAuthError({ reason: "invalid", server: String(server).slice(0, 100), message: e.message })
    )

  const configOf = (server: string) => {
    const config = servers.get(server)
    return config === undefined
      ? Effect.fail(
          new OAuthError({
            reason: "invalid",
            server,
            message: `'${server}' is not a server that signs in with OAuth`
          })
        )
      : Effect.succeed(config)
  }

  const needsConnect = (server: string, why: string, cause?: unknown) =>
    new OAuthError({
      reason: "needs-connect",
      server,
      message: `MCP server '${server}' needs you to connect your account: ${why}; ${hint(server)}.`,
      cause
    })

  // Discovery once per server and process; a failure is not kept, so the next use retries.
  const metadataOf = (config: OAuthServerConfig): Effect.Effect<ServerMetadata, OAuthError> =>
    Effect.suspend(() => {
      let found = metadata.get(config.name)
      if (found === undefined) {
        found = Effect.runPromise(Effect.either(discover(config, fetchFn))).then((r) => {
          if (Either.isLeft(r)) {
            metadata.delete(config.name)
            throw r.left
          }
          return r.right
        })
        metadata.set(config.name, found)
      }
      const pending = found
      return Effect.tryPromise({ try: () => pending, catch: (e) => e as OAuthError })
    })

  const fromVault = (server: string) => (error: TokenVault.TokenVaultError) =>
    error.reason === "sealed"
      ? needsConnect(server, "the stored connection does not open with this host's key", error)
      : new OAuthError({
          reason: error.reason === "invalid" ? "invalid" : "unavailable",
          server,
          message: error.message,
          cause: error
        })

  const records = Records.make({ vault: options.vault, now, fromVault, needsConnect })

  /** The user's record, decoded; undefined when there is none. */
  const load = (user: string, server: string): Effect.Effect<Secret.Secret | undefined, OAuthError> =>
    Effect.flatMap(records.read(user, server), (found) =>
      found.problem === undefined ? Effect.succeed(found.record) : Effect.fail(found.problem)
    )

  const toTokens = (tokens: OAuthTokens): Secret.Tokens => ({
    access_token: tokens.access_token,
    token_type: tokens.token_type,
    ...(tokens.refresh_token === undefined ? {} : { refresh_token: tokens.refresh_token }),
    ...(tokens.scope === undefined ? {} : { scope: tokens.scope }),
    ...(tokens.expires_in === undefined ? {} : { expiresAtMs: now() + tokens.expires_in * 1000 }),
    obtainedAtMs: now()
  })

  const clientFor = (
    config: OAuthServerConfig,
    meta: ServerMetadata,
    existing: Secret.Secret | undefined,
    scope: string | undefined
  ) =>
    ClientIdentity.clientFor({
      server: config,
      meta,
      existing,
      scope,
      redirectUri: options.redirectUri,
      clientMetadataUrl: metadataUrl,
      clientName: options.clientName ?? "plugboard",
      fetchFn
    })

  const scopeFor = (config: OAuthServerConfig, meta: ServerMetadata): string | undefined => {
    if (config.scopes !== undefined) return config.scopes.join(" ") || undefined
    const base = meta.challengedScope ?? meta.resourceMetadata?.scopes_supported?.join(" ")
    // Ask for a refresh token where the server grants them through this scope (OpenID servers).
    const offline = meta.authorizationServer.scopes_supported?.includes("offline_access") === true
    const scopes = [...(base?.split(" ") ?? []), ...(offline ? ["offline_access"] : [])].filter(
      (s) => s !== ""
    )
    return scopes.length === 0 ? undefined : [...new Set(scopes)].join(" ")
  }

  const start: Connections["start"] = (user, server) =>
    exclusive(
      user,
      server,
      Records.retrying(
        server,
        Effect.gen(function* () {
          yield* checkKey(user, server)
          const config = yield* configOf(server)
          const meta = yield* metadataOf(config)
          // A record that does not open is replaced (over its version), as a new connect does.
          const found = yield* records.read(user, server)
          const existing = found.problem === undefined ? found.record : undefined
          const scope = scopeFor(config, meta)
          const client = yield* clientFor(config, meta, existing, scope)
          const nonce = randomBytes(16).toString("base64url")
          const state = options.cipher.seal(JSON.stringify([user, server, nonce]), STATE_CONTEXT)
          const { authorizationUrl, codeVerifier } = yield* Effect.tryPromise({
            try: () =>
              startAuthorization(meta.issuer, {
                metadata: meta.authorizationServer,
                clientInformation: client,
                redirectUrl: options.redirectUri,
                state,
                resource: meta.resource,
                ...(scope === undefined ? {} : { scope })
              }),
            catch: (cause) =>
              new OAuthError({ reason: "invalid", server, message: describeError(cause), cause })
          })
          const kept =
            existing?.tokens === undefined || existing.issuer !== meta.issuer ? undefined : existing
          yield* records.writeIf(user, server, found.version, {
            v: 1,
            issuer: meta.issuer,
            resource: meta.resource,
            client,
            ...(kept?.tokens === undefined ? {} : { tokens: kept.tokens }),
            ...(kept?.renewing === undefined ? {} : { renewing: kept.renewing }),
            pending: { nonce, codeVerifier, redirectUri: options.redirectUri, expiresAtMs: now() + flowTtl }
          })
          return { url: authorizationUrl.href }
        })
      )
    )

  // The state names its user and server; it opens only with this host's key, unaltered.
  const readState = (state: string | undefined): readonly [string, string, string] | undefined => {
    const opened = typeof state === "string" ? options.cipher.open(state, STATE_CONTEXT) : undefined
    if (opened === undefined) return undefined
    try {
      const value: unknown = JSON.parse(opened)
      return Array.isArray(value) && value.length === 3 && value.every((v) => typeof v === "string")
        ? (value as unknown as readonly [string, string, string])
        : undefined
    } catch {
      return undefined
    }
  }

  const refusedFlow = (server: string, message: string, cause?: unknown) =>
    new OAuthError({ reason: "refused", server, message, cause })

  const complete: Connections["complete"] = (query) =>
    Effect.gen(function* () {
      const parsed = readState(query.state)
      if (parsed === undefined) {
        return yield* refusedFlow(
          "unknown",
          "this sign-in answer carries no state this host issued; start connecting again"
        )
      }
      const [user, server, nonce] = parsed
      return yield* exclusive(user, server, Records.retrying(server, finish(user, server, nonce, query)))
    })

  const finish = (
    user: string,
    server: string,
    nonce: string,
    query: Readonly<Record<string, string | undefined>>
  ): Effect.Effect<{ readonly user: string; readonly server: string }, OAuthError | Records.Conflict> =>
    Effect.gen(function* () {
      const config = yield* configOf(server)
      const found = yield* records.read(user, server)
      if (found.problem !== undefined) return yield* found.problem
      const record = found.record
      const pending = record?.pending
      if (record === undefined || pending === undefined || pending.nonce !== nonce) {
        return yield* refusedFlow(
          server,
          `this sign-in to '${server}' was already used or replaced by a newer one; start connecting again`
        )
      }
      const { pending: _used, ...rest } = record
      // Whatever happens next, this flow is spent (a conflict reads again: another host may
      // have spent it first, and then it is refused above).
      const spent = yield* records.writeIf(user, server, found.version, rest)
      if (now() > pending.expiresAtMs) {
        return yield* refusedFlow(
          server,
          `this sign-in to '${server}' took too long and expired; start connecting again`
        )
      }
      if (query.error !== undefined) {
        return yield* refusedFlow(
          server,
          `the authorization server of '${server}' answered ${quote(query.error)}${query.error_description === undefined ? "" : `: ${quote(query.error_description)}`}`
        )
      }
      const meta = yield* metadataOf(config)
      // RFC 9207: where the server says it sends `iss`, an answer from another issuer is a mix-up.
      if (
        meta.authorizationServer.authorization_response_iss_parameter_supported === true &&
        query.iss !== meta.issuer
      ) {
        return yield* refusedFlow(
          server,
          `the sign-in answer for '${server}' comes from another issuer (${quote(query.iss)})`
        )
      }
      if (typeof query.code !== "string" || query.code === "") {
        return yield* refusedFlow(server, `the sign-in answer for '${server}' carries no code`)
      }
      const code = query.code
      const tokens = yield* Effect.tryPromise({
        try: () =>
          exchangeAuthorization(meta.issuer, {
            metadata: meta.authorizationServer,
            clientInformation: record.client,
            authorizationCode: code,
            // The SDK v2 checks RFC 9207 again (it refuses a missing `iss` where it is supported).
            ...(typeof query.iss === "string" ? { iss: query.iss } : {}),
            codeVerifier: pending.codeVerifier,
            redirectUri: pending.redirectUri,
            resource: meta.resource,
            fetchFn
          }),
        catch: (cause) =>
          refusedFlow(
            server,
            `the authorization server of '${server}' refused the code (${describeError(cause)})${ClientIdentity.documentHint(record.client, oauthCode(cause))}`,
            cause
          )
      })
      const fresh = toTokens(tokens)
      // The user's consent is the newest word: its tokens go over whatever the record became
      // (keeping a flow started since with the same client).
      yield* records.update(user, server, { version: spent, record: rest }, (latest) =>
        latest !== undefined &&
        latest.client.client_id === rest.client.client_id &&
        latest.issuer === rest.issuer
          ? { ...latest, tokens: fresh }
          : { ...rest, tokens: fresh }
      )
      return { user, server }
    })

  const refresh = Renewal.make({
    records,
    metadataOf: (server) => Effect.flatMap(configOf(server), metadataOf),
    needsConnect,
    toTokens,
    fetchFn,
    now,
    skewMs: skew,
    claimMs: options.renewClaimMs ?? DEFAULT_CLAIM_MS,
    pollMs: RENEWAL_POLL_MS
  })

  // One refresh per user and server at a time: a rotated refresh token is good only once.
  const refreshOnce = (
    user: string,
    config: OAuthServerConfig,
    seen: string,
    force: boolean
  ): Effect.Effect<string, OAuthError> =>
    Effect.suspend(() => {
      const key = JSON.stringify([user, config.name])
      let running = refreshing.get(key)
      if (running === undefined) {
        running = Effect.runPromise(
          Effect.either(exclusive(user, config.name, refresh(user, config.name, seen, force)))
        ).finally(() => refreshing.delete(key))
        refreshing.set(key, running)
      }
      const settled = running
      return Effect.flatten(Effect.promise(() => settled))
    })

  const connected = (user: string, server: string) =>
    Effect.gen(function* () {
      const config = yield* configOf(server)
      const record = yield* load(user, server)
      const tokens = record?.tokens
      if (record === undefined || tokens === undefined) {
        return yield* needsConnect(server, "this account is not connected")
      }
      return { config, record: { ...record, tokens } }
    })

  const accessToken: Connections["accessToken"] = (user, server) =>
    Effect.flatMap(connected(user, server), ({ config, record }) => {
      const expiresAtMs = record.tokens.expiresAtMs
      return expiresAtMs === undefined || now() + skew < expiresAtMs
        ? Effect.succeed(record.tokens.access_token)
        : refreshOnce(user, config, record.tokens.access_token, false)
    })

  const renew: Connections["renew"] = (user, server) =>
    Effect.flatMap(connected(user, server), ({ config, record }) =>
      refreshOnce(user, config, record.tokens.access_token, true)
    )

  const disconnect: Connections["disconnect"] = (user, server) =>
    exclusive(
      user,
      server,
      Effect.gen(function* () {
        const config = yield* configOf(server)
        let revocation: Revocation = { outcome: "unsupported" }
        const revoked = new Set<string>()
        // Revoke what the record holds, then forget exactly that record; when another host wrote
        // it meanwhile (a renewal), read again and revoke its tokens too.
        const removed = yield* Records.retrying(
          server,
          Effect.gen(function* () {
            const found = yield* records.read(user, server)
            if (found.version === undefined) return false
            const record = found.record
            const token = record?.tokens?.refresh_token ?? record?.tokens?.access_token
            if (record !== undefined && token !== undefined && !revoked.has(token)) {
              revoked.add(token)
              const meta = yield* Effect.either(metadataOf(config))
              revocation = Either.isLeft(meta)
                ? { outcome: "failed", why: meta.left.message }
                : yield* Effect.promise(() =>
                    revoke(
                      meta.right.authorizationServer,
                      record.client,
                      token,
                      record.tokens?.refresh_token === undefined ? "access_token" : "refresh_token",
                      fetchFn
                    )
                  )
            }
            yield* records.removeIf(user, server, found.version)
            return true
          })
        )
        return { removed, revocation }
      })
    )

  const list: Connections["list"] = (user) =>
    Effect.gen(function* () {
      const summaries = yield* Effect.mapError(options.vault.list(user), fromVault("connections"))
      return yield* Effect.forEach(summaries, ({ server, updatedAtMs }) =>
        Effect.match(load(user, server), {
          onFailure: (e): ConnectionStatus => ({ server, connected: false, updatedAtMs, problem: e.message }),
          onSuccess: (record): ConnectionStatus => ({
            server,
            connected: record?.tokens !== undefined,
            updatedAtMs,
            ...(record?.tokens?.expiresAtMs === undefined ? {} : { expiresAtMs: record.tokens.expiresAtMs }),
            ...(record?.tokens?.scope === undefined ? {} : { scope: record.tokens.scope }),
            ...(record === undefined ? {} : { identity: record.client.source })
          })
        })
      )
    })

  return {
    start,
    flowUser: (query) => readState(query.state)?.[0],
    complete,
    accessToken,
    renew,
    headers: (user, server) =>
      Effect.map(accessToken(user, server), (token) => ({ authorization: `Bearer ${token}` })),
    disconnect,
    list
  }
}
