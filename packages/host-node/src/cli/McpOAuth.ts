/**
 * OAuth connections for `plugboard mcp`'s single local user (docs/oauth.md#in-the-gateway): the
 * same `OAuthConnections` as `plugboard serve` (Connections.ts), its store under the gateway's
 * data dir (`<data>/connections.sqlite`) sealed with `CONNECTIONS_KEY`. The browser comes back to
 * a loopback address: the `--http` server's own, or over stdio a small listener on 127.0.0.1
 * started on demand (the first meta-tool call or OAuth tool call), on `--callback-port` or any
 * free port. It answers only `GET /oauth/start?ticket=` and `GET /oauth/callback`.
 *
 * A link the user must open is printed to stderr (stdout is the MCP channel over stdio) and, with
 * `--open`, opened in the browser with `xdg-open` (macOS: `open`) where there is one.
 */
import { spawn } from "node:child_process"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { Catalog, Connect, RuntimeLogger } from "@plugboard/core"
import {
  ConnectionsCipher,
  type McpDescription,
  type McpPool,
  type McpServerConfig,
  type OAuthConnections
} from "@plugboard/mcp"
import { connectionsFile, makeConnectionStore } from "@plugboard/sqlite"
import { Cause, Effect, Either, Exit, Scope } from "effect"
import { OracleBootError } from "../App.js"
import {
  CALLBACK_PATH,
  type HostConnections,
  makeHostConnections,
  oauthBootProblems,
  oauthPlugins,
  START_PATH
} from "../Connections.js"
import { envValue } from "../EnvValue.js"
import type { Listed } from "../FirstListing.js"

/** What `gatewayOAuth` needs from `plugboard mcp`. */
export interface GatewayOAuthInput {
  readonly servers: ReadonlyArray<McpServerConfig>
  readonly catalog: Catalog.Catalog
  readonly env: Readonly<Record<string, string | undefined>>
  readonly dataDir: string
  readonly cacheDir: string
  readonly pool: McpPool | undefined
  readonly logger: RuntimeLogger
  readonly scope: Scope.Scope
  /** The gateway's user. */
  readonly did: string
  /** The base URL of the `--http` server (known once it listens); undefined over stdio. */
  readonly httpBase: (() => string) | undefined
  /** The port of the stdio callback listener (`--callback-port`, default any free one). */
  readonly callbackPort: number
  /** Whether to open each link in the browser (`--open`). */
  readonly open: boolean
  readonly err: (text: string) => void
  /**
   * Serves the catalog built again with a server's tool list read at its first connect
   * (docs/oauth.md#the-tool-list): true when its plugin joined it. Without it, the list is
   * cached for the gateway's next start only.
   */
  readonly offer?: ((server: McpServerConfig, description: McpDescription) => Promise<boolean>) | undefined
}

/** The gateway's OAuth: the pending plugins, the calls' tokens, and the two browser routes. */
export interface GatewayOAuth {
  readonly pending: () => Promise<Connect.Pending>
  readonly forwarded: Pick<OAuthConnections.Connections, "headers" | "renew">
  /** Answers a request for `/oauth/start` or `/oauth/callback`; false for any other path. */
  readonly handle: (request: IncomingMessage, response: ServerResponse) => boolean
  readonly close: () => Promise<void>
}

/** `<PUBLIC_URL>`-less redirect for a local user: where a stdio gateway's listener is. */
const LOOPBACK = "127.0.0.1"

/** What the callback's page says of a first listing (`FirstListing.ts`). */
const LISTED_TEXT: Record<NonNullable<Listed> | "none", string> = {
  offered: " Its tools are offered from now on (your MCP client is told its tool list changed).",
  refused: " Its tools could not be offered: the gateway's log (stderr) says why.",
  cached: " Its tools are offered once the gateway restarts (your MCP client starts it again).",
  none: ""
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const page = (response: ServerResponse, status: number, title: string, text: string) => {
  response.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer"
  })
  response.end(
    `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`
  )
}

/** Opens `url` in the user's browser, where the platform has an opener; never throws. */
const openInBrowser = (url: string, err: (text: string) => void) => {
  const opener = process.platform === "darwin" ? "open" : "xdg-open"
  try {
    const child = spawn(opener, [url], { stdio: "ignore", detached: true })
    child.once("error", () =>
      err(`plugboard mcp: ${opener} is not available; open the link above yourself.\n`)
    )
    child.unref()
  } catch {
    err(`plugboard mcp: ${opener} could not be started; open the link above yourself.\n`)
  }
}

/**
 * The gateway's OAuth connections; undefined when no server of the MCP config has
 * `auth: "oauth"`. Throws `OracleBootError` without a usable `CONNECTIONS_KEY`.
 */
export const gatewayOAuth = async (input: GatewayOAuthInput): Promise<GatewayOAuth | undefined> => {
  if (!input.servers.some((s) => s.oauth !== undefined)) return undefined
  const keyText = envValue(input.env.CONNECTIONS_KEY)
  // The previous keys of a rotation open older records (docs/oauth.md#at-rest).
  const cipher =
    keyText === undefined
      ? undefined
      : ConnectionsCipher.fromKeyTexts(keyText, envValue(input.env.CONNECTIONS_KEY_PREVIOUS))
  if (cipher !== undefined && Either.isLeft(cipher))
    throw new OracleBootError(cipher.left.map((m) => `[config-error] ${m}`))
  const problems = oauthBootProblems(input.servers, cipher?.right, input.env)
  if (problems.length > 0 || cipher === undefined) throw new OracleBootError(problems)
  const opened = await Effect.runPromiseExit(
    Scope.extend(makeConnectionStore({ filename: connectionsFile(input.dataDir) }), input.scope)
  )
  if (Exit.isFailure(opened))
    throw new OracleBootError([
      `[boot-error] The OAuth connections cannot be opened: ${Cause.squash(opened.cause)}`
    ])

  const listed = oauthPlugins(input.catalog, input.servers)
  let listener: Promise<{ readonly server: Server; readonly base: string }> | undefined
  let base: string | undefined
  const host: HostConnections = makeHostConnections({
    servers: input.servers,
    cipher: cipher.right,
    store: opened.value,
    publicUrl: () => {
      if (input.httpBase !== undefined) return input.httpBase()
      if (base === undefined) throw new TypeError("The gateway's OAuth callback listener is not started yet.")
      return base
    },
    env: input.env,
    pool: input.pool,
    cacheDir: input.cacheDir,
    logger: input.logger,
    ...listed,
    offer: input.offer
  })!

  const handle = (request: IncomingMessage, response: ServerResponse): boolean => {
    const url = new URL(request.url ?? "/", "http://gateway")
    if (request.method !== "GET" || (url.pathname !== START_PATH && url.pathname !== CALLBACK_PATH))
      return false
    void (async () => {
      if (url.pathname === START_PATH) {
        const ticket = host.openTicket(url.searchParams.get("ticket") ?? "")
        if (Either.isLeft(ticket))
          return page(response, 400, "Not connected", `This link cannot start a connection: ${ticket.left}`)
        const started = await Effect.runPromise(
          Effect.either(host.get().start(ticket.right.user, ticket.right.server))
        )
        if (Either.isLeft(started)) return page(response, 400, "Not connected", started.left.message)
        response.writeHead(302, {
          location: started.right.url,
          "cache-control": "no-store",
          "referrer-policy": "no-referrer"
        })
        return response.end()
      }
      const done = await Effect.runPromise(
        Effect.either(host.get().complete(Object.fromEntries(url.searchParams)))
      )
      if (Either.isLeft(done)) {
        input.err(`plugboard mcp: not connected: ${done.left.message}\n`)
        return page(response, 400, "Not connected", done.left.message)
      }
      const config = host.servers.get(done.right.server)
      const listing = config === undefined ? undefined : await host.cacheList(config, done.right.user)
      input.err(`plugboard mcp: your account is connected to '${done.right.server}'.\n`)
      return page(
        response,
        200,
        "Connected",
        `Your account is connected to '${done.right.server}'.${LISTED_TEXT[listing ?? "none"]} You can close this page.`
      )
    })().catch((error: unknown) => {
      if (!response.headersSent) page(response, 500, "Not connected", String(error))
    })
    return true
  }

  /** Over stdio: the callback listener, started on first need. */
  const ready = async (): Promise<void> => {
    if (input.httpBase !== undefined) return
    listener ??= new Promise((resolve, reject) => {
      const server = createServer((request, response) => {
        if (!handle(request, response)) {
          response.writeHead(404, { "content-type": "text/plain" })
          response.end("Not found: this listener answers the OAuth links of plugboard mcp only.\n")
        }
      })
      server.once("error", reject)
      server.listen(input.callbackPort, LOOPBACK, () => {
        server.off("error", reject)
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : input.callbackPort
        resolve({ server, base: `http://${LOOPBACK}:${port}` })
      })
    })
    const started = await listener.catch((error: unknown) => {
      listener = undefined
      throw new Error(
        `The OAuth callback listener cannot listen on ${LOOPBACK}:${input.callbackPort} (${(error as NodeJS.ErrnoException).code ?? "error"}); change --callback-port.`
      )
    })
    base = started.base
  }

  // Each plugin's link is printed (and opened) once while it stays pending.
  const announced = new Set<string>()
  const pending = async (): Promise<Connect.Pending> => {
    try {
      await ready()
    } catch (error) {
      input.logger.warn("the gateway's OAuth links cannot be offered", { error: String(error) })
      return new Map()
    }
    const found = await host.pendingFor(input.did)
    for (const plugin of announced) if (!found.has(plugin)) announced.delete(plugin)
    for (const [plugin, needs] of found) {
      if (announced.has(plugin)) continue
      announced.add(plugin)
      input.err(`plugboard mcp: plugin '${plugin}' needs you to connect your account; open ${needs.url}\n`)
      if (input.open) openInBrowser(needs.url, input.err)
    }
    return found
  }

  // A server with no tool list cached yet waits for its first connect: its link is printed (and
  // opened) at start, as the meta-tools give it (needs-connect, `Connect.NeedsConnect.unlisted`).
  if (listed.unlisted.size > 0) await pending()

  return {
    pending,
    forwarded: {
      headers: (user, server) =>
        Effect.flatMap(
          Effect.promise(() => ready().catch(() => undefined)),
          () => host.get().headers(user, server)
        ),
      renew: (user, server) =>
        Effect.flatMap(
          Effect.promise(() => ready().catch(() => undefined)),
          () => host.get().renew(user, server)
        )
    },
    handle,
    close: async () => {
      const open = await listener?.catch(() => undefined)
      if (open === undefined) return
      open.server.closeAllConnections()
      await new Promise<void>((done) => open.server.close(() => done()))
    }
  }
}
