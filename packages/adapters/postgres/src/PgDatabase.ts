/**
 * One Postgres database shared by the stores of this folder: a connection pool, the schema they
 * live in, and their migrations, applied at first use (docs/deployment.md).
 *
 * Every store yields `ready` before its first query: it applies the missing migrations once per
 * process (under an advisory lock, so hosts booting together do not race) and is retried after a
 * failure, so a database that comes up late is picked up by the next call. A host may also
 * yield `ready` at boot to fail fast.
 */

import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { FastJsonPlusSerializer } from "@plugboard/serde"
import { Config, type ConfigError, Context, Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { MIGRATIONS, migrate, quoteIdent, SCHEMA_VERSION } from "./internal/migrations.js"
import { type Connection, PgFailure, redactUrl, toFailure } from "./internal/sql.js"

export { PgFailure } from "./internal/sql.js"
export { SCHEMA_VERSION }

/** How to reach the database. */
export interface PgDatabaseOptions {
  /** `postgres://user:password@host:port/database`. Its password never appears in an error. */
  readonly url: string
  /** The schema holding every table, LangGraph's checkpoints included; default `plugboard`. */
  readonly schema?: string | undefined
  /**
   * Most connections of the pool (default 10, at least 2: the migrations hold one while
   * LangGraph's setup takes another).
   */
  readonly maxConnections?: number | undefined
  /** How long a connection attempt may take before failing `unavailable` (default 5000 ms). */
  readonly connectTimeoutMs?: number | undefined
}

/** A database handle: what the stores of this folder are built on. */
export interface PgDatabaseService extends Connection {
  /** The schema's name, unquoted. */
  readonly schemaName: string
  /** The URL with its password hidden, for logs. */
  readonly target: string
  /** LangGraph's saver on this pool and schema, shared by every user's scoped view of it. */
  readonly saver: PostgresSaver
  /** Applies the missing migrations, once per process (retried after a failure). */
  readonly ready: Effect.Effect<void, PgFailure>
}

/** The database the Postgres stores use. */
export class PgDatabase extends Context.Tag("@plugboard/postgres/PgDatabase")<
  PgDatabase,
  PgDatabaseService
>() {}

/** The default schema. */
export const DEFAULT_SCHEMA = "plugboard"

// Schema names reach SQL inside quotes, and LangGraph's saver quotes them without escaping:
// allow only plain identifiers.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Opens a pool for the life of the scope (no connection is made until the first query). Fails
 * only on bad options; an unreachable server fails the first operation instead.
 */
export const make = (
  options: PgDatabaseOptions
): Effect.Effect<PgDatabaseService, PgFailure, import("effect").Scope.Scope> =>
  Effect.gen(function* () {
    const schemaName = options.schema ?? DEFAULT_SCHEMA
    if (!SCHEMA_NAME.test(schemaName)) {
      return yield* Effect.fail(
        new PgFailure({
          message: `schema must be a lower-case identifier (a-z, 0-9, _), got '${schemaName}'`
        })
      )
    }
    const maxConnections = options.maxConnections ?? 10
    if (!Number.isSafeInteger(maxConnections) || maxConnections < 2) {
      return yield* Effect.fail(
        new PgFailure({ message: `maxConnections must be an integer of at least 2, got ${maxConnections}` })
      )
    }
    const url = options.url
    const target = redactUrl(url)
    if (!/^postgres(ql)?:\/\//.test(url)) {
      return yield* Effect.fail(new PgFailure({ message: `not a postgres:// URL: ${target}` }))
    }
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new pg.Pool({
          connectionString: url,
          max: maxConnections,
          connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
          application_name: "plugboard"
        })
        // An idle client losing its server emits here; without a listener Node would crash the
        // process. The next query gets a fresh client or a typed failure.
        pool.on("error", () => undefined)
        return pool
      }),
      (pool) => Effect.promise(() => pool.end().catch(() => undefined))
    )
    // The stock serializer's reader costs a promise turn per property of every message, which
    // made a long thread's every load slower (docs/benchmarks.md, `pnpm bench pgconversation`).
    const saver = new PostgresSaver(pool, new FastJsonPlusSerializer(), { schema: schemaName })
    let ready: Promise<void> | undefined
    const runMigrations = async () => {
      const client = await pool.connect()
      try {
        await migrate(client, schemaName, () => saver.setup())
      } finally {
        client.release()
      }
    }
    return {
      pool,
      schema: quoteIdent(schemaName),
      schemaName,
      url,
      target,
      saver,
      ready: Effect.tryPromise({
        try: () => {
          ready ??= runMigrations().catch((error) => {
            ready = undefined
            throw error
          })
          return ready
        },
        catch: toFailure(url, `migrating schema ${schemaName}`)
      })
    }
  })

/** The database as a layer. */
export const layer = (options: PgDatabaseOptions): Layer.Layer<PgDatabase, PgFailure> =>
  Layer.scoped(PgDatabase, make(options))

/**
 * The database from the environment: `DATABASE_URL` (required), `DATABASE_SCHEMA` (default
 * `plugboard`), `DATABASE_POOL_MAX` (default 10).
 */
export const layerConfig: Layer.Layer<PgDatabase, PgFailure | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const url = yield* Config.redacted("DATABASE_URL")
    const schema = yield* Config.option(Config.string("DATABASE_SCHEMA"))
    const maxConnections = yield* Config.integer("DATABASE_POOL_MAX").pipe(Config.withDefault(10))
    return layer({ url: Redacted.value(url), schema: Option.getOrUndefined(schema), maxConnections })
  })
)

/** The migrations' versions and names, newest last (for diagnostics). */
export const migrations: ReadonlyArray<{ readonly version: number; readonly name: string }> = MIGRATIONS.map(
  ({ version, name }) => ({ version, name })
)
