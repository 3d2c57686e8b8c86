/**
 * The tool list of an `auth: "oauth"` server. Discovery lists servers once, at boot, with no
 * user, and such a server refuses an anonymous listing; so its list is read with a connected
 * user's token (their own connection) and cached where discovery reads it, and the next mount
 * offers the server's tools to every user, each calling with their own token. The list is the
 * same for everyone only if the server lists the same tools to every user: a server that shows
 * each user other tools is offered what the listing user saw.
 */
import { Effect, Either } from "effect"
import * as Cache from "../Cache.js"
import type { McpDescription, McpRequestOptions, McpServerConfig } from "../Types.js"
import { userConnectionKey } from "../Ucan.js"
import type { Connections } from "./Connections.js"

/** What {@link cacheToolList} needs. */
export interface ListingOptions {
  readonly connections: Pick<Connections, "headers">
  readonly pool: {
    readonly describe: (server: McpServerConfig, options?: McpRequestOptions) => Promise<McpDescription>
  }
  /** The cache discovery reads (the host's `MCP_CACHE_DIR`). */
  readonly cacheDir: string
}

/**
 * Lists `server`'s tools as `user` and caches them. Rejects with the `OAuthError` when the user
 * has no usable connection, or the pool's `McpError` when the listing fails; nothing is cached then.
 */
export const cacheToolList = async (
  server: McpServerConfig,
  user: string,
  options: ListingOptions
): Promise<McpDescription> => {
  if (server.oauth === undefined) {
    throw new TypeError(
      `MCP server '${server.name}' does not sign its users in with OAuth (no auth: "oauth").`
    )
  }
  const headers = await Effect.runPromise(Effect.either(options.connections.headers(user, server.name)))
  if (Either.isLeft(headers)) throw headers.left
  const description = await options.pool.describe(server, {
    headers: headers.right,
    connectionKey: userConnectionKey(server.name, user)
  })
  await Cache.write(options.cacheDir, server, description)
  return description
}
