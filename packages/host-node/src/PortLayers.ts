/**
 * The server's ports as layers, from its configuration (docs/deployment.md): the embedded
 * defaults (SQLite files, in-process limiter and locks), or Postgres for the state ports
 * (`DATABASE_URL`: checkpointer, sessions, credit ledger, runs, waits) and Redis for the coordination
 * ports (`REDIS_URL`: rate limiter, turn lock, turn stops, the run store's fan-out, the replay
 * guard). An option given to `createOracleApp` wins over either. Building the layer checks each
 * shared engine first (migrations applied, a ping): a dead one becomes a `[boot-error]` line in
 * `engineDown`, naming its variable, rather than a failure of the first user's request.
 */
import { dirname, join } from "node:path"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import {
  type Auth,
  Checkpointer,
  Clock,
  type ConnectionStore,
  type CreditLedger,
  describe,
  RateLimiter,
  ReplayGuard,
  type RunStore,
  type RuntimeLogger,
  type SessionStore,
  TurnControl,
  TurnLock,
  type WaitStore
} from "@plugboard/core"
import * as Postgres from "@plugboard/postgres"
import * as Redis from "@plugboard/redis"
import {
  connectionsFile,
  layerRunStore,
  layerSessionStore,
  layerUserConnectionStore,
  layerUserDatabases,
  layerWaitStore,
  UserDatabases,
  WAITS_FILE_NAME
} from "@plugboard/sqlite"
import { type Signer, UcanAuth } from "@plugboard/ucan"
import { Effect, Layer } from "effect"
import type { OracleAppOptions } from "./App.js"
import type * as ServerConfig from "./Config.js"
import { creditLedgerLayer, databaseLayer } from "./Engines.js"
import { shortDid } from "./Logger.js"

/** What `portLayers` builds the ports from. */
export interface PortLayersInput {
  readonly config: ServerConfig.ServerConfig
  /** The ports a host passes in itself, and its clock. */
  readonly options: Pick<
    OracleAppOptions,
    "clock" | "ledger" | "rateLimiter" | "sessions" | "runs" | "turnLock" | "turnControl"
  >
  readonly logger: RuntimeLogger
  /** The oracle: its DID, and its signer when it has one (UCANs are then verified against it). */
  readonly identity: { readonly oracleDid: string; readonly signer?: Signer | undefined }
  /** Called after each committed write of a user (what schedules their Matrix sync). */
  readonly onWrite: (did: string) => void
}

/** Every port the server runs on, as `portLayers` provides them. */
export type Ports =
  | Auth.Auth
  | Checkpointer.Checkpointer
  | Clock.Clock
  | ConnectionStore.ConnectionStore
  | CreditLedger.CreditLedger
  | RateLimiter.RateLimiter
  | RunStore.RunStore
  | SessionStore.SessionStore
  | TurnControl.TurnControl
  | TurnLock.TurnLock
  | WaitStore.WaitStore
  | UserDatabases

/** What `portLayers` gives. */
export interface PortLayers {
  readonly services: Layer.Layer<Ports, unknown>
  /** The `[boot-error]` lines of the engines that did not answer, filled while `services` is built. */
  readonly engineDown: ReadonlyArray<string>
  /** The shared engines' layers; undefined on the embedded default. */
  readonly pg: Layer.Layer<Postgres.PgDatabase, Postgres.PgFailure> | undefined
  readonly redis: Layer.Layer<Redis.RedisConnection, unknown> | undefined
}

/** The ports' layer for `config`, and what the host reads back of its engines (see the module doc). */
export const portLayers = ({ config, options, logger, identity, onWrite }: PortLayersInput): PortLayers => {
  const oracleDid = identity.oracleDid
  const clock = options.clock ?? Clock.layer
  // One pool and one connection for every port on them: a layer is built once per runtime, however
  // many ports it is provided to.
  const pg = databaseLayer(config)
  const redis =
    config.redis === undefined
      ? undefined
      : Redis.layerConnection({ url: config.redis.url, prefix: config.redis.prefix })
  // Windows and leases on Redis are judged on Redis's clock, which no host's clock skew moves;
  // a host that passes its own clock (tests move it) has them judged on that one.
  const redisTime = options.clock === undefined
  // Fail the boot, not the first user's request: migrations applied (the adapter's `ready`) and
  // Redis answering a PING, both checked (at once) and each dead one reported, naming its variable.
  const engineDown: Array<string> = []
  const noted = (variable: string) => (failure: { readonly message: string }) =>
    Effect.sync(() => void engineDown.push(`[boot-error] ${variable}: ${failure.message}`))
  const engineChecks = Layer.mergeAll(
    pg === undefined
      ? Layer.empty
      : Layer.effectDiscard(
          Effect.flatMap(Postgres.PgDatabase, (db) => Effect.catchAll(db.ready, noted("DATABASE_URL")))
        ).pipe(Layer.provide(pg)),
    redis === undefined
      ? Layer.empty
      : Layer.effectDiscard(
          Effect.flatMap(Redis.RedisConnection, (r) =>
            Effect.catchAll(Effect.asVoid(r.run("ping", (client) => client.ping())), noted("REDIS_URL"))
          )
        ).pipe(Layer.provide(redis))
  )
  const ledgerLayer = options.ledger ?? creditLedgerLayer(config, pg)
  const databases = layerUserDatabases({
    onWrite,
    directory: config.sqliteDatabasePath,
    maxOpen: config.sqliteMaxOpen,
    retention: config.sqliteKeepCheckpoints > 0 ? { keepCheckpoints: config.sqliteKeepCheckpoints } : false,
    // A thread whose stored state cannot be decoded is moved aside in its file; the session goes on.
    onDamagedThread: (did, report) =>
      logger.error("a thread's stored state could not be decoded; moved aside, the session starts afresh", {
        user: shortDid(did),
        threadId: report.threadId,
        checkpoints: report.checkpoints,
        error: report.error
      }),
    // Through the host's logger, so a damaged file's report lands where the operator looks.
    onOpenError: (e) =>
      e.movedTo === undefined
        ? logger.error("user database could not be opened; left in place", {
            reason: e.reason,
            path: e.path,
            error: e.message
          })
        : logger.error("user database could not be used as it was; moved aside, a fresh one started", {
            reason: e.reason,
            path: e.path,
            movedTo: e.movedTo,
            error: e.message
          })
  })
  // The per-user SQLite checkpointer of the embedded default, or the users' scoped views of
  // LangGraph's PostgresSaver (per user, so users' threads still do not share a namespace).
  const checkpointerLayer =
    pg === undefined
      ? Layer.effect(
          Checkpointer.typed<BaseCheckpointSaver>(),
          Effect.map(
            UserDatabases,
            (registry): Checkpointer.CheckpointerService<BaseCheckpointSaver> => ({
              forUser: (did) =>
                Effect.flatMap(Checkpointer.checkDid(did), (d) =>
                  Effect.try({
                    try: () => registry.checkpointerForUser(d),
                    catch: (error) =>
                      new Checkpointer.CheckpointerError({ reason: "unavailable", message: describe(error) })
                  })
                )
            })
          )
        )
      : Layer.provide(Postgres.layerCheckpointer, pg)
  // UCAN_REPLAY=once: each invocation is remembered until it expires, on Redis when hosts share
  // one (a replay may reach any of them), else in this process (docs/spec/wire.md#replay).
  const authLayer = (auth: Parameters<typeof UcanAuth.layer>[0]) =>
    config.ucanReplay === "reuse"
      ? UcanAuth.layer(auth)
      : Layer.provide(
          UcanAuth.layerSingleUse(auth),
          redis === undefined
            ? ReplayGuard.layerMemory
            : Layer.provide(Redis.layerReplayGuard({ serverTime: redisTime }), redis)
        )
  const services = Layer.mergeAll(
    authLayer({
      ...(identity.signer === undefined ? { oracleDid } : { oracleSigner: identity.signer }),
      resource: config.ucanResource,
      // docs/plugins.md#requiring-capabilities: the oracle grants, and whoever UCAN_GRANT_ISSUERS names.
      grantIssuers: [oracleDid, ...config.ucanGrantIssuers]
    }),
    options.rateLimiter ??
      (redis === undefined
        ? RateLimiter.layerMemory({ limit: config.throttleLimit, windowMs: config.throttleTtlMs })
        : // Redis down, each host limits on its own rather than answering 503 to every request
          // (docs/spec/pipeline.md#when-redis-is-down).
          Layer.effect(
            RateLimiter.RateLimiter,
            Effect.gen(function* () {
              const shared = yield* RateLimiter.RateLimiter
              const local = yield* RateLimiter.makeMemory({
                limit: config.throttleLimit,
                windowMs: config.throttleTtlMs
              })
              return yield* RateLimiter.withFallback(shared, local, {
                onUnavailable: (error) =>
                  logger.warn(
                    "the rate limiter's Redis is unavailable: this host limits on its own until it is back",
                    {
                      error: error.message
                    }
                  ),
                onRecovered: () =>
                  logger.info("the rate limiter's Redis answers again: limits are shared again")
              })
            })
          ).pipe(
            Layer.provide(
              Layer.provide(
                Redis.layerRateLimiter({
                  limit: config.throttleLimit,
                  windowMs: config.throttleTtlMs,
                  serverTime: redisTime
                }),
                redis
              )
            )
          )),
    ledgerLayer,
    options.sessions ??
      (pg === undefined ? layerSessionStore : Layer.provide(Postgres.layerSessionStore, pg)),
    options.runs ??
      (pg === undefined
        ? layerRunStore({ filename: config.runsDatabasePath })
        : redis === undefined
          ? Layer.provide(Postgres.layerRunStore(), pg)
          : // Runs in Postgres, their wake-ups across hosts on Redis pub/sub (docs/deployment.md).
            Layer.unwrapEffect(
              Effect.map(Redis.RunFanout, (fanout) => Postgres.layerRunStore({ fanout }))
            ).pipe(Layer.provide(pg), Layer.provide(Layer.provide(Redis.layerRunFanout, redis)))),
    options.turnLock ??
      (redis === undefined
        ? TurnLock.layerMemory
        : Layer.provide(Redis.layerTurnLock({ serverTime: redisTime }), redis)),
    options.turnControl ??
      (redis === undefined ? TurnControl.layerMemory : Layer.provide(Redis.layerTurnControl, redis)),
    // Waits beside the runs (`waits.sqlite`), or in Postgres, where any host answers them.
    pg === undefined
      ? layerWaitStore({ filename: join(dirname(config.runsDatabasePath), WAITS_FILE_NAME) })
      : Layer.provide(Postgres.layerWaitStore, pg),
    // Users' sealed OAuth connections (docs/oauth.md#at-rest): in each user's own database, which
    // Matrix sync carries to another host (an earlier host's `<data>/connections.sqlite` is moved
    // there user by user), or Postgres' `connections` table, where every host reads them.
    pg === undefined
      ? layerUserConnectionStore({ legacyFilename: connectionsFile(config.dataDir) })
      : Layer.provide(Postgres.layerConnectionStore, pg),
    checkpointerLayer
  ).pipe(
    // The engine checks are built first, on their own: a layer that fails on a dead engine would
    // otherwise interrupt the other engine's check before it noted its line (both dead: a line each).
    Layer.provide(engineChecks),
    Layer.provideMerge(databases),
    Layer.provideMerge(clock)
  )
  return { services, engineDown, pg, redis }
}
