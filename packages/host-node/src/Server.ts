/**
 * The HTTP server: `@effect/platform` routers on a Node `http.Server` (through
 * `NodeHttpServer.makeHandler`), so `listen`/`close` stay in the host's hands for graceful
 * shutdown. Every request: public routes answer directly; a request no route matches (an
 * unknown path, or a known path with a method it does not take) is a JSON 404 at once, with or
 * without a token: the wire contract answers unknown routes 404 and has no 405, and no auth or
 * rate-limit work is spent on it. A protected route goes through the pipeline (auth → credits →
 * limit) and then to its handler. No failure escapes as anything but the JSON error body; a 500
 * means a bug here or in a plugin, never a client's input.
 */
import type { Server } from "node:http"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import type {
  Auth,
  Catalog,
  CreditLedger,
  RateLimiter,
  RunStore,
  RuntimeLogger,
  TokenCounter,
  TurnLock,
  WaitStore
} from "@plugboard/core"
import { Access, CreditLedger as Ledger, type SessionStore, TurnBounds, TurnControl } from "@plugboard/core"
import type { CodeModeOption, QueryRanking } from "@plugboard/langgraph"
import type { UserDatabaseRegistry } from "@plugboard/sqlite"
import { Cause, Context, Effect, Exit, type ManagedRuntime, Option, Runtime, Scope } from "effect"
import * as BootReport from "./BootReport.js"
import type { ServerConfig } from "./Config.js"
import { connectionRoutes, type HostConnections } from "./Connections.js"
import * as ConsoleData from "./console/ConsoleData.js"
import * as ConsoleRoutes from "./console/ConsoleRoutes.js"
import { errorBody, failureResponse, HttpFailure, json, MAX_PATH_PARAM_LENGTH } from "./Http.js"
import type { LiveCatalog } from "./LiveCatalog.js"
import { shortDid } from "./Logger.js"
import { messageRoutes } from "./Messages.js"
import { makeListener } from "./NodeListener.js"
import { makeGuard, RequestProbe, type StageTimings, serverTiming } from "./Pipeline.js"
import { BUILTIN_ROUTES, type BuiltinRoute, type OwnedRoute, pluginHandler } from "./PluginRoutes.js"
import { resumeRoutes } from "./Resume.js"
import { RequestUser, routerOf, sessionRoutes } from "./Routes.js"
import type { SaverFor } from "./SessionAccess.js"
import type { LiveHub } from "./socket/LiveHub.js"
import { TurnEnds } from "./TurnEnds.js"
import * as TurnService from "./TurnService.js"

/** Everything `startServer` composes (built by `createOracleApp`). */
export interface ServerParts {
  /**
   * The app's runtime: the HTTP handler and the turn service run on it (docs/architecture.md "One
   * Effect boundary"). Everything the server runs on it comes with its services already provided.
   */
  readonly runtime: ManagedRuntime.ManagedRuntime<never, unknown>
  readonly config: ServerConfig
  /** The catalog boot built. */
  readonly catalog: Catalog.Catalog
  /**
   * The catalog as it is now (`LiveCatalog.ts`: replaced after an OAuth server's first connect
   * lists its tools): each turn, `/health`, `/health/plugins` and the console read it; `catalog`
   * and `ranking` when absent.
   */
  readonly catalogs?: LiveCatalog | undefined
  readonly routes: ReadonlyArray<OwnedRoute>
  readonly shared: Readonly<Record<string, unknown>>
  readonly logger: RuntimeLogger
  readonly oracleDid: string
  readonly oracleName: string
  readonly model: BaseChatModel
  /** `LLM_PROVIDER`, when the model is the one it selected (`/health` names it); else the model's own type. */
  readonly modelProvider?: string | undefined
  readonly ports: {
    readonly auth: Auth.AuthService
    readonly ledger: CreditLedger.CreditLedgerService
    readonly limiter: RateLimiter.RateLimiterService
    readonly sessions: SessionStore.SessionStoreService
    readonly registry: UserDatabaseRegistry
    readonly runs: RunStore.RunStoreService
    readonly turnLock: TurnLock.TurnLockService
    /** Stops a session's turns on any host (abort, delete); this host's alone when absent. */
    readonly turnControl?: TurnControl.TurnControlService | undefined
    /** Where runs that stop for their user wait (docs/waiting.md); no turn can wait when absent. */
    readonly waits?: WaitStore.WaitStoreService | undefined
  }
  readonly creditsEnabled: boolean
  /** The user's saver (the `Checkpointer` port, with the host's `checkpointerForUser`). */
  readonly saverFor: SaverFor
  /** Counts what a turn's model calls send, for `TURN_MAX_TOKENS` (o200k when it loads; heuristic else). */
  readonly tokenCounter?: TokenCounter.TokenCounterService | undefined
  /**
   * The host's one ranking (core's `Ranking`, chosen where it composes: fused with `EMBEDDING_MODEL`'s
   * embedder, else lexical), for `list_capabilities`' query and for predictive preload; lexical when absent.
   */
  readonly ranking?: QueryRanking | undefined
  /** Code mode (`CODE_MODE=on`): the sandbox `run_code` runs in; off when absent. */
  readonly codeMode?: CodeModeOption | undefined
  readonly around: <A>(did: string, run: () => Promise<A>) => Promise<A>
  /** Makes the user's state available on this host (Matrix restore) before their request is routed. */
  readonly prepareUser?: ((did: string) => Promise<void>) | undefined
  readonly basePrompt?: string | undefined
  /** Whether users' threads can share a saver (the host's `checkpointerForUser`). */
  readonly threadsShared?: boolean | undefined
  /** Users' OAuth connections to MCP servers (Connections.ts); absent when no server uses OAuth. */
  readonly connections?: HostConnections | undefined
  /** The user's invocations for the MCP servers that forward UCANs, minted per turn. */
  readonly mcpInvocations?: ((did: string) => Promise<Record<string, string>>) | undefined
  /** Tool lists MCP servers announced as changed, while being read (`Sources.toolsSettled`). */
  readonly toolsSettled?: (() => Promise<void> | undefined) | undefined
  readonly onTimings?:
    | ((timings: Readonly<StageTimings>, request: { method: string; path: string }) => void)
    | undefined
  /** The sessions' live events and client-side tool calls (the Socket.IO gateway's hub). */
  readonly live?: LiveHub | undefined
  /** Runs after the server stopped and every turn ended (flush, dispose). */
  readonly onClosed: () => Promise<void>
}

/** The server's lifecycle handles. */
export interface ServerHandle {
  readonly listen: (port?: number, host?: string) => Promise<{ readonly port: number; readonly url: string }>
  readonly url: () => string | undefined
  readonly server: () => Server | undefined
  readonly close: (deadlineMs?: number) => Promise<void>
}

const modelInfo = (outer: BaseChatModel, provider: string | undefined) => {
  // A decorated model (the call bounds of `withCallBounds`) names the model it wraps.
  const model = (outer as unknown as { inner?: BaseChatModel }).inner ?? outer
  const m = model as unknown as { model?: unknown; modelName?: unknown }
  const id =
    typeof m.model === "string" ? m.model : typeof m.modelName === "string" ? m.modelName : model._llmType()
  // The configured provider, not the client class it runs on (`openai-compatible` runs on
  // LangChain's OpenAI client, whose type reads `openai`).
  return { id, provider: provider ?? model._llmType() }
}

/** Builds the app and the Node server (not yet listening). */
export const startServer = async (parts: ServerParts): Promise<ServerHandle> => {
  const { config, logger, ports } = parts
  const started = Date.now()
  const turnEnds = new TurnEnds()
  let draining = false
  // The turn service lives in a scope of its own, on the app's runtime: its turns are fibers of
  // that scope, closed once they have ended at shutdown.
  const turnScope = await parts.runtime.runPromise(Scope.make())
  const turns = await parts.runtime.runPromise(
    Scope.extend(
      TurnService.make({
        catalog: parts.catalog,
        current: parts.catalogs?.current,
        model: parts.model,
        shared: parts.shared,
        logger,
        basePrompt: parts.basePrompt,
        around: parts.around,
        turnBounds: TurnBounds.make({
          maxModelCalls: config.turnMaxModelCalls,
          maxToolCalls: config.turnMaxToolCalls,
          maxTokens: config.turnMaxTokens,
          wallClockMs: config.turnTimeoutMs,
          repeatLimit: config.turnRepeatLimit
        }),
        tokenCounter: parts.tokenCounter,
        resultMaxChars: config.toolResultMaxChars,
        ranking: parts.ranking,
        codeMode: parts.codeMode,
        preload: { mode: config.preload },
        mcpInvocations: parts.mcpInvocations,
        ...(parts.connections === undefined ? {} : { pendingConnects: parts.connections.pendingFor }),
        toolsSettled: parts.toolsSettled,
        oracleDid: parts.oracleDid,
        oracleName: parts.oracleName,
        ports: {
          sessions: ports.sessions,
          runs: ports.runs,
          turnLock: ports.turnLock,
          turnControl: ports.turnControl ?? TurnControl.makeMemory(),
          saverFor: parts.saverFor
        },
        turnLockTtlMs: config.turnLockTtlMs,
        turnTimeoutMs: config.turnTimeoutMs,
        threadsShared: parts.threadsShared,
        live: parts.live,
        turnEnds,
        approvalTools: config.approvalTools,
        connectWaits: config.connectWaits,
        waits: ports.waits === undefined ? undefined : { store: ports.waits, timeoutMs: config.waitTimeoutMs }
      }),
      turnScope
    )
  )

  const emitTimings = (timings: StageTimings, method: string, path: string) => {
    if (parts.onTimings === undefined) return
    try {
      parts.onTimings(timings, { method, path })
    } catch (error) {
      logger.warn("onTimings hook failed", { error: String(error) })
    }
  }

  const sessions = sessionRoutes({
    sessions: ports.sessions,
    runs: ports.runs,
    saverFor: parts.saverFor,
    oracleDid: parts.oracleDid,
    oracleName: parts.oracleName,
    maxBodyBytes: config.maxBodyBytes,
    logger,
    turns
  })
  const messages = messageRoutes({
    turns,
    runs: ports.runs,
    maxBodyBytes: config.maxBodyBytes,
    heartbeatMs: config.heartbeatMs
  })
  const waits = resumeRoutes({
    turns,
    runs: ports.runs,
    store: ports.waits,
    maxBodyBytes: config.maxBodyBytes,
    heartbeatMs: config.heartbeatMs
  })

  const oauth = connectionRoutes(
    parts.connections,
    logger,
    (did, plugin) => (turns.waits === undefined ? Effect.succeed(0) : turns.waits.connected(did, plugin)),
    parts.prepareUser
  )

  const notFound = (method: string, path: string) =>
    new HttpFailure({ status: 404, message: `Cannot ${method} ${path.slice(0, 200)}`, error: "Not Found" })

  const catalogNow = () => parts.catalogs?.current().catalog ?? parts.catalog
  const info = modelInfo(parts.model, parts.modelProvider)
  const health = Effect.sync(() =>
    json({
      status: "ok",
      oracleDid: parts.oracleDid,
      name: parts.oracleName,
      model: info,
      plugins: catalogNow().entries.length,
      credits: parts.creditsEnabled,
      uptimeSeconds: Math.round((Date.now() - started) / 1000),
      // How turns ended since boot, cut ones by reason (a bound that fires shows here).
      turns: turnEnds.snapshot(),
      timestamp: new Date().toISOString()
    })
  )
  const root = Effect.sync(() =>
    json({
      status: "ok",
      message: `${parts.oracleName} oracle is running.`,
      oracleDid: parts.oracleDid,
      timestamp: new Date().toISOString()
    })
  )
  const models = Effect.sync(() => json({ default: info.id, models: [info] }))
  // The boot report, built on the first request (it counts tokens) and kept for its catalog.
  const bootReports = new WeakMap<Catalog.Catalog, Promise<BootReport.Report>>()
  const bootReportFor = (grants: Access.Grants | undefined) =>
    Effect.suspend(() => {
      const catalog = catalogNow()
      return Effect.promise(() => {
        const made = bootReports.get(catalog) ?? BootReport.make(catalog)
        bootReports.set(catalog, made)
        return made
      }).pipe(Effect.map((report) => json(BootReport.forView(report, BootReport.viewFor(catalog, grants)))))
    })
  // Public: shaped for a caller who was granted nothing; behind auth: for the user's grants.
  const healthPlugins = bootReportFor(undefined)
  const healthPluginsPrivate = Effect.flatMap(RequestUser, (user) => bootReportFor(user.capabilities))

  // The dev console: on when CONSOLE says so, else when the server listens on loopback (decided
  // at `listen`, which may be given another host than HOST).
  let consoleOn = ConsoleRoutes.enabled(config.console, config.host)
  // The console's data of the current catalog, made once per catalog.
  const consoles = new WeakMap<Catalog.Catalog, ConsoleData.ConsoleData>()
  const consoleNow = () => {
    const catalog = catalogNow()
    const made =
      consoles.get(catalog) ??
      ConsoleData.make({ catalog, oracleName: parts.oracleName, basePrompt: parts.basePrompt })
    consoles.set(catalog, made)
    return made
  }
  const consoleData: ConsoleData.ConsoleData = {
    catalog: (view) => consoleNow().catalog(view),
    budget: (view) => consoleNow().budget(view),
    search: (query, view) => consoleNow().search(query, view),
    offer: (loaded, view) => consoleNow().offer(loaded, view)
  }
  // Each answer shaped for the requesting user's grants (docs/plugins.md#requiring-capabilities).
  const userView = Effect.map(RequestUser, (user) => Access.view(catalogNow(), user.capabilities))
  const consoleApi = ConsoleRoutes.consoleHandlers(consoleData, parts.oracleName, userView)
  const consoleThread = Effect.flatMap(Effect.zip(sessions.thread, userView), ([{ loadedPlugins }, view]) =>
    Effect.map(
      Effect.tryPromise({
        try: () =>
          consoleData.offer(
            loadedPlugins.filter((n) => {
              const entry = catalogNow().byName.get(n)
              return entry?.discoverable === true && Access.allowsPlugin(view, entry)
            }),
            view
          ),
        catch: (error) =>
          new HttpFailure({ status: 500, message: `The console could not answer: ${String(error)}` })
      }),
      (offer) => json(offer, 200, { "cache-control": "no-store" })
    )
  )

  const pluginOptions = (userDid: Option.Option<string>) => ({
    maxBodyBytes: config.maxBodyBytes,
    shared: parts.shared,
    userDid,
    logger
  })

  // A turn's hold outlives the longest turn (TURN_TIMEOUT_MS) plus a minute for the wait on the
  // session's lock and the save; a turn that outlives it is charged as usage instead.
  const reservationTtlMs = Math.min(config.turnTimeoutMs + 60_000, Ledger.MAX_RESERVATION_TTL_MS)

  const guarded = makeGuard({
    auth: ports.auth,
    ledger: ports.ledger,
    limiter: ports.limiter,
    creditsEnabled: parts.creditsEnabled,
    creditReserveEstimate: config.creditReserveEstimate,
    reservationTtlMs,
    prepareUser: parts.prepareUser,
    logger
  })

  type Public = Extract<
    BuiltinRoute,
    "root" | "health" | "models" | "console" | "oauthCallback" | "oauthStart" | "oauthClientMetadata"
  >
  const publicHandlers: Record<Public, HttpRouter.Route.Handler<HttpFailure, never>> = {
    root,
    health,
    models,
    console: consoleApi.page,
    oauthCallback: oauth.callback,
    oauthStart: oauth.startFromLink,
    oauthClientMetadata: oauth.clientMetadata
  }
  const privateHandlers: Record<
    Exclude<BuiltinRoute, Public>,
    HttpRouter.Route.Handler<HttpFailure, RequestUser>
  > = {
    createSession: sessions.create,
    listSessions: sessions.list,
    deleteSession: sessions.remove,
    abortTurn: messages.abort,
    sendMessage: messages.send,
    history: sessions.history,
    historyPage: sessions.historyPage,
    sessionRun: messages.sessionRun,
    rejoinRun: messages.rejoin,
    resumeRun: waits.resume,
    runWaits: waits.list,
    startConnection: oauth.start,
    listConnections: oauth.list,
    deleteConnection: oauth.remove,
    consoleCatalog: consoleApi.catalog,
    consoleBudget: consoleApi.budget,
    consoleSearch: consoleApi.search,
    consoleOffer: consoleApi.offer,
    consoleThread,
    healthPlugins: healthPluginsPrivate
  }
  const route = (name: BuiltinRoute) =>
    name === "healthPlugins" && config.healthPluginsPublic
      ? healthPlugins
      : name in publicHandlers
        ? publicHandlers[name as Public]
        : guarded(privateHandlers[name as Exclude<BuiltinRoute, Public>], BUILTIN_ROUTES[name][2] === "turn")
  // A console route while the console is off is an unknown route: the same 404, before any auth.
  const builtin = (name: BuiltinRoute) =>
    name === "console" || name.startsWith("console")
      ? Effect.suspend(() => {
          if (consoleOn) return route(name)
          return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
            Effect.fail(notFound(request.method, request.url.split("?")[0] ?? "/"))
          )
        })
      : route(name)
  // One table, one match per request: the server's routes, then the plugins' (collisions were
  // refused at boot, `collectRoutes`).
  const router = routerOf<HttpFailure, RequestProbe>([
    ...Object.entries(BUILTIN_ROUTES).map(
      ([name, [method, path]]) => [method, path, builtin(name as BuiltinRoute)] as const
    ),
    ...parts.routes.map(
      (r) =>
        [
          r.method,
          r.path,
          r.public
            ? pluginHandler(r, pluginOptions(Option.none()))
            : guarded(
                Effect.flatMap(RequestUser, (user) => {
                  // A plugin the user may not use (docs/plugins.md#requiring-capabilities) answers 403.
                  const denied = Access.view(catalogNow(), user.capabilities).denied.get(r.owner)
                  return denied === undefined
                    ? pluginHandler(r, pluginOptions(Option.some(user.did)))
                    : Effect.fail(
                        new HttpFailure({
                          status: 403,
                          message: `Plugin '${r.owner}' cannot be used by this user. ${denied}`,
                          error: "not-granted"
                        })
                      )
                })
              )
        ] as const
    )
  ])
  const isRouteNotFound = (e: unknown): e is HttpServerError.RouteNotFound =>
    HttpServerError.isServerError(e) && e._tag === "RouteNotFound"

  // CORS as QiForge oracles answer it: browser clients send the UCAN headers cross-origin.
  const cors: Record<string, string> = {
    "access-control-allow-origin": config.corsOrigin,
    // Browser clients read both: the run's id is what a dropped stream rejoins.
    "access-control-expose-headers": "X-Request-Id, X-Run-Id",
    ...(config.corsOrigin === "*" ? {} : { "access-control-allow-credentials": "true", vary: "Origin" })
  }
  const preflight = HttpServerResponse.empty({
    status: 204,
    headers: {
      "access-control-allow-methods": "GET, POST, PUT, DELETE, PATCH, OPTIONS",
      "access-control-allow-headers":
        "Content-Type, Authorization, x-ucan-delegation, x-matrix-access-token, x-matrix-homeserver, x-did, x-request-id, x-auth-type, x-timezone",
      "access-control-max-age": "600"
    }
  })

  const app = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const timings: StageTimings = {}
    const t0 = performance.now()
    const path = request.url.split("?")[0] ?? "/"
    const seen: { did?: string; status?: number; runId?: string } = {}
    // One line per request when its work is over (a stream's at its `done`): LOG_LEVEL=info.
    const report = () => {
      timings.total = performance.now() - t0
      emitTimings(timings, request.method, path)
      logger.info(
        `${request.method} ${path.slice(0, 200)} ${seen.status ?? 0} ${timings.total.toFixed(1)}ms`,
        {
          ...(seen.did === undefined ? {} : { user: shortDid(seen.did) }),
          ...(seen.runId === undefined ? {} : { runId: seen.runId })
        }
      )
    }
    const finish = (answer: HttpServerResponse.HttpServerResponse) => {
      seen.status = answer.status
      seen.runId = answer.headers["x-run-id"]
      const response = HttpServerResponse.setHeaders(answer, cors)
      // A stream's work ends with its turn: `streamEnded` reports it then.
      if (response.body._tag === "Stream" || response.body._tag === "Raw") return response
      report()
      return HttpServerResponse.setHeader(response, "server-timing", serverTiming(timings))
    }
    const handled = Effect.gen(function* () {
      if (draining) {
        return yield* Effect.fail(
          new HttpFailure({
            status: 503,
            message: "The server is shutting down.",
            headers: { connection: "close" }
          })
        )
      }
      if (request.method === "OPTIONS") return preflight
      try {
        decodeURIComponent(path)
      } catch {
        return yield* Effect.fail(
          new HttpFailure({ status: 400, message: "The request path is not valid URL encoding." })
        )
      }
      return yield* router.pipe(
        Effect.provideService(RequestProbe, { timings, report, seen }),
        Effect.catchIf(isRouteNotFound, () => Effect.fail(notFound(request.method, path)))
      )
    })
    return yield* handled.pipe(
      Effect.catchIf(
        (e): e is HttpFailure => e instanceof HttpFailure,
        (failure) => {
          // What the client is not told (a driver's message names hosts and users) is logged.
          if (failure.detail !== undefined) {
            logger.warn(failure.message, {
              method: request.method,
              path: path.slice(0, 200),
              error: failure.error,
              detail: failure.detail.slice(0, 2000)
            })
          }
          return Effect.succeed(failureResponse(failure))
        }
      ),
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
        logger.error("request failed", {
          method: request.method,
          path,
          cause: Cause.pretty(cause).slice(0, 2000)
        })
        return Effect.succeed(json(errorBody(500, "Internal server error."), 500))
      }),
      Effect.map(finish)
    )
  })

  // The router refuses path parameters over 100 characters by default, as an unknown route (404).
  // Node's header limit already bounds the path; past it, the session id's own rule answers, a
  // 400 that names the limit (SessionStore.validateSessionId).
  const routed = app.pipe(HttpRouter.withRouterConfig({ maxParamLength: MAX_PATH_PARAM_LENGTH }))
  // The platform's tracer middleware opens a span per request; the server exports no traces, so
  // each would be built and dropped (about 40 µs of CPU a request, docs/architecture.md#where-a-one-step-turns-cpu-goes-2026-12-06).
  // The requests run on the app's runtime with an empty context: the routes reach the ports
  // through their closures, never the context, and every `provideService` of a request (the
  // platform's, the router's, the pipeline's) copies the context it is given.
  const appRuntime = await parts.runtime.runtime()
  const requests = Runtime.make({
    context: Context.empty(),
    fiberRefs: appRuntime.fiberRefs,
    runtimeFlags: appRuntime.runtimeFlags
  })
  const handler = await Runtime.runPromise(requests)(
    Effect.locally(NodeHttpServer.makeHandler(routed), HttpMiddleware.currentTracerDisabledWhen, () => true)
  )
  const listener = makeListener({
    handler,
    requestTimeoutMs: config.requestTimeoutMs,
    onListening: (host) => {
      consoleOn = ConsoleRoutes.enabled(config.console, host)
    }
  })
  const listen = (port = config.port, host = config.host) => listener.listen(port, host)

  let closing: Promise<void> | undefined
  const close = (deadlineMs = config.shutdownDeadlineMs) => {
    closing ??= (async () => {
      draining = true
      await listener.close(async () => {
        await parts.runtime.runPromise(turns.drain(deadlineMs))
        await parts.runtime.runPromise(Scope.close(turnScope, Exit.void))
      })
      await parts.onClosed()
    })()
    return closing
  }

  return { listen, url: listener.url, server: listener.server, close }
}
