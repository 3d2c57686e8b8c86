/**
 * `createOracleApp`: the programmatic API a team uses to run its own oracle
 * (docs/spec/pipeline.md#hosting).
 * Boot, in order: the catalog (manifest errors abort with `[boot-error]` lines), plugin routes
 * (collisions abort naming both plugins), then the configuration from the environment (one
 * `[config-error]` line per bad variable), the oracle's key, the plugins' shared state, and the
 * ports: Auth (UCAN), CreditLedger (SQLite), RateLimiter (memory, `THROTTLE_*`), SessionStore and
 * checkpointer (per-user SQLite, or the host's `checkpointerForUser`), the model (`LLM_*`).
 * The app owns no rule: each pipeline stage is a call into a port (see `Pipeline.ts`).
 *
 * Shared engines (docs/deployment.md): `DATABASE_URL` puts the state ports
 * (checkpointer, sessions, credit ledger, runs) on Postgres, `REDIS_URL` the coordination ports
 * (rate limiter, turn lock, turn stops, and the run store's fan-out) on Redis; each is checked at boot (migrations applied, a ping), and a
 * dead one is a `[boot-error]` naming its variable. An option given to `createOracleApp` still
 * wins over either.
 */
import type { Server } from "node:http"
import { join } from "node:path"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import {
  Auth,
  Catalog,
  Checkpointer,
  type Clock,
  ConnectionStore,
  CreditLedger,
  describe,
  type Plugin,
  Ranking,
  RateLimiter,
  RunStore,
  type RuntimeLogger,
  SessionStore,
  TokenCounter,
  TurnControl,
  TurnLock,
  WaitStore
} from "@plugboard/core"
import type { CodeModeOption } from "@plugboard/langgraph"
import { MatrixSyncEngine, matrixSnapshotStore, type SnapshotStore } from "@plugboard/matrix"
import type { McpDescription, McpServerConfig } from "@plugboard/mcp"
import { makeChatModel, withCallBounds } from "@plugboard/models"
import { UserDatabases } from "@plugboard/sqlite"
import { loadOrCreateSigner, type Signer } from "@plugboard/ucan"
import { Cause, Data, Effect, Either, Exit, type Layer, ManagedRuntime, Option } from "effect"
import { bootCatalog } from "./CatalogBoot.js"
import { startCodeMode } from "./CodeModeBoot.js"
import * as ServerConfig from "./Config.js"
import {
  forwarder,
  type HostConnections,
  makeHostConnections,
  oauthBootProblems,
  oauthPlugins
} from "./Connections.js"
import { CREDITS_LEDGER_KEY, CREDITS_PLUGIN_NAME } from "./credits/CreditsPlugin.js"
import * as LiveCatalog from "./LiveCatalog.js"
import { consoleLogger, makeConsoleLogger } from "./Logger.js"
import { appendsInCallOrder } from "./OrderedRuns.js"
import type { StageTimings } from "./Pipeline.js"
import { collectRoutes } from "./PluginRoutes.js"
import { portLayers } from "./PortLayers.js"
import { type LoadedRanking, loadQueryRanking } from "./QueryRanking.js"
import { makeRestoreGate } from "./RestoreGate.js"
import { withLiveness } from "./RunLiveness.js"
import { startServer } from "./Server.js"
import type { McpServersInput } from "./Sources.js"
import { attachGateway } from "./socket/Gateway.js"
import { LiveHub } from "./socket/LiveHub.js"
import { repairRun, repairRuns, type ThreadRepairDeps } from "./ThreadRepair.js"

/** Who the oracle is. Without a signer or DID, the key in `ORACLE_KEY_FILE` is used (created on first boot). */
export interface OracleIdentity {
  readonly signer?: Signer | undefined
  /** The oracle's DID when only verification is needed (no signer). */
  readonly did?: string | undefined
  /** Shown by `/health`; default `ORACLE_NAME`. */
  readonly name?: string | undefined
}

/** Host hooks (`checkpointerForUser`: docs/spec/graph-state.md#checkpointing). */
export interface OracleHooks {
  /** A saver for this user, or nothing to use the default per-user SQLite checkpointer. */
  readonly checkpointerForUser?: Checkpointer.CheckpointerForUser<BaseCheckpointSaver>
  /** Told each request's stage timings when the request's work is over (the benchmark's probe). */
  readonly onTimings?: (
    timings: Readonly<StageTimings>,
    request: { readonly method: string; readonly path: string }
  ) => void
}

/** Options of `createOracleApp`. */
export interface OracleAppOptions {
  readonly plugins: ReadonlyArray<Plugin>
  readonly identity?: OracleIdentity
  readonly hooks?: OracleHooks
  /** Overrides of the configuration read from the environment. */
  readonly config?: Partial<ServerConfig.ServerConfig>
  /** The environment to read (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Anchors relative paths of the configuration (default `process.cwd()`). */
  readonly cwd?: string
  /** A LangChain chat model to use instead of the one `LLM_*` selects. */
  readonly model?: BaseChatModel | ((catalog: Catalog.Catalog) => BaseChatModel)
  /** The clock of the rate limiter, ledger and sessions (tests move it). Default: live. */
  readonly clock?: Layer.Layer<Clock.Clock>
  /** A credit ledger to use instead of the SQLite file at `CREDITS_DATABASE_PATH`. */
  readonly ledger?: Layer.Layer<CreditLedger.CreditLedger, unknown, Clock.Clock>
  /**
   * A rate limiter to use instead of the in-memory one of `THROTTLE_LIMIT` / `THROTTLE_TTL_MS`
   * (one shared by every process, e.g. on Redis, when the oracle runs on several).
   */
  readonly rateLimiter?: Layer.Layer<RateLimiter.RateLimiter, unknown, Clock.Clock>
  /** A run store to use instead of the SQLite file at `RUNS_DATABASE_PATH`. */
  readonly runs?: Layer.Layer<RunStore.RunStore, unknown, Clock.Clock>
  /**
   * The lock that keeps one turn per session (default: in memory, one process). Give one on a
   * shared engine when several processes serve the same sessions.
   */
  readonly turnLock?: Layer.Layer<TurnLock.TurnLock, unknown, Clock.Clock>
  /**
   * What carries `POST /messages/abort` and `DELETE /sessions/:id` to the host running the
   * session's turn (default: in memory, one process; on Redis with `REDIS_URL`).
   */
  readonly turnControl?: Layer.Layer<TurnControl.TurnControl, unknown>
  /** A session store to use instead of the per-user SQLite databases (e.g. a shared database). */
  readonly sessions?: Layer.Layer<SessionStore.SessionStore, unknown, Clock.Clock>
  readonly logger?: RuntimeLogger
  /**
   * Counts the tokens each model call sends and answers, for `TURN_MAX_TOKENS` (the larger of
   * this count and the provider's report is what a call costs). Default: core's heuristic; give
   * `@plugboard/tokenizers`' exact counter (`cachedCounter(await loadTiktokenCounter("o200k"))`)
   * to count as the model does.
   */
  readonly tokenCounter?: TokenCounter.TokenCounterService
  /** The host's own instructions, before the Tier-1 block. */
  readonly basePrompt?: string
  /**
   * Replicates per-user state through this snapshot store instead of the Matrix account of
   * `MATRIX_*` (a store of another backend, or an in-memory one in tests).
   */
  readonly matrixStore?: SnapshotStore
  /**
   * MCP servers to mount, one plugin each: a config file (relative to `cwd`) or the object
   * `{ mcpServers: {...} }`. Default: the file in `MCP_CONFIG`, if set.
   */
  readonly mcpServers?: McpServersInput
  /** Folders of Agent Skills to mount, one plugin per skill. Default: `SKILLS_DIR`, if set. */
  readonly skills?: string | ReadonlyArray<string>
  /**
   * The operator's manifest overrides (docs/plugins.md#manifest-overrides): plugin name → manifest
   * fields, or a JSON file / JS or TS module holding them (relative to `cwd`). Default: the file
   * in `MANIFEST_OVERRIDES`, if set.
   */
  readonly manifestOverrides?: string | Readonly<Record<string, unknown>>
}

/** A running (or ready to run) oracle. */
export interface OracleApp {
  readonly oracleDid: string
  readonly config: ServerConfig.ServerConfig
  /**
   * The catalog turns start with now: the one boot built, until an OAuth server's first connect
   * lists its tools and a rebuilt catalog replaces it (docs/oauth.md#the-tool-list).
   */
  readonly catalog: Catalog.Catalog
  /** Whether the credit check runs (the `credits` plugin is loaded and credits are not disabled). */
  readonly creditsEnabled: boolean
  /** The credit ledger the server charges (for top-ups by the host). */
  readonly credits: {
    readonly balance: (did: string) => Promise<number>
    readonly topUp: (did: string, amount: number) => Promise<number>
  }
  /** Starts listening (default `config.port` / `config.host`); resolves with the bound address. */
  readonly listen: (port?: number, host?: string) => Promise<{ readonly port: number; readonly url: string }>
  /** The base URL once listening. */
  readonly url: () => string | undefined
  /** The underlying Node server once listening. */
  readonly server: () => Server | undefined
  /**
   * Graceful shutdown: stop accepting, let running turns finish within `deadlineMs` (default
   * `SHUTDOWN_DEADLINE_MS`) then abort the rest (their streams still end with `done`), flush the
   * Matrix sync (within `SHUTDOWN_DEADLINE_MS` again: the last turns' uploads are the point of
   * it, so they do not share the turns' budget), close storage. Idempotent.
   */
  readonly close: (deadlineMs?: number) => Promise<void>
}

/** Boot failed; `lines` are what a CLI prints (each `[boot-error] ...` or `[config-error] ...`). */
export class OracleBootError extends Data.TaggedError("OracleBootError")<{
  readonly lines: ReadonlyArray<string>
  readonly message: string
}> {
  // `createOracleApp` rejects with it, to plain callers: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(lines: ReadonlyArray<string>) {
    super({ lines, message: lines.join("\n") })
  }
}

/** Boots an oracle; see the module doc. Rejects with `OracleBootError` for anything misconfigured. */
export const createOracleApp = async (options: OracleAppOptions): Promise<OracleApp> => {
  const cwd = options.cwd ?? process.cwd()
  // Read first, reported after the catalog: manifest errors come before configuration errors.
  const loaded = await Effect.runPromise(
    Effect.either(options.env === undefined ? ServerConfig.load(cwd) : ServerConfig.fromEnv(options.env, cwd))
  )
  const envConfig = Either.isRight(loaded) ? { ...loaded.right, ...options.config } : undefined
  const logger =
    options.logger ??
    (envConfig === undefined
      ? consoleLogger
      : makeConsoleLogger({ level: envConfig.logLevel, format: envConfig.logFormat }))
  // The oracle's key, read once: the sources need it early when a server forwards UCANs (its
  // tool list is asked with the oracle's own invocation), the auth port needs it in any case.
  let keyRead: Promise<Signer> | undefined
  const oracleKey = (file: string): Promise<Signer> => {
    keyRead ??= loadOrCreateSigner(file).then((k) => k.signer)
    return keyRead
  }
  // Users' OAuth connections (Connections.ts) exist once the ports do; the catalog's calls of
  // `auth: "oauth"` servers are forwarded to them.
  let hostConnections: HostConnections | undefined
  // The same boot as `plugboard mcp` (CatalogBoot.ts): sources, overrides, Catalog.make.
  const booted = await bootCatalog(options.plugins, {
    signer: async () => {
      if (options.identity?.signer !== undefined) return options.identity.signer
      if (options.identity?.did !== undefined || envConfig === undefined) return undefined
      // A key that cannot be read is reported below, with the other boot errors.
      return oracleKey(envConfig.oracleKeyFile).catch(() => undefined)
    },
    mcpServers: options.mcpServers ?? envConfig?.mcpConfigFile,
    skills: options.skills ?? envConfig?.skillsDir,
    skillsRun: envConfig?.skillsRun,
    manifestOverrides: options.manifestOverrides ?? envConfig?.manifestOverridesFile,
    cwd,
    cacheDir: envConfig?.mcpCacheDir ?? join(cwd, ".plugboard", "mcp-cache"),
    idleMs: envConfig?.mcpIdleMs,
    oauth: forwarder(() => hostConnections),
    loadBudgetTokens: envConfig?.loadBudgetTokens,
    tokenCounter: options.tokenCounter,
    logger
  })
  if (Either.isLeft(booted)) throw new OracleBootError(booted.left.errors)
  const { catalog, sources } = booted.right
  const fail = async (lines: ReadonlyArray<string>): Promise<never> => {
    await sources.close()
    throw new OracleBootError(lines)
  }
  const { routes, errors: routeErrors } = collectRoutes(catalog)
  if (routeErrors.length > 0) return fail(routeErrors.map((e) => `[boot-error] ${e}`))

  if (Either.isLeft(loaded)) return fail(loaded.left.lines)
  const config: ServerConfig.ServerConfig = envConfig!

  let signer = options.identity?.signer
  let oracleDid = options.identity?.did ?? signer?.did()
  if (oracleDid === undefined) {
    try {
      signer = await oracleKey(config.oracleKeyFile)
    } catch (error) {
      return fail([`[boot-error] Oracle key (${config.oracleKeyFile}): ${describe(error)}`])
    }
    oracleDid = signer.did()
  }
  const invocationsFor = sources.invocationsFor
  if (invocationsFor !== undefined && signer === undefined) {
    return fail([
      "[boot-error] An MCP server sets forwardUcan, which mints invocations with the oracle's key: give createOracleApp an identity with a signer (or none, to use ORACLE_KEY_FILE)."
    ])
  }
  const oracleSigner = signer
  const env = options.env ?? process.env
  const oauthProblems = oauthBootProblems(sources.servers, config.connectionsCipher, env)
  if (oauthProblems.length > 0) return fail(oauthProblems)
  const oracleName = options.identity?.name ?? config.oracleName
  const creditsLoaded = catalog.byName.has(CREDITS_PLUGIN_NAME)
  const creditsEnabled = creditsLoaded && !config.disableCredits

  // Every committed write of a user (a turn's checkpoints, a session created or deleted) asks
  // for a sync of that user; the engine is built below, once the registry exists.
  let afterWrite: (did: string) => void = () => {}
  const { services, engineDown, pg, redis } = portLayers({
    config,
    options,
    logger,
    identity: signer === undefined ? { oracleDid } : { oracleDid, signer },
    onWrite: (did) => afterWrite(did)
  })
  const runtime = ManagedRuntime.make(services)
  const portsExit = await runtime.runPromiseExit(
    Effect.all({
      auth: Auth.Auth,
      ledger: CreditLedger.CreditLedger,
      limiter: RateLimiter.RateLimiter,
      sessions: SessionStore.SessionStore,
      registry: UserDatabases,
      runs: RunStore.RunStore,
      turnLock: TurnLock.TurnLock,
      turnControl: TurnControl.TurnControl,
      waits: WaitStore.WaitStore,
      connectionStore: ConnectionStore.ConnectionStore,
      checkpointer: Checkpointer.typed<BaseCheckpointSaver>()
    })
  )
  if (Exit.isFailure(portsExit) || engineDown.length > 0) {
    await runtime.dispose().catch(() => {})
    if (engineDown.length > 0) return fail(engineDown)
    const cause = (portsExit as Exit.Failure<unknown, unknown>).cause
    return fail([
      `[boot-error] Storage could not be opened: ${describe(Option.getOrElse(Cause.failureOption(cause), () => Cause.squash(cause)))}`
    ])
  }
  const { checkpointer: portCheckpointer, connectionStore, ...opened } = portsExit.value
  // The catalog turns start with (LiveCatalog.ts), made once the ranking is chosen, below.
  let catalogs: LiveCatalog.LiveCatalog | undefined
  // Built on first use: without PUBLIC_URL the redirect is on the listen address, known at `listen`.
  hostConnections =
    config.connectionsCipher === undefined
      ? undefined
      : makeHostConnections({
          servers: sources.servers,
          cipher: config.connectionsCipher,
          store: connectionStore,
          publicUrl: () => config.publicUrl ?? handle.url() ?? `http://${config.host}:${config.port}`,
          env,
          pool: sources.pool,
          cacheDir: config.mcpCacheDir,
          logger,
          ...oauthPlugins(catalog, sources.servers),
          offer: async (server, description) =>
            catalogs === undefined ? false : offerListed(server, description)
        })

  // Runs on a store other hosts share (`DATABASE_URL`, or the host's `runs`) and a lock they
  // share too (`REDIS_URL`, or the host's `turnLock`): a host booting must not end the others'
  // live runs, so a run is ended interrupted only once nobody holds its lease (`RunLiveness.ts`).
  // Otherwise the store is this host's (or served by one host at a time): the runs a previous
  // process left unfinished (a crash, a kill) are over, reported interrupted with what they had
  // streamed.
  const sharedRuns = pg !== undefined || options.runs !== undefined
  const sharedLock = redis !== undefined || options.turnLock !== undefined
  const manyHosts = sharedRuns && sharedLock
  const ordered = pg === undefined ? opened.runs : appendsInCallOrder(opened.runs)
  const ports = {
    ...opened,
    runs: manyHosts
      ? withLiveness(ordered, opened.turnLock, config.turnLockTtlMs, (run) =>
          Effect.suspend(() => repairRun(repairDeps(), run))
        )
      : ordered
  }
  if (pg !== undefined && !sharedLock) {
    logger.warn(
      "DATABASE_URL without REDIS_URL serves from one host: turns of a session are serialised in this process only, and a host booting interrupts every unfinished run; set REDIS_URL to run several hosts"
    )
  }
  const pruneRuns = setInterval(
    () => void runtime.runPromise(Effect.ignore(ports.runs.prune(config.runRetentionMs))),
    Math.min(config.runRetentionMs, 600_000)
  )
  pruneRuns.unref()

  let shared: Record<string, unknown>
  try {
    const read = await Effect.runPromise(
      Effect.either(Catalog.readSharedState(catalog, { [CREDITS_LEDGER_KEY]: ports.ledger }))
    )
    if (Either.isLeft(read)) throw new OracleBootError(read.left.lines)
    shared = { ...read.right }
  } catch (error) {
    await runtime.dispose()
    await sources.close()
    throw error
  }

  // The host's one ranking, chosen here (docs/benchmarks.md#routing-quality): fused with an embedder
  // when EMBEDDING_MODEL is set, else lexical. list_capabilities and predictive preload rank with it,
  // as `plugboard inspect --eval` measures it.
  let fused: LoadedRanking | undefined
  if (config.embeddingModel !== undefined) {
    const loaded = await loadQueryRanking(catalog, config.embeddingModel)
    if (Either.isLeft(loaded)) {
      await runtime.dispose()
      await sources.close()
      throw new OracleBootError([
        `[boot-error] EMBEDDING_MODEL: ${loaded.left.reason}: ${loaded.left.message}`
      ])
    }
    fused = loaded.right
    logger.info("list_capabilities and preload rank with an embedder", {
      embedder: fused.embedder,
      plugins: fused.plugins
    })
  }
  const ranking = fused?.ranking ?? Ranking.lexical(catalog)
  catalogs = LiveCatalog.make({ catalog, ranking })
  // An OAuth server's tool list read at its first connect (FirstListing.ts) rebuilds the catalog
  // for the turns that start after (LiveCatalog.offerRelisted).
  const offerListed = (server: McpServerConfig, description: McpDescription): Promise<boolean> =>
    LiveCatalog.offerRelisted(catalogs!, booted.right.relist, fused, logger, server, description)

  let codeMode: CodeModeOption | undefined
  if (config.codeMode === "on") {
    const started = await startCodeMode()
    if (Either.isLeft(started)) {
      await runtime.dispose()
      await sources.close()
      throw new OracleBootError([`[boot-error] CODE_MODE=on: ${started.left}`])
    }
    codeMode = started.right
    logger.info("code mode on: run_code runs programs in the sandbox", { sandbox: codeMode.sandbox.name })
  }

  const model =
    typeof options.model === "function"
      ? options.model(catalog)
      : // A caller's own model is used as given; the configured provider's calls are bounded.
        (options.model ??
        withCallBounds(makeChatModel(config.model, { catalog }), {
          connectTimeoutMs: config.llmConnectTimeoutMs,
          firstTokenTimeoutMs: config.llmFirstTokenTimeoutMs,
          idleTimeoutMs: config.llmIdleTimeoutMs
        }))

  const checkpointer =
    options.hooks?.checkpointerForUser === undefined
      ? portCheckpointer
      : Checkpointer.withOverride(portCheckpointer, options.hooks.checkpointerForUser)
  const saverFor = checkpointer.forUser
  // A run cut by a crash (or a dead host) gets its question back in its thread (ThreadRepair.ts).
  const repairDeps = (): ThreadRepairDeps => ({
    runs: ports.runs,
    saverFor,
    catalog: catalogs?.current().catalog ?? catalog,
    model,
    logger
  })
  if (!manyHosts) {
    const interrupted = await runtime.runPromise(Effect.either(ports.runs.interruptUnfinished()))
    if (Either.isRight(interrupted) && interrupted.right.length > 0) {
      logger.warn("runs left unfinished by the previous process were interrupted", {
        runs: interrupted.right.length
      })
      await runtime.runPromise(repairRuns(repairDeps(), interrupted.right))
    }
  }
  // TURN_MAX_TOKENS counts what each model call sends (the host's counter, else core's
  // heuristic), so a provider's usage report is not trusted alone (docs/architecture.md). Every
  // call sends the same system prompt and tools again: their counts are remembered across turns.
  const tokenCounter = TokenCounter.memoized(options.tokenCounter ?? TokenCounter.heuristic)

  // Matrix carries the per-user SQLite files from host to host; on a shared Postgres the users'
  // state is in no such file and every host already sees it, so there is nothing to replicate.
  if (pg !== undefined && (config.matrix !== undefined || options.matrixStore !== undefined)) {
    logger.warn("DATABASE_URL is set: Matrix sync is off (every host reads the users' state from Postgres)")
  }
  const store =
    pg !== undefined
      ? undefined
      : (options.matrixStore ??
        (config.matrix === undefined
          ? undefined
          : matrixSnapshotStore(config.matrix, { requestTimeoutMs: config.matrixRequestTimeoutMs })))
  const matrix =
    store === undefined
      ? undefined
      : new MatrixSyncEngine({
          store,
          databases: ports.registry,
          // A user restored recently whose database is on disk costs no round trip per request.
          recheckAfterMs: config.matrixRecheckAfterMs,
          logger: {
            info: (m) => logger.info(`[matrix-sync] ${m}`),
            warn: (m) => logger.warn(`[matrix-sync] ${m}`),
            error: (m) => logger.error(`[matrix-sync] ${m}`)
          }
        })
  if (matrix !== undefined) afterWrite = (did) => matrix.scheduleSync(did)
  matrix?.start()
  // A host that does not have a user's database yet picks it up from Matrix before serving them,
  // waiting at most the request timeout: a hanging homeserver never holds a turn longer.
  const prepareUser =
    matrix === undefined
      ? undefined
      : makeRestoreGate({
          restore: (did) => matrix.restore(did),
          boundMs: config.matrixRequestTimeoutMs,
          backoffMs: Math.max(config.matrixRecheckAfterMs, config.matrixRequestTimeoutMs),
          logger
        })
  // A Matrix backup or restore of the user waits for their turns (and holds new ones back). The
  // sync itself is scheduled by the turn's committed writes (`onWrite` above), once per turn.
  const around = <A>(did: string, run: () => Promise<A>): Promise<A> => ports.registry.withTurn(did, run)

  const live = new LiveHub(config.clientToolTimeoutMs)
  const handle = await startServer({
    live,
    runtime,
    config,
    catalog,
    catalogs,
    routes,
    shared,
    logger,
    oracleDid,
    oracleName,
    model,
    ...(options.model === undefined ? { modelProvider: config.model.provider } : {}),
    ports,
    creditsEnabled,
    saverFor,
    tokenCounter,
    around,
    prepareUser,
    basePrompt: options.basePrompt,
    ranking,
    codeMode,
    // Only a host's own saver may put every user's threads in one namespace: the Postgres
    // checkpointer scopes thread ids per user (its `UserScopedSaver`), as the SQLite files do.
    threadsShared: options.hooks?.checkpointerForUser !== undefined,
    ...(invocationsFor === undefined || oracleSigner === undefined
      ? {}
      : { mcpInvocations: (did: string) => invocationsFor(oracleSigner, did) }),
    toolsSettled: sources.toolsSettled,
    connections: hostConnections,
    onTimings: options.hooks?.onTimings,
    onClosed: async () => {
      if (matrix !== undefined) {
        const report = await matrix.flush(config.shutdownDeadlineMs).catch((error: unknown) => {
          logger.error("matrix flush failed", { error: describe(error) })
          return undefined
        })
        // A refused sync (diverged from the room, restore pending or failed) left that user's
        // state out of the room as surely as a failure did.
        const refused = report?.synced.filter((s) => s.outcome._tag === "Refused").map((s) => s.did) ?? []
        if (
          report !== undefined &&
          (report.failed.length > 0 || report.timedOut.length > 0 || refused.length > 0)
        ) {
          logger.warn("matrix flush incomplete", {
            failed: report.failed.length,
            timedOut: report.timedOut.length,
            refused: refused.length
          })
        }
        matrix.close()
      }
      // Every turn has ended: no call is in flight on the MCP connections.
      clearInterval(pruneRuns)
      await sources.close()
      await fused?.close()
      await runtime.dispose()
    }
  })

  const ledgerCall = <A>(effect: Effect.Effect<A, CreditLedger.CreditLedgerError>) =>
    Effect.runPromise(Effect.mapError(effect, (e) => new Error(e.message)))

  const current = catalogs
  return {
    oracleDid,
    config,
    get catalog() {
      return current.current().catalog
    },
    creditsEnabled,
    credits: {
      balance: (did) => ledgerCall(ports.ledger.balance(did)),
      topUp: (did, amount) =>
        ledgerCall(Effect.map(ports.ledger.topUp(did, amount, "top-up"), (r) => r.balance))
    },
    listen: async (port, host) => {
      const bound = await handle.listen(port, host)
      const server = handle.server()
      if (server !== undefined) {
        live.attach(
          attachGateway({
            server,
            hub: live,
            auth: ports.auth,
            sessions: ports.sessions,
            limiter: ports.limiter,
            corsOrigin: config.corsOrigin,
            logger,
            prepareUser
          })
        )
      }
      return bound
    },
    url: handle.url,
    server: handle.server,
    close: (deadlineMs) => {
      // Sockets go first: a turn waiting for a client's answer fails at once instead of at its
      // timeout, and the HTTP server's close is not held by open WebSockets.
      live.close("the server is shutting down.")
      return handle.close(deadlineMs)
    }
  }
}
