/**
 * Discovered MCP servers as core's derived plugin specs: one server, one spec. Everything about
 * what the plugin looks like (the derived manifest, the override, the policy, the names, what an
 * unreachable server shows) is core's `CatalogSource`; this module only wires each tool to a
 * call through the connection pool, with the turn's abort signal, progress reporting, timeout
 * and, for `forwardUcan` servers, the requesting user's invocation on a connection of their own.
 */
import { CatalogSource, type RuntimeContext, type RuntimeLogger, type ToolOutput } from "@plugboard/core"
import { Data, Effect, Either } from "effect"
import { isUnauthorized } from "./Connection.js"
import type { Discovered } from "./Discovery.js"
import type { Connections } from "./oauth/Connections.js"
import { OAuthError } from "./oauth/OAuthError.js"
import type { McpRequestOptions, McpServerConfig, McpToolDescription } from "./Types.js"
import { invocationHeaders, userConnectionKey } from "./Ucan.js"

/** The part of the connection pool the plugins' tools use. */
export interface CallPool {
  readonly call: (
    server: McpServerConfig,
    tool: string,
    args: Readonly<Record<string, unknown>>,
    options?: McpRequestOptions
  ) => Promise<ToolOutput.ToolOutput>
  /** The server's tools as last listed (refreshed on `tools/list_changed`); absent before any connection. */
  readonly currentTools: (serverName: string) => ReadonlyArray<McpToolDescription> | undefined
}

/** Options of {@link mcpSpecs}. */
export interface McpSpecsOptions {
  readonly pool: CallPool
  readonly logger?: RuntimeLogger | undefined
  /**
   * Each user's OAuth connections (`OAuthConnections.make`), for servers with `auth: "oauth"`;
   * without it, such a server's calls are refused with the reason.
   */
  readonly oauth?: Pick<Connections, "headers" | "renew"> | undefined
}

/**
 * Thrown by a `forwardUcan` server's tool when the turn carries no invocation for it. A tool
 * handler is plain async code: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
 */
export class MissingInvocationError extends Data.TaggedError("MissingInvocationError")<{
  readonly message: string
}> {
  constructor(message: string) {
    super({ message })
  }
}

/**
 * The headers and connection of one call. A `forwardUcan` server gets the user's invocation
 * from the graph state, on a connection keyed by server and user so that no user's credentials
 * ever travel on another user's connection; a call without an invocation is refused here, before
 * anything is sent, rather than made anonymously.
 */
export const perUserOptions = (
  server: McpServerConfig,
  context: RuntimeContext
): Pick<McpRequestOptions, "headers" | "connectionKey"> => {
  const forward = server.forwardUcan
  if (forward === undefined) return {}
  const token = context.history.state.mcpUcanContext?.invocations?.[server.name]
  if (typeof token !== "string" || token.length === 0) {
    throw new MissingInvocationError(
      `MCP server '${server.name}' needs the user's UCAN invocation, and this turn carries none for it (mcpUcanContext.invocations['${server.name}']); the call was not made.`
    )
  }
  return {
    headers: invocationHeaders(forward, token),
    connectionKey: userConnectionKey(server.name, context.user.did)
  }
}

/**
 * The headers and connection of a call to an `auth: "oauth"` server: the calling user's token
 * (refreshed when due), on a connection of their own. A user without a usable connection gets
 * the `OAuthError` (`needs-connect`, saying what to do) as the call's failure: the model sees it
 * as the tool's answer, and nothing is sent to the server.
 */
export const oauthOptions = async (
  server: McpServerConfig,
  context: RuntimeContext,
  oauth: Pick<Connections, "headers" | "renew"> | undefined
): Promise<Pick<McpRequestOptions, "headers" | "connectionKey">> => {
  if (server.oauth === undefined) return {}
  if (oauth === undefined) {
    throw new OAuthError({
      reason: "invalid",
      server: server.name,
      message: `MCP server '${server.name}' signs each user in with OAuth, and this host keeps no OAuth connections (CONNECTIONS_KEY is unset); the call was not made.`
    })
  }
  const headers = await Effect.runPromise(Effect.either(oauth.headers(context.user.did, server.name)))
  if (Either.isLeft(headers)) throw headers.left
  return { headers: headers.right, connectionKey: userConnectionKey(server.name, context.user.did) }
}

const toSourceTool = (
  server: McpServerConfig,
  tool: McpToolDescription,
  pool: CallPool,
  oauth: Pick<Connections, "headers" | "renew"> | undefined
): CatalogSource.SourceTool => ({
  name: tool.name,
  ...(tool.title === undefined ? {} : { title: tool.title }),
  ...(tool.description === undefined ? {} : { description: tool.description }),
  inputSchema: tool.inputSchema,
  ...(tool.destructiveHint === true ? { destructiveHint: true } : {}),
  // Async, so a refused call (no invocation) is a rejection like any failed call, never a throw.
  call: async (args, context) => {
    const progress = context.toolCall?.progress
    const ask = context.toolCall?.ask
    const send = (credentials: Pick<McpRequestOptions, "headers" | "connectionKey">) =>
      pool.call(server, tool.name, args, {
        signal: context.signal,
        timeoutMs: server.timeoutMs,
        ...(progress === undefined ? {} : { onProgress: progress }),
        // The server's elicitations during this call are the user's `input` waits (docs/waiting.md).
        ...(ask === undefined ? {} : { onElicit: ask }),
        ...perUserOptions(server, context),
        ...credentials
      })
    const credentials = await oauthOptions(server, context, oauth)
    try {
      return await send(credentials)
    } catch (error) {
      // The server refused the user's token (revoked, or expired early): renew it once and send
      // again; the refused request was not read. A refused renewal is `needs-connect`.
      if (server.oauth === undefined || oauth === undefined || !isUnauthorized(error)) throw error
      const renewed = await Effect.runPromise(Effect.either(oauth.renew(context.user.did, server.name)))
      if (Either.isLeft(renewed)) throw renewed.left
      return send({ ...credentials, headers: { authorization: `Bearer ${renewed.right}` } })
    }
  }
})

/** The pool's current tools as source tools, rebuilt only when the pool's list changed (read per request). */
const laterTools = (
  server: McpServerConfig,
  pool: CallPool,
  oauth: Pick<Connections, "headers" | "renew"> | undefined
): (() => ReadonlyArray<CatalogSource.SourceTool>) => {
  let seen: ReadonlyArray<McpToolDescription> | undefined
  let tools: ReadonlyArray<CatalogSource.SourceTool> = []
  return () => {
    const current = pool.currentTools(server.name)
    if (current !== seen) {
      seen = current
      tools = (current ?? []).map((t) => toSourceTool(server, t, pool, oauth))
    }
    return tools
  }
}

/**
 * One spec per discovered server, in order. A server with a description (fresh or cached) gets
 * the manifest core derives from it and the tools the operator's policy keeps (`mcpManifest`); one without gets core's placeholder manifest
 * and `unavailable` set to why, so it is listed and `load_capability` explains. Tools the server
 * adds later (`tools/list_changed`, seen by the pool) are offered through `laterTools`.
 */
export const mcpSpecs = (
  discovered: ReadonlyArray<Discovered>,
  options: McpSpecsOptions
): ReadonlyArray<CatalogSource.DerivedPluginSpec> =>
  discovered.map(({ server, description, error }) => {
    const pool = options.pool
    const common = {
      name: server.name,
      source: {
        kind: "mcp" as const,
        server: server.name,
        ...(description?.protocolVersion === undefined
          ? {}
          : { protocolVersion: description.protocolVersion })
      },
      ...(server.manifest === undefined ? {} : { override: server.manifest }),
      ...(server.tools === undefined ? {} : { policy: server.tools })
    }
    if (description === undefined) {
      options.logger?.debug(`MCP server '${server.name}' is listed as unavailable.`, { server: server.name })
      return {
        ...common,
        manifest: CatalogSource.placeholderManifest(server.name),
        tools: [],
        unavailable:
          error ?? `MCP server '${server.name}' could not be reached at boot and no tool list is cached.`
      }
    }
    return {
      ...common,
      // Derived by core from the tools kept after `tools.allow` / `tools.deny`, never from all of them.
      manifest: CatalogSource.mcpManifest(server.name, description),
      tools: description.tools.map((t) => toSourceTool(server, t, pool, options.oauth)),
      laterTools: laterTools(server, pool, options.oauth)
    }
  })
