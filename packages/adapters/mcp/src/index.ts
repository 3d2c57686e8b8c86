/**
 * `@plugboard/mcp` — MCP servers as plugins: the config file, connections, discovery
 * with an on-disk cache, and calls. What a server becomes in the catalog is core's rule
 * (`CatalogSource`); this adapter reads servers and translates. And the other way round, the
 * gateway (`makeGateway`): a catalog served as an MCP server, under core's rules.
 */
export * as McpCache from "./Cache.js"
export * as McpConfig from "./Config.js"
export {
  DEFAULT_CONCURRENCY,
  type DescribePool,
  type Discovered,
  type DiscoverOptions,
  discover as discoverMcpServers
} from "./Discovery.js"
export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_SESSION_IDLE_MS,
  GATEWAY_CACHE_HINT,
  type Gateway,
  type GatewayConnection,
  GatewayHttp,
  type GatewayHttpOptions,
  type GatewayOptions,
  makeGateway,
  NO_THREAD_NOTE,
  THREAD_HEADER,
  THREAD_PARAMETER
} from "./Gateway.js"
export { isMcpError, McpError, type McpErrorReason } from "./McpError.js"
export {
  type CallPool,
  type McpSpecsOptions,
  MissingInvocationError,
  mcpSpecs,
  perUserOptions
} from "./McpPlugins.js"
export {
  type McpServersInput,
  type MountedMcpServers,
  type MountOptions,
  mountMcpServers
} from "./Mount.js"
/** The AES-256-GCM cipher sealing users' OAuth connections at rest (`CONNECTIONS_KEY`). */
export * as ConnectionsCipher from "./oauth/Cipher.js"
/** The host's Client ID Metadata Document: its client identity where an authorization server fetches it. */
export * as ClientMetadata from "./oauth/ClientMetadata.js"
/** Each user's OAuth connections to remote MCP servers: the flow with PKCE, refresh, revocation. */
export * as OAuthConnections from "./oauth/Connections.js"
export { cacheToolList, type ListingOptions } from "./oauth/Listing.js"
export { isOAuthError, OAuthError, type OAuthErrorReason } from "./oauth/OAuthError.js"
export { oauthServers } from "./oauth/ServerAuth.js"
export { DEFAULT_IDLE_MS, McpPool, type McpPoolOptions } from "./Pool.js"
export { defaultLimits as defaultResultLimits, type ResultLimits, toToolOutput } from "./Results.js"
export type * from "./Types.js"
export {
  invocationHeaders,
  MCP_ABILITY,
  type MintInvocationsOptions,
  type MintMcpInvocationOptions,
  mintInvocations,
  mintMcpInvocation,
  type ReadInvocationUserOptions,
  readInvocationUser,
  resourceOf,
  userConnectionKey
} from "./Ucan.js"
