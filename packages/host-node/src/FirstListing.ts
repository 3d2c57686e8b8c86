/**
 * An `auth: "oauth"` MCP server's tool list, read at its first connect (docs/oauth.md#the-tool-list).
 * Boot lists servers with no user, and such a server refuses that, so its plugin is unavailable
 * since boot. When a user connects it, the host reads the list with that user's token (on their own
 * connection), caches it where discovery reads it (the next boot starts from it), and hands it to
 * `offer`, which builds the catalog again with the plugin (`CatalogRelist.ts`) and replaces it for
 * the turns that start after. One listing at a time: of two users connecting together, the second
 * finds the list read and does nothing.
 */
import { describe, type RuntimeLogger } from "@plugboard/core"
import {
  cacheToolList,
  type McpDescription,
  type McpPool,
  type McpServerConfig,
  type OAuthConnections
} from "@plugboard/mcp"

/**
 * What a first listing did: `offered` (the plugin is in the catalog now), `refused` (read and
 * cached, but the plugin cannot join the catalog: it stays unavailable with the reason), `cached`
 * (read and cached; the host has no rebuild, so the next boot offers it), or nothing (no listing
 * was due, or it failed: logged, the connection stays made).
 */
export type Listed = "offered" | "refused" | "cached" | undefined

/** What the host's callback page says of a first listing (the gateway's says it its own way). */
export const LISTED_TEXT: Record<NonNullable<Listed> | "none", string> = {
  offered: " Its tools are offered from now on.",
  refused: " Its tools could not be offered: the host's log and /health/plugins say why.",
  cached: " Its tools are offered once the host restarts.",
  none: ""
}

/** What `makeFirstListing` needs. */
export interface FirstListingInput {
  /** The OAuth servers whose plugin is unavailable since boot (no list cached). */
  readonly unlisted: ReadonlySet<string>
  readonly pool?: McpPool | undefined
  readonly cacheDir: string
  readonly logger: RuntimeLogger
  /**
   * Builds the catalog with the server's list and replaces it (`App.ts`): true when the plugin
   * joined it, false when it stays unavailable (the reason is in the catalog and the log).
   */
  readonly offer?: ((server: McpServerConfig, description: McpDescription) => Promise<boolean>) | undefined
}

/** The first listings of a host's OAuth servers. */
export interface FirstListing {
  /** Whether `server`'s plugin waits for its first listing (a connect is what makes it available). */
  readonly waits: (server: string) => boolean
  /** After `user` connected `server`: its first listing, when due. Never rejects. */
  readonly list: (
    server: McpServerConfig,
    user: string,
    connections: OAuthConnections.Connections
  ) => Promise<Listed>
}

/** The first listings over `input`; see the module doc. */
export const makeFirstListing = (input: FirstListingInput): FirstListing => {
  const waiting = new Set(input.unlisted)
  let turn: Promise<unknown> = Promise.resolve()
  const once = async (
    server: McpServerConfig,
    user: string,
    connections: OAuthConnections.Connections
  ): Promise<Listed> => {
    const pool = input.pool
    if (pool === undefined || !waiting.has(server.name)) return undefined
    let description: McpDescription
    try {
      description = await cacheToolList(server, user, { connections, pool, cacheDir: input.cacheDir })
    } catch (error) {
      input.logger.warn("the tool list of an OAuth server could not be read with a connected user's token", {
        server: server.name,
        error: describe(error)
      })
      return undefined
    }
    // Read once: whatever the catalog makes of it, a later connect does not read it again.
    waiting.delete(server.name)
    if (input.offer === undefined) {
      input.logger.warn(
        "the tool list of an OAuth server was cached with a connected user's token: its plugin is offered from the host's next start",
        { server: server.name }
      )
      return "cached"
    }
    const offered = await input.offer(server, description).catch((error: unknown) => {
      input.logger.error("the catalog could not be built with an OAuth server's tool list", {
        server: server.name,
        error: describe(error)
      })
      return false
    })
    return offered ? "offered" : "refused"
  }
  return {
    waits: (server) => waiting.has(server),
    list: (server, user, connections) => {
      const next = turn.then(() => once(server, user, connections))
      turn = next.catch(() => {})
      return next
    }
  }
}
