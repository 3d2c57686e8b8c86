/**
 * Boot-time discovery: what every configured MCP server says about itself, from the cache when
 * it has the answer, else by asking the server. Servers are asked in parallel but at most a few
 * at once (a config of hundreds of stdio servers must not fork hundreds of processes together),
 * each bounded by its own timeout. A server that fails is a result, not an exception: boot goes
 * on, and its plugin is listed as unavailable with the reason.
 */
import type { RuntimeLogger } from "@plugboard/core"
import { describe } from "@plugboard/core"
import type { Signer } from "@plugboard/ucan"
import { Data } from "effect"
import * as Cache from "./Cache.js"
import { isUnauthorized } from "./Connection.js"
import type { McpDescription, McpRequestOptions, McpServerConfig } from "./Types.js"
import { invocationHeaders, mintMcpInvocation, userConnectionKey } from "./Ucan.js"

/** The part of the connection pool discovery uses. */
export interface DescribePool {
  readonly describe: (server: McpServerConfig, options?: McpRequestOptions) => Promise<McpDescription>
}

/** Options of {@link discover}. */
export interface DiscoverOptions {
  readonly pool: DescribePool
  /** Where descriptions are cached (`Cache.DEFAULT_CACHE_DIR` is the host's default). */
  readonly cacheDir: string
  /** Servers asked at once; default 8. */
  readonly concurrency?: number | undefined
  /** Ask every server even when cached (the cache is still the fallback when one fails). */
  readonly refresh?: boolean | undefined
  readonly logger?: RuntimeLogger | undefined
  /**
   * The oracle's key. A `forwardUcan` server may check every request, its listing included: it
   * is asked with an invocation the oracle mints for itself (the server sees the oracle as the
   * caller), on a connection of the oracle's own. Without it, such a server is asked with none.
   */
  readonly signer?: Signer | undefined
  /** The clock of the cache entries' `expiresAt` (epoch ms; default `Date.now`); tests pass their own. */
  readonly now?: (() => number) | undefined
}

/** What discovery learned about one server. */
export interface Discovered {
  readonly server: McpServerConfig
  /** Absent when the server failed and nothing was cached. */
  readonly description?: McpDescription | undefined
  /** The description came from the cache (a hit, or the fallback after a failure). */
  readonly fromCache: boolean
  /** Why there is no description: a sentence naming the server and what failed. */
  readonly error?: string | undefined
  /** What the operator should know (an unusable cache file, a failure the cache covered). */
  readonly warnings: ReadonlyArray<string>
}

/** The default number of servers asked at once. */
export const DEFAULT_CONCURRENCY = 8

const sentence = (text: string): string => {
  const t = text.trim()
  return /[.!?]$/.test(t) ? t : `${t}.`
}

/** A server did not finish describing itself within its `timeoutMs` (internal: becomes a sentence). */
class DiscoveryTimeout extends Data.TaggedError("DiscoveryTimeout")<{}> {}

/**
 * Asks one server, bounded by its `timeoutMs` over the whole exchange (connect, initialize and
 * every page of tools/list), whatever the pool bounds per request. On timeout the request is
 * aborted, so the pool can drop a server that never answered.
 */
const describeBounded = async (
  pool: DescribePool,
  server: McpServerConfig,
  auth: Pick<McpRequestOptions, "headers" | "connectionKey">
): Promise<McpDescription> => {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new DiscoveryTimeout())
      controller.abort(new Error(`did not answer within ${server.timeoutMs} ms`))
    }, server.timeoutMs)
  })
  try {
    // Through `then`, so a pool that throws instead of rejecting still lands in this race.
    const asked = Promise.resolve().then(() =>
      pool.describe(server, { ...auth, timeoutMs: server.timeoutMs, signal: controller.signal })
    )
    // The loser's rejection is handled: an abort after the timeout must not go unhandled.
    asked.catch(() => {})
    return await Promise.race([asked, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** The oracle's own invocation for a `forwardUcan` server's listing (none without a signer). */
const bootAuth = async (
  server: McpServerConfig,
  signer: Signer | undefined
): Promise<Pick<McpRequestOptions, "headers" | "connectionKey">> => {
  const forward = server.forwardUcan
  if (forward === undefined || signer === undefined) return {}
  const token = await mintMcpInvocation({
    signer,
    server: server.name,
    audience: forward.audience,
    userDid: signer.did()
  })
  return {
    headers: invocationHeaders(forward, token),
    connectionKey: userConnectionKey(server.name, signer.did())
  }
}

/** The failure of a server, as the sentence the operator and the model are shown. */
const failureOf = (server: McpServerConfig, cause: unknown): string =>
  cause instanceof DiscoveryTimeout
    ? `MCP server '${server.name}' did not answer within ${server.timeoutMs} ms.`
    : server.oauth !== undefined && isUnauthorized(cause)
      ? `MCP server '${server.name}' signs each user in with OAuth: its tools are listed with a connected user's token, and no list is cached yet (docs/oauth.md#the-tool-list).`
      : (() => {
          const message = describe(cause)
          // The pool's errors name the server already ('name'); say which one when an error does not.
          return sentence(
            message.includes(`'${server.name}'`) ? message : `MCP server '${server.name}' failed: ${message}`
          )
        })()

/**
 * Describes every server: from the cache on a hit (no process is started, no request sent),
 * else from the server (then cached); an entry past the `ttlMs` its server gave is no hit.
 * Results are in the order of `servers`. Never rejects for a server's failure: a server that
 * fails with a cached description keeps it (with a warning), one that fails without gets `error`.
 */
export const discover = async (
  servers: ReadonlyArray<McpServerConfig>,
  options: DiscoverOptions
): Promise<ReadonlyArray<Discovered>> => {
  const asked = options.concurrency ?? DEFAULT_CONCURRENCY
  const concurrency = Number.isFinite(asked) ? Math.max(1, Math.floor(asked)) : DEFAULT_CONCURRENCY
  const logger = options.logger
  const results: Discovered[] = new Array(servers.length)

  const one = async (server: McpServerConfig): Promise<Discovered> => {
    const warnings: string[] = []
    const clock = options.now ?? Date.now
    const cached = await Cache.read(options.cacheDir, server, new Date(clock()))
    if (cached.warning !== undefined) warnings.push(cached.warning)
    if (cached.entry !== undefined && cached.expired !== true && options.refresh !== true) {
      return { server, description: cached.entry.description, fromCache: true, warnings }
    }
    let description: McpDescription
    try {
      description = await describeBounded(options.pool, server, await bootAuth(server, options.signer))
    } catch (cause) {
      const error = failureOf(server, cause)
      if (cached.entry !== undefined) {
        warnings.push(
          `${error} Using its tool list cached at ${cached.entry.fetchedAt}${cached.expired === true ? `, past the ttl the server gave it (${cached.entry.expiresAt})` : ""}.`
        )
        return { server, description: cached.entry.description, fromCache: true, warnings }
      }
      return { server, fromCache: false, error, warnings }
    }
    try {
      await Cache.write(options.cacheDir, server, description, new Date(clock()))
    } catch (cause) {
      warnings.push(
        `The tool list of MCP server '${server.name}' could not be cached in ${options.cacheDir}: ${describe(cause)}`
      )
    }
    return { server, description, fromCache: false, warnings }
  }

  let next = 0
  const worker = async (): Promise<void> => {
    while (next < servers.length) {
      const index = next++
      const server = servers[index]!
      let result: Discovered
      try {
        result = await one(server)
      } catch (cause) {
        // Only a bug gets here (the steps above catch what a server can do); still never throw.
        result = { server, fromCache: false, error: failureOf(server, cause), warnings: [] }
      }
      for (const w of result.warnings) logger?.warn(w, { server: server.name })
      if (result.error !== undefined) logger?.warn(result.error, { server: server.name })
      results[index] = result
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, servers.length) }, worker))
  return results
}
