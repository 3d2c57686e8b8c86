/**
 * MCP servers mounted as plugin specs in one call, for any host: the oracle server (through
 * host-node's `loadSources`), the MCP gateway, an AI SDK app (docs/ai-sdk.md#mcp-servers-and-skills).
 * The config is read (a file in the format MCP clients use, or the same object), every server is
 * listed (through the on-disk cache), and each becomes a spec whose tools call it through one
 * connection pool. Pass the specs, with any others (skills), to core's `CatalogSource.toPlugins`.
 */
import { resolve } from "node:path"
import type { CatalogSource, RuntimeLogger } from "@plugboard/core"
import type { Signer } from "@plugboard/ucan"
import { DEFAULT_CACHE_DIR } from "./Cache.js"
import * as McpConfig from "./Config.js"
import { type DescribePool, discover } from "./Discovery.js"
import { mcpSpecs } from "./McpPlugins.js"
import type { Connections } from "./oauth/Connections.js"
import { McpPool } from "./Pool.js"
import type { McpServerConfig } from "./Types.js"

/** An MCP config: a file path (relative to `cwd`), or the parsed object. */
export type McpServersInput = string | { readonly mcpServers: Readonly<Record<string, unknown>> }

/** Options of {@link mountMcpServers}. */
export interface MountOptions {
  /** What a relative config path, and a server's relative paths, are resolved against; default the process's. */
  readonly cwd?: string | undefined
  /** Where tool lists are cached; default `.plugboard/mcp-cache` under `cwd`. */
  readonly cacheDir?: string | undefined
  /** Ask every server even when cached. */
  readonly refresh?: boolean | undefined
  /**
   * The host's key, asked for only when a server sets `forwardUcan`: such a server refuses an
   * anonymous listing, so it is listed with the host's own invocation.
   */
  readonly signer?: (() => Promise<Signer | undefined>) | undefined
  /** Idle time after which a connection closes. */
  readonly idleMs?: number | undefined
  readonly logger?: RuntimeLogger | undefined
  /**
   * Each user's OAuth connections (`OAuthConnections.make`), for the `auth: "oauth"` servers:
   * their tools call with the turn's user's token (docs/oauth.md).
   */
  readonly oauth?: Pick<Connections, "headers" | "renew"> | undefined
}

/** The mounted servers: their specs, what to print, and the connections they hold. */
export interface MountedMcpServers {
  /** One spec per server, for `CatalogSource.toPlugins`. */
  readonly specs: ReadonlyArray<CatalogSource.DerivedPluginSpec>
  /** Hard problems of the config (each names its key path): a host stops boot on any. */
  readonly errors: ReadonlyArray<string>
  /** Unknown keys, servers that could not be listed (listed as unavailable), cache problems. */
  readonly warnings: ReadonlyArray<string>
  /** The servers of the config. */
  readonly servers: ReadonlyArray<McpServerConfig>
  /**
   * The protocol revision each listed server spoke (`2026-07-28`, `2025-11-25`, ...), by server
   * name, as its boot listing (or the cache entry it came from) recorded it; a server without
   * one (unreachable, or cached before plugboard recorded it) is absent.
   */
  readonly protocolVersions?: Readonly<Record<string, string>> | undefined
  /** The pool the tools call through; absent when no server was mounted. */
  readonly pool?: McpPool | undefined
  /** Closes every connection (stops stdio servers). Idempotent. */
  readonly close: () => Promise<void>
}

const readConfig = async (input: McpServersInput, cwd: string): Promise<McpConfig.ParsedConfig> =>
  typeof input === "string"
    ? McpConfig.readFile(resolve(cwd, input))
    : McpConfig.parse(input, { baseDir: cwd })

/**
 * Reads the config and lists every server. Never throws for a bad config or server: a malformed
 * config is in `errors`, an unreachable server is a warning and a spec listed as unavailable.
 */
export const mountMcpServers = async (
  input: McpServersInput,
  options: MountOptions = {}
): Promise<MountedMcpServers> => {
  const cwd = options.cwd ?? process.cwd()
  const parsed = await readConfig(input, cwd)
  const base = { errors: parsed.errors, servers: parsed.servers }
  if (parsed.errors.length > 0 || parsed.servers.length === 0) {
    return { ...base, specs: [], warnings: parsed.warnings, close: async () => {} }
  }
  const logger = options.logger
  const pool = new McpPool({
    ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
    ...(logger === undefined ? {} : { logger })
  })
  const forwards = parsed.servers.some((s) => s.forwardUcan !== undefined)
  const signer = forwards ? await options.signer?.() : undefined
  // Listing is not a use: each server's connection closes as soon as its list is read, so a
  // catalog of hundreds of servers never keeps more processes than are being asked at once
  // (discovery's concurrency), nor any for the idle period.
  const listings = new Set<Promise<unknown>>()
  const listing: DescribePool = {
    describe: (server, request) => {
      const once = new McpPool(logger === undefined ? {} : { logger })
      const asked = once.describe(server, request).finally(() => once.close())
      listings.add(asked)
      return asked
    }
  }
  const discovered = await discover(parsed.servers, {
    pool: listing,
    signer,
    cacheDir: options.cacheDir ?? resolve(cwd, DEFAULT_CACHE_DIR),
    refresh: options.refresh,
    logger
  })
  // Discovery gives up on a server at its timeout without waiting; its listing, aborted, settles
  // once its pool has stopped the server (a stdio child and its process group): none outlives the mount.
  await Promise.allSettled([...listings])
  const warnings = [...parsed.warnings]
  for (const d of discovered) {
    warnings.push(...d.warnings)
    if (d.error !== undefined)
      warnings.push(`${d.error} Its plugin '${d.server.name}' is listed as unavailable.`)
  }
  const protocolVersions: Record<string, string> = {}
  for (const d of discovered) {
    const version = d.description?.protocolVersion
    if (version !== undefined) protocolVersions[d.server.name] = version
  }
  let closed: Promise<void> | undefined
  return {
    ...base,
    specs: mcpSpecs(discovered, { pool, logger, oauth: options.oauth }),
    warnings,
    protocolVersions,
    pool,
    close: () => {
      closed ??= pool.close()
      return closed
    }
  }
}
