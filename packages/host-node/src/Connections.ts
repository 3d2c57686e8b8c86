/**
 * Users' OAuth connections to remote MCP servers, as the host serves them (docs/oauth.md,
 * docs/http-api.md#connections). The library (`@plugboard/mcp`'s `OAuthConnections`) runs the
 * flow; this module builds it from the host's config and answers its four routes:
 *
 * - `POST /connections/:server`: starts the caller's flow, answers `{server, url}`: the URL to
 *   open in the user's browser (a navigation carries no UCAN, so the flow starts here);
 * - `GET /oauth/callback` (public): the authorization server's redirect; the sealed `state` names
 *   the user and server, so no session is needed. Answers a small HTML page: connected, or why not;
 * - `GET /connections`: each OAuth server of the config and the caller's connection to it, never a token;
 * - `DELETE /connections/:server`: revokes where the authorization server supports it, and forgets;
 * - `GET /oauth/client-metadata.json` (public): the host's Client ID Metadata Document, its
 *   client_id where `PUBLIC_URL` is https (docs/oauth.md#client-identity); 404 otherwise;
 * - `GET /oauth/start?ticket=` (public): the link a user who has not connected is given (core's
 *   `Connect`: in `list_capabilities` and `load_capability`'s answer). The ticket is sealed with
 *   the host's key, names the user and server and expires after `START_TICKET_TTL_MS`; opening
 *   it starts that user's flow and redirects the browser to the authorization server.
 *
 * The connections are built on first use: their redirect URI is on the host's public URL, which
 * without `PUBLIC_URL` is the listen address, known once the server listens.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import {
  type Catalog,
  type Connect,
  type ConnectionStore,
  type RuntimeLogger,
  TokenVault
} from "@plugboard/core"
import {
  ClientMetadata,
  type McpDescription,
  type McpPool,
  type McpServerConfig,
  OAuthConnections,
  type OAuthError,
  oauthServers
} from "@plugboard/mcp"
import { Effect, Either } from "effect"
import { LISTED_TEXT, type Listed, makeFirstListing } from "./FirstListing.js"
import { HttpFailure, json, searchParams } from "./Http.js"
import { RequestUser } from "./Routes.js"

/** The path the authorization server sends the browser back to, under the host's public URL. */
export const CALLBACK_PATH = "/oauth/callback"

/** The path of the link that starts a user's flow from the browser (`GET /oauth/start?ticket=`). */
export const START_PATH = "/oauth/start"

/** How long a start link is good for. */
export const START_TICKET_TTL_MS = 15 * 60_000

const TICKET_CONTEXT = "plugboard/oauth-start"

/** What `makeHostConnections` builds the connections from. */
export interface HostConnectionsInput {
  readonly servers: ReadonlyArray<McpServerConfig>
  readonly cipher: TokenVault.Cipher
  readonly store: ConnectionStore.ConnectionStoreService
  /** The host's public base URL (`PUBLIC_URL`, else the listen address), read on first use. */
  readonly publicUrl: () => string
  /** Where the preregistered clients' secrets are read (`clientSecretEnv`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The MCP pool, to cache a server's tool list with the first connected user's token. */
  readonly pool?: McpPool | undefined
  readonly cacheDir: string
  readonly logger: RuntimeLogger
  /** The plugin each OAuth server's tools are in, by server name (the catalog's MCP entries). */
  readonly plugins: ReadonlyMap<string, string>
  /** The OAuth servers whose plugin is unavailable since boot: no tool list was cached. */
  readonly unlisted: ReadonlySet<string>
  /**
   * Puts a server's plugin in the catalog once its list was read at a first connect
   * (`FirstListing.ts`); without it, the list is cached for the next boot only.
   */
  readonly offer?: ((server: McpServerConfig, description: McpDescription) => Promise<boolean>) | undefined
  readonly now?: (() => number) | undefined
}

/** The host's OAuth connections, and the configured servers they are for. */
export interface HostConnections {
  readonly get: () => OAuthConnections.Connections
  /** Every MCP server of the config, by name (to tell an unknown server from a non-OAuth one). */
  readonly servers: ReadonlyMap<string, McpServerConfig>
  /** What the user is told to do when a connection is missing (the route that starts the flow). */
  readonly connectHint: (server: string) => string
  /** The plugin of each OAuth server, by server name. */
  readonly plugins: ReadonlyMap<string, string>
  /**
   * After `user` connected `server`: when its plugin is unavailable since boot (no list cached),
   * reads its tool list as that user, caches it and offers the plugin (`FirstListing.ts`). Never rejects.
   */
  readonly cacheList: (server: McpServerConfig, user: string) => Promise<Listed>
  /**
   * The host's Client ID Metadata Document, or undefined where its public URL is not https (then
   * every authorization server is asked to register a client instead).
   */
  readonly clientMetadata: () => ClientMetadata.ClientMetadataDocument | undefined
  /** The link that starts `user`'s flow for `server` in a browser (`GET /oauth/start`). */
  readonly startLink: (user: string, server: string) => string
  /** Opens a start link's ticket: the user and server, or why not. */
  readonly openTicket: (
    ticket: string
  ) => Either.Either<{ readonly user: string; readonly server: string }, string>
  /**
   * The plugins `user` must connect an account for first (core's `Connect`): each OAuth server's
   * plugin the user has no usable connection to. Never rejects: a store that cannot be read
   * gives none (the tool call then says what failed).
   */
  readonly pendingFor: (user: string) => Promise<Connect.Pending>
}

/**
 * The `[boot-error]` problems of an OAuth config: a server with `auth: "oauth"` and no
 * `CONNECTIONS_KEY`, or a client secret variable that is unset.
 */
export const oauthBootProblems = (
  servers: ReadonlyArray<McpServerConfig>,
  cipher: TokenVault.Cipher | undefined,
  env: Readonly<Record<string, string | undefined>>
): ReadonlyArray<string> => {
  const oauth = servers.filter((s) => s.oauth !== undefined)
  if (oauth.length === 0) return []
  if (cipher === undefined)
    return [
      `[boot-error] MCP server${oauth.length > 1 ? "s" : ""} ${oauth.map((s) => `'${s.name}'`).join(", ")} sign${oauth.length > 1 ? "" : "s"} each user in with OAuth (auth: "oauth"), and CONNECTIONS_KEY is unset: set it to 32 random bytes (\`openssl rand -base64 32\`) to keep users' connections (docs/oauth.md).`
    ]
  return oauthServers(servers, env).errors.map((e) => `[boot-error] ${e}`)
}

/**
 * The plugin of each `auth: "oauth"` server, by server name (an unavailable one included), and
 * the servers whose plugin is unavailable since boot (no tool list cached yet).
 */
export const oauthPlugins = (
  catalog: Catalog.Catalog,
  servers: ReadonlyArray<McpServerConfig>
): Pick<HostConnectionsInput, "plugins" | "unlisted"> => {
  const oauth = new Set(servers.filter((s) => s.oauth !== undefined).map((s) => s.name))
  const plugins = new Map<string, string>()
  const unlisted = new Set<string>()
  for (const entry of catalog.entries) {
    const source = entry.source
    if (source?.kind !== "mcp" || !oauth.has(source.server)) continue
    plugins.set(source.server, entry.name)
    if (entry.unavailable !== undefined) unlisted.add(source.server)
  }
  return { plugins, unlisted }
}

/** The host's connections over the store; undefined when no server of the config uses OAuth. */
export const makeHostConnections = (input: HostConnectionsInput): HostConnections | undefined => {
  const configured = oauthServers(input.servers, input.env).servers
  if (configured.length === 0) return undefined
  const connectHint = (server: string) =>
    `connect your account to '${server}' (POST /connections/${server}, or the console's Connect button) and try again`
  let built: OAuthConnections.Connections | undefined
  const now = input.now ?? Date.now
  const listing = makeFirstListing(input)
  const configOf = (server: string) => input.servers.find((s) => s.name === server)
  const clientMetadataUrl = () => ClientMetadata.urlFor(input.publicUrl())
  const get = () => {
    built ??= OAuthConnections.make({
      vault: TokenVault.make(input.store, input.cipher),
      cipher: input.cipher,
      redirectUri: `${input.publicUrl()}${CALLBACK_PATH}`,
      clientMetadataUrl: clientMetadataUrl(),
      servers: configured,
      connectHint
    })
    return built
  }
  const clientMetadata = () => {
    const clientId = clientMetadataUrl()
    return clientId === undefined
      ? undefined
      : ClientMetadata.document({ clientId, redirectUri: `${input.publicUrl()}${CALLBACK_PATH}` })
  }
  const startLink = (user: string, server: string) =>
    `${input.publicUrl()}${START_PATH}?ticket=${encodeURIComponent(
      input.cipher.seal(JSON.stringify([user, server, now() + START_TICKET_TTL_MS]), TICKET_CONTEXT)
    )}`
  return {
    plugins: input.plugins,
    clientMetadata,
    startLink,
    openTicket: (ticket) => {
      const opened = input.cipher.open(ticket, TICKET_CONTEXT)
      if (opened === undefined)
        return Either.left("this link was not made by this host (or its key changed).")
      const [user, server, expires] = JSON.parse(opened) as [string, string, number]
      if (now() > expires) return Either.left("this link has expired: ask for a new one.")
      return Either.right({ user, server })
    },
    pendingFor: async (user) => {
      if (input.plugins.size === 0) return new Map()
      const listed = await Effect.runPromise(Effect.either(get().list(user)))
      if (Either.isLeft(listed)) {
        input.logger.warn("the user's OAuth connections could not be read", { error: listed.left.message })
        return new Map()
      }
      const connected = new Set(listed.right.filter((c) => c.connected).map((c) => c.server))
      const pending = new Map<string, Connect.NeedsConnect>()
      for (const [server, plugin] of input.plugins) {
        const config = connected.has(server) && listing.waits(server) ? configOf(server) : undefined
        // Connected elsewhere (another host, a list this host never read): read it now, for the next turn.
        if (config !== undefined) void listing.list(config, user, get())
        if (connected.has(server)) continue
        // A plugin unavailable for want of its list is listed needs-connect too: a connect reads it.
        const unlisted = listing.waits(server)
        pending.set(plugin, {
          reason: `MCP server '${server}' signs each user in with OAuth, and this user has not connected an account to it.${unlisted ? " Its tools are listed once a user connects." : ""}`,
          url: startLink(user, server),
          ...(unlisted ? { unlisted: true } : {})
        })
      }
      return pending
    },
    servers: new Map(input.servers.map((s) => [s.name, s])),
    connectHint,
    cacheList: async (server, user) => (built === undefined ? undefined : listing.list(server, user, built)),
    get
  }
}

/**
 * The `oauth` option of `mountMcpServers`: the catalog is built before the ports, so calls are
 * forwarded to the connections once they exist (a call before that is refused, nothing sent).
 */
export const forwarder = (
  current: () => HostConnections | undefined
): Pick<OAuthConnections.Connections, "headers" | "renew"> => ({
  headers: (user, server) => Effect.suspend(() => connectionsOrFail(current, server).headers(user, server)),
  renew: (user, server) => Effect.suspend(() => connectionsOrFail(current, server).renew(user, server))
})

const connectionsOrFail = (current: () => HostConnections | undefined, server: string) => {
  const host = current()
  if (host === undefined)
    throw new TypeError(`MCP server '${server}' was called before the host's OAuth connections were built.`)
  return host.get()
}

const STATUS: Record<OAuthError["reason"], number> = {
  "needs-connect": 409,
  refused: 400,
  invalid: 502,
  unreachable: 502,
  unavailable: 503
}

const oauthFailure = (error: OAuthError) =>
  new HttpFailure({ status: STATUS[error.reason], message: error.message, error: `oauth-${error.reason}` })

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The callback's page: a title and one sentence, no script, never cached. */
const page = (status: number, title: string, text: string) =>
  HttpServerResponse.text(
    `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`,
    {
      status,
      contentType: "text/html; charset=utf-8",
      headers: { "cache-control": "no-store", "referrer-policy": "no-referrer" }
    }
  )

/** The four routes' handlers (see the module doc); every one 404s when no server uses OAuth. */
export const connectionRoutes = (
  host: HostConnections | undefined,
  logger: RuntimeLogger,
  /**
   * The user's connection to `plugin`'s server was made: the turn service resumes their runs that
   * wait for it (`TurnWaits.connected`, docs/waiting.md#connect-waits), answering how many.
   */
  connected?: ((did: string, plugin: string) => Effect.Effect<number>) | undefined,
  /**
   * Makes a user's state available on this host (a Matrix restore), as the pipeline does for a
   * private route: the public routes name their user in a ticket or a state, and write to that
   * user's store, which must be the user's restored one, not a fresh database.
   */
  prepareUser?: ((did: string) => Promise<void>) | undefined
) => {
  const prepared = (did: string) =>
    prepareUser === undefined ? Effect.void : Effect.promise(() => prepareUser(did))
  const noOAuth = new HttpFailure({
    status: 404,
    message: "No MCP server of this host signs its users in with OAuth.",
    error: "no-oauth-servers"
  })
  /** The `:server` parameter: a configured server with `auth: "oauth"`, else 404 / 400. */
  const oauthServer = Effect.gen(function* () {
    if (host === undefined) return yield* noOAuth
    const name = (yield* HttpRouter.params).server ?? ""
    const server = host.servers.get(name)
    if (server === undefined)
      return yield* new HttpFailure({
        status: 404,
        message: `No MCP server '${name.slice(0, 100)}' on this host.`,
        error: "unknown-server"
      })
    if (server.oauth === undefined)
      return yield* new HttpFailure({
        status: 400,
        message: `MCP server '${server.name}' does not sign its users in with OAuth (no auth: "oauth"): there is nothing to connect.`,
        error: "not-oauth"
      })
    return { server, connections: host.get() }
  })

  const start = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const { server, connections } = yield* oauthServer
    const { url } = yield* Effect.mapError(connections.start(did, server.name), oauthFailure)
    return json({ server: server.name, url }, 200, { "cache-control": "no-store" })
  })

  const startFromLink = Effect.gen(function* () {
    if (host === undefined) return yield* noOAuth
    const ticket = (yield* searchParams).get("ticket") ?? ""
    const opened = host.openTicket(ticket)
    if (Either.isLeft(opened))
      return page(400, "Not connected", `This link cannot start a connection: ${opened.left}`)
    const { user, server } = opened.right
    yield* prepared(user)
    const started = yield* Effect.either(host.get().start(user, server))
    if (Either.isLeft(started)) return page(400, "Not connected", started.left.message)
    return HttpServerResponse.empty({
      status: 302,
      headers: { location: started.right.url, "cache-control": "no-store", "referrer-policy": "no-referrer" }
    })
  })

  const callback = Effect.gen(function* () {
    if (host === undefined) return yield* noOAuth
    const query = Object.fromEntries(yield* searchParams)
    const flowUser = host.get().flowUser(query)
    if (flowUser !== undefined) yield* prepared(flowUser)
    const done = yield* Effect.either(host.get().complete(query))
    if (Either.isLeft(done)) {
      logger.info("an OAuth connection was not made", { reason: done.left.reason, server: done.left.server })
      return page(400, "Not connected", done.left.message)
    }
    const { user, server } = done.right
    logger.info("an OAuth connection was made", { server })
    // The connected user's listing is what discovery reads from the next mount on
    // (docs/oauth.md#the-tool-list); a failure leaves the connection made.
    const config = host.servers.get(server)
    const listed =
      config === undefined ? undefined : yield* Effect.promise(() => host.cacheList(config, user))
    const plugin = host.plugins.get(server)
    const resumed = plugin === undefined || connected === undefined ? 0 : yield* connected(user, plugin)
    return page(
      200,
      "Connected",
      `Your account is connected to '${server}'.${LISTED_TEXT[listed ?? "none"]}${resumed > 0 ? " The conversation that waited for it goes on." : ""} You can close this page.`
    )
  })

  const list = Effect.gen(function* () {
    const { did } = yield* RequestUser
    if (host === undefined) return json({ connections: [] })
    const stored = yield* Effect.mapError(host.get().list(did), oauthFailure)
    const byServer = new Map(stored.map((c) => [c.server, c]))
    const connections = [...host.servers.values()]
      .filter((s) => s.oauth !== undefined)
      .map((s) => {
        const c = byServer.get(s.name)
        const plugin = host.plugins.get(s.name)
        return {
          server: s.name,
          ...(plugin === undefined ? {} : { plugin }),
          connected: c?.connected ?? false,
          ...(c === undefined ? {} : { updatedAt: new Date(c.updatedAtMs).toISOString() }),
          ...(c?.expiresAtMs === undefined ? {} : { expiresAt: new Date(c.expiresAtMs).toISOString() }),
          ...(c?.scope === undefined ? {} : { scope: c.scope }),
          ...(c?.problem === undefined ? {} : { problem: c.problem }),
          // Which client identity the connection uses (docs/oauth.md#client-identity).
          ...(c?.identity === undefined ? {} : { identity: c.identity })
        }
      })
    return json({ connections }, 200, { "cache-control": "no-store" })
  })

  const remove = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const { server, connections } = yield* oauthServer
    const done = yield* Effect.mapError(connections.disconnect(did, server.name), oauthFailure)
    return json({ server: server.name, removed: done.removed, revocation: done.revocation })
  })

  // Public and cacheable: authorization servers fetch it (and cache it) to learn this client.
  const clientMetadata = Effect.gen(function* () {
    if (host === undefined) return yield* noOAuth
    const document = host.clientMetadata()
    if (document === undefined)
      return yield* new HttpFailure({
        status: 404,
        message:
          "This host publishes no client metadata document: its PUBLIC_URL is not https, so authorization servers are asked to register a client instead.",
        error: "no-client-metadata"
      })
    return json(document, 200, { "cache-control": "public, max-age=3600" })
  })

  return { start, startFromLink, callback, list, remove, clientMetadata }
}
