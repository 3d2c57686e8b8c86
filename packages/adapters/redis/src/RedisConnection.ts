/**
 * One Redis connection shared by the coordination ports of this folder (docs/deployment.md, `REDIS_URL`):
 * the rate limiter, the turn lock and run fan-out. Keys live under a prefix, so several
 * deployments (or test files) can share a server.
 *
 * A dead server must fail a request quickly with the port's `unavailable` error, never hang it:
 * a command is retried over one reconnection at most and times out after `commandTimeoutMs`,
 * while the client keeps reconnecting in the background for the next request.
 */
import { createHash } from "node:crypto"
import { describe } from "@plugboard/core"
import { Config, type ConfigError, Context, Data, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { Redis } from "ioredis"

/** A Redis command failed. Internal: each port turns it into its own `unavailable` error. */
export class RedisFailure extends Data.TaggedError("RedisFailure")<{ readonly message: string }> {}

/** How to reach Redis. */
export interface RedisOptions {
  /** `redis://[:password@]host:port[/db]` (or `rediss://`). Its password never appears in an error. */
  readonly url: string
  /** Prefix of every key and channel; default `plugboard:`. */
  readonly prefix?: string | undefined
  /** How long a command may take before failing (default 2000 ms). */
  readonly commandTimeoutMs?: number | undefined
  /** How long a connection attempt may take (default 2000 ms). */
  readonly connectTimeoutMs?: number | undefined
}

/** A connection: the client, the key prefix, and how to run a command or a script. */
export interface RedisConnectionService {
  readonly client: Redis
  readonly prefix: string
  /** The URL with its password hidden, for messages. */
  readonly target: string
  /** Runs a command, turning any failure into a `RedisFailure` that names the server. */
  readonly run: <A>(doing: string, command: (client: Redis) => Promise<A>) => Effect.Effect<A, RedisFailure>
  /** Runs a Lua script by its SHA (loading it on the first NOSCRIPT). */
  readonly script: (
    lua: string
  ) => (
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>
  ) => Effect.Effect<unknown, RedisFailure>
  /** A second connection with the same options (a subscriber cannot run other commands). */
  readonly duplicate: () => Redis
  /** Why the last connection attempt failed, if it did. */
  readonly lastError: () => string | undefined
}

/** The Redis connection the coordination ports use. */
export class RedisConnection extends Context.Tag("@plugboard/redis/RedisConnection")<
  RedisConnection,
  RedisConnectionService
>() {}

/** The default key prefix. */
export const DEFAULT_PREFIX = "plugboard:"

/** The URL with its password (and a user's, if any) replaced by `***`. */
export const redactUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "<unparsable Redis URL>"
  }
}

const passwordOf = (url: string): string => {
  try {
    return decodeURIComponent(new URL(url).password)
  } catch {
    return ""
  }
}

/** Opens a connection for the life of the scope. Fails only on a malformed URL. */
export const make = (
  options: RedisOptions
): Effect.Effect<RedisConnectionService, RedisFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const url = options.url
    const target = redactUrl(url)
    if (!/^rediss?:\/\//.test(url)) {
      return yield* Effect.fail(new RedisFailure({ message: `not a redis:// URL: ${target}` }))
    }
    const password = passwordOf(url)
    const redact = (message: string) => {
      let out = message.split(url).join(target)
      if (password.length > 0) out = out.split(password).join("***")
      return out
    }
    let lastError: string | undefined
    const settings = {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      // Keep reconnecting in the background, backing off to once a second.
      retryStrategy: (times: number) => Math.min(times * 100, 1000)
    }
    const watch = (client: Redis) => {
      // Without a listener ioredis logs every failed reconnection; record the last reason instead.
      client.on("error", (error: Error & { code?: string }) => {
        lastError = redact(
          error.code !== undefined && !error.message.includes(error.code)
            ? `${error.message} (${error.code})`
            : error.message
        )
      })
      client.on("ready", () => {
        lastError = undefined
      })
      return client
    }
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => watch(new Redis(url, settings))),
      (c) => Effect.sync(() => c.disconnect())
    )
    client.connect().catch(() => undefined)

    const run = <A>(doing: string, command: (c: Redis) => Promise<A>) =>
      Effect.tryPromise({
        try: () => command(client),
        catch: (error) => {
          const message = describe(error)
          const why =
            lastError !== undefined && !message.includes(lastError) ? `${lastError}; ${message}` : message
          return new RedisFailure({ message: redact(`${doing} on ${target} failed: ${why}`) })
        }
      })

    const script = (lua: string) => {
      const sha = createHash("sha1").update(lua).digest("hex")
      return (keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) =>
        run("script", async (c) => {
          try {
            return await c.evalsha(sha, keys.length, ...keys, ...args)
          } catch (error) {
            if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error
            return await c.eval(lua, keys.length, ...keys, ...args)
          }
        })
    }

    return {
      client,
      prefix: options.prefix ?? DEFAULT_PREFIX,
      target,
      run,
      script,
      duplicate: () => watch(client.duplicate()),
      lastError: () => lastError
    }
  })

/** The connection as a layer. */
export const layer = (options: RedisOptions): Layer.Layer<RedisConnection, RedisFailure> =>
  Layer.scoped(RedisConnection, make(options))

/** The connection from the environment: `REDIS_URL` (required), `REDIS_PREFIX` (default `plugboard:`). */
export const layerConfig: Layer.Layer<RedisConnection, RedisFailure | ConfigError.ConfigError> =
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const url = yield* Config.redacted("REDIS_URL")
      const prefix = yield* Config.option(Config.string("REDIS_PREFIX"))
      return layer({ url: Redacted.value(url), prefix: Option.getOrUndefined(prefix) })
    })
  )
