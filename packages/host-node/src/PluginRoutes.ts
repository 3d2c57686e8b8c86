/**
 * HTTP routes contributed by plugins (docs/spec/wire.md#plugin-routes): mounted on the same server,
 * behind the same pipeline unless the plugin marks a route `public`. Two routes answering the same
 * method and path — two plugins, or a plugin and the server itself — is a boot error naming both.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Catalog, PluginRoute, PluginRouteRequest } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { Effect, Option } from "effect"
import { HttpFailure, readJson } from "./Http.js"

/** A route and who declared it (`server` for the built-in ones). */
export interface OwnedRoute {
  readonly owner: string
  readonly method: PluginRoute["method"]
  readonly path: `/${string}`
  readonly public: boolean
  readonly route?: PluginRoute
}

/**
 * Who may call a route: anyone (`public`), an authenticated user through the pipeline (auth →
 * limit: `private`), or one who also has credits (`turn`: only a turn spends them, so a user at
 * a zero balance still lists, reads and deletes their own sessions).
 */
export type RouteAccess = "public" | "private" | "turn"

/**
 * The server's own routes, by handler name: the one table the server routes by (`Server.ts`
 * gives each name its handler) and plugin routes are checked against for collisions.
 */
export const BUILTIN_ROUTES = {
  root: ["GET", "/", "public"],
  health: ["GET", "/health", "public"],
  // The boot report (docs/http-api.md): behind the pipeline unless HEALTH_PLUGINS_PUBLIC is true.
  healthPlugins: ["GET", "/health/plugins", "private"],
  models: ["GET", "/models", "public"],
  createSession: ["POST", "/sessions", "private"],
  listSessions: ["GET", "/sessions", "private"],
  deleteSession: ["DELETE", "/sessions/:id", "private"],
  abortTurn: ["POST", "/messages/abort", "private"],
  sendMessage: ["POST", "/messages/:sessionId", "turn"],
  history: ["GET", "/messages/:sessionId", "private"],
  historyPage: ["GET", "/sessions/:id/messages", "private"],
  sessionRun: ["GET", "/sessions/:id/run", "private"],
  rejoinRun: ["GET", "/runs/:runId", "private"],
  // A waiting run's answer starts its resumed turn (docs/waiting.md).
  resumeRun: ["POST", "/runs/:runId/resume", "turn"],
  runWaits: ["GET", "/runs/:runId/waits", "private"],
  // Users' OAuth connections to MCP servers (Connections.ts, docs/oauth.md): the callback is
  // the authorization server's redirect, whose sealed state names the user.
  startConnection: ["POST", "/connections/:server", "private"],
  listConnections: ["GET", "/connections", "private"],
  deleteConnection: ["DELETE", "/connections/:server", "private"],
  oauthCallback: ["GET", "/oauth/callback", "public"],
  // The link a user who has not connected is given: its sealed ticket names the user.
  oauthStart: ["GET", "/oauth/start", "public"],
  // The host's Client ID Metadata Document, fetched by authorization servers (docs/oauth.md).
  oauthClientMetadata: ["GET", "/oauth/client-metadata.json", "public"],
  // The dev console (docs/console.md): the page is public, its data behind the pipeline.
  console: ["GET", "/console", "public"],
  consoleCatalog: ["GET", "/console/api/catalog", "private"],
  consoleBudget: ["GET", "/console/api/budget", "private"],
  consoleSearch: ["GET", "/console/api/search", "private"],
  consoleOffer: ["GET", "/console/api/offer", "private"],
  consoleThread: ["GET", "/console/api/sessions/:id", "private"]
} as const satisfies Record<string, readonly [PluginRoute["method"], `/${string}`, RouteAccess]>

/** The name of one of the server's own routes. */
export type BuiltinRoute = keyof typeof BUILTIN_ROUTES

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])
const PATH =
  /^\/(?:[A-Za-z0-9._~-]+|:[A-Za-z_][A-Za-z0-9_]*)(?:\/(?:[A-Za-z0-9._~-]+|:[A-Za-z_][A-Za-z0-9_]*))*$|^\/$/

/** The shape two paths must share to collide: parameters are wildcards. */
const shapeOf = (path: string): string => path.replace(/\/:[^/]+/g, "/:")

/**
 * Every plugin route of the catalog, checked: a valid method and path, and no two routes (or a
 * route and a built-in) answering the same method and path shape. Returns the routes, or every
 * problem as boot-error messages.
 */
export const collectRoutes = (
  catalog: Catalog.Catalog
): { readonly routes: ReadonlyArray<OwnedRoute>; readonly errors: ReadonlyArray<string> } => {
  const errors: Array<string> = []
  const routes: Array<OwnedRoute> = []
  const taken = new Map<string, string>()
  for (const [method, path] of Object.values(BUILTIN_ROUTES))
    taken.set(`${method} ${shapeOf(path)}`, "server")
  for (const entry of catalog.entries) {
    const declared = entry.plugin.routes
    if (declared === undefined) continue
    if (!Array.isArray(declared)) {
      errors.push(`Plugin '${entry.name}' field 'routes' must be an array.`)
      continue
    }
    for (const route of declared as ReadonlyArray<PluginRoute>) {
      const method = String(route?.method ?? "").toUpperCase()
      const path = String(route?.path ?? "")
      if (!METHODS.has(method)) {
        errors.push(
          `Plugin '${entry.name}' route ${JSON.stringify(path)} has an unsupported method ${JSON.stringify(route?.method)}.`
        )
        continue
      }
      if (!PATH.test(path)) {
        errors.push(
          `Plugin '${entry.name}' route ${method} ${JSON.stringify(path)} is not a valid path (segments of letters, digits, . _ ~ - or :param).`
        )
        continue
      }
      if (typeof route.handler !== "function") {
        errors.push(`Plugin '${entry.name}' route ${method} ${path} has no handler.`)
        continue
      }
      const key = `${method} ${shapeOf(path)}`
      const owner = taken.get(key)
      if (owner !== undefined) {
        errors.push(
          owner === "server"
            ? `Plugin '${entry.name}' route ${method} ${path} collides with the server's own route.`
            : `Plugin '${entry.name}' route ${method} ${path} collides with the same route of plugin '${owner}'.`
        )
        continue
      }
      taken.set(key, entry.name)
      routes.push({
        owner: entry.name,
        method: method as PluginRoute["method"],
        path: path as `/${string}`,
        public: route.public === true,
        route
      })
    }
  }
  return { routes, errors }
}

const plainHeaders = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>) => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers)) if (typeof v === "string") out[k] = v
  return out
}

/**
 * The values of `pattern`'s `:param` segments in `pathname` (the router matched them, so the
 * segment counts agree), URL-decoded; a malformed escape is passed on as it came.
 */
export const routeParams = (pattern: string, pathname: string): Record<string, string> => {
  const params: Record<string, string> = {}
  const names = pattern.split("/")
  const values = pathname.split("/")
  names.forEach((name, i) => {
    if (!name.startsWith(":")) return
    const raw = values[i] ?? ""
    let value = raw
    try {
      value = decodeURIComponent(raw)
    } catch {}
    Object.defineProperty(params, name.slice(1), {
      value,
      enumerable: true,
      writable: true,
      configurable: true
    })
  })
  return params
}

/** The handler of one plugin route: builds the plugin's request, runs it, answers JSON. */
export const pluginHandler = (
  owned: OwnedRoute,
  options: {
    readonly maxBodyBytes: number
    readonly shared: Readonly<Record<string, unknown>>
    readonly userDid: Option.Option<string>
    readonly logger: { readonly error: (message: string, fields?: Record<string, unknown>) => void }
  }
) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const url = new URL(request.url, "http://localhost")
    const body =
      owned.method === "GET" || owned.method === "DELETE" ? undefined : yield* readJson(options.maxBodyBytes)
    const input: PluginRouteRequest = {
      method: owned.method,
      path: url.pathname,
      params: routeParams(owned.path, url.pathname),
      query: Object.fromEntries(url.searchParams),
      headers: plainHeaders(request.headers),
      body,
      userDid: Option.getOrUndefined(options.userDid),
      shared: options.shared
    }
    const answer = yield* Effect.tryPromise({
      try: async () => owned.route!.handler(input),
      catch: (error) => {
        options.logger.error("plugin route failed", {
          plugin: owned.owner,
          route: `${owned.method} ${owned.path}`,
          error: describe(error)
        })
        return new HttpFailure({
          status: 500,
          message: `Plugin '${owned.owner}' failed to answer.`,
          error: "plugin-error"
        })
      }
    })
    const status = answer?.status ?? 200
    if (!Number.isInteger(status) || status < 200 || status > 599) {
      return yield* Effect.fail(
        new HttpFailure({
          status: 500,
          message: `Plugin '${owned.owner}' answered an invalid status.`,
          error: "plugin-error"
        })
      )
    }
    // A handler that answers no body still answers JSON (`{}`): clients such as the QiForge SDK
    // parse every success as JSON and fail on an empty one. 204 and 304 carry no body by law.
    if (answer?.body === undefined && (status === 204 || status === 304))
      return HttpServerResponse.empty({ status, headers: answer?.headers ?? {} })
    return yield* HttpServerResponse.json(answer?.body ?? {}, {
      status,
      headers: answer?.headers ?? {}
    }).pipe(
      Effect.mapError(
        () =>
          new HttpFailure({
            status: 500,
            message: `Plugin '${owned.owner}' answered a body that is not JSON.`,
            error: "plugin-error"
          })
      )
    )
  })
