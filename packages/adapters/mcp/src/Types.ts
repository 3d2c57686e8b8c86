/**
 * The shapes the MCP adapter's modules share: a server's checked config, what a server says
 * about itself, and a call's options. The rules of what a server becomes in the catalog are
 * core's (`CatalogSource`); these are only the adapter's own vocabulary.
 */
import type { CatalogSource, Wait } from "@plugboard/core"

/** How to reach a server: a child process over stdio, or Streamable HTTP. */
export type McpTransportConfig =
  | {
      readonly kind: "stdio"
      readonly command: string
      readonly args: ReadonlyArray<string>
      /** Added to a small safe environment (PATH, HOME, ...), as the SDK's stdio client does. */
      readonly env: Readonly<Record<string, string>>
      readonly cwd?: string | undefined
    }
  | {
      readonly kind: "http"
      readonly url: string
      readonly headers: Readonly<Record<string, string>>
    }

/** Where a per-user UCAN invocation goes on each HTTP request to the server (`forwardUcan`). */
export interface ForwardUcan {
  /** The DID the invocation is addressed to (default: the oracle's own DID). */
  readonly audience?: string | undefined
  /** The header that carries it (default `Authorization`, as `Bearer <invocation>`). */
  readonly header: string
}

/**
 * A server that signs each user in with OAuth (`"auth": "oauth"`, docs/oauth.md): what the spec
 * leaves to the client. Without `clientId`, plugboard registers itself dynamically.
 */
export interface McpOAuthConfig {
  readonly scopes?: ReadonlyArray<string> | undefined
  /** A client registered with the authorization server beforehand. */
  readonly clientId?: string | undefined
  /** The environment variable holding that client's secret (never the secret itself). */
  readonly clientSecretEnv?: string | undefined
}

/** One server of the config file, checked (`Config.parse`). */
export interface McpServerConfig {
  /** The config key: the plugin's name (kebab-case). */
  readonly name: string
  readonly transport: McpTransportConfig
  /** The operator's manifest fields, as written; checked by `CatalogSource.overrideManifest`. */
  readonly manifest?: unknown
  readonly tools?: CatalogSource.ToolPolicy | undefined
  /** Bound on connecting + listing at boot, and on each call. */
  readonly timeoutMs: number
  readonly forwardUcan?: ForwardUcan | undefined
  /** Each user signs in with OAuth; their token goes in `Authorization` on a connection of their own. */
  readonly oauth?: McpOAuthConfig | undefined
}

/** A tool as the server lists it: core's description of a source's tool. */
export interface McpToolDescription extends CatalogSource.SourceToolDescription {}

/** What a server says about itself: its `initialize` (or `server/discover`) answer and every page of `tools/list`. */
export interface McpDescription {
  readonly serverInfo: {
    readonly name: string
    readonly title?: string | undefined
    readonly version?: string | undefined
  }
  readonly instructions?: string | undefined
  readonly tools: ReadonlyArray<McpToolDescription>
  /**
   * The protocol revision the connection negotiated: `2026-07-28` (or later) with a server that
   * answers `server/discover`, a 2025 one (`2025-11-25`, ...) through `initialize`.
   */
  readonly protocolVersion?: string | undefined
  /** How long the list stays fresh, in ms (2026-07-28 `ttlMs`; absent from a 2025 server). */
  readonly ttlMs?: number | undefined
  /** Who may share the list (2026-07-28): `public` any user, `private` only the one who listed it. */
  readonly cacheScope?: "public" | "private" | undefined
}

/** A progress notification of a call in flight. */
export interface McpProgress {
  readonly progress: number
  readonly total?: number | undefined
  readonly message?: string | undefined
}

/** Options of one connection use (describe or call). */
export interface McpRequestOptions {
  /** Bound on the request (default: the server's `timeoutMs`). */
  readonly timeoutMs?: number | undefined
  /** Cancels the request: the server is sent `notifications/cancelled`. */
  readonly signal?: AbortSignal | undefined
  /**
   * Extra HTTP headers for this connection (a user's invocation). Connections are keyed by
   * `connectionKey`: a server with per-user headers gets one connection per user.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Which connection to use; default the server's name (one connection shared by every user). */
  readonly connectionKey?: string | undefined
  readonly onProgress?: ((progress: McpProgress) => void) | undefined
  /**
   * Answers the server's elicitations (`elicitation/create`) sent while this call is in flight:
   * the user's values (accept), decline, or timeout (declined). Absent: the server is declined.
   */
  readonly onElicit?: ((question: Wait.InputQuestion) => Promise<Wait.InputAnswer>) | undefined
}
