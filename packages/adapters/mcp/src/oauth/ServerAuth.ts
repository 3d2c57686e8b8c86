/**
 * A server's `auth` key in the MCP config file: `"auth": "oauth"`, or an object with what the
 * MCP authorization spec leaves to the client (docs/oauth.md):
 *
 * ```json
 * "acme": { "url": "https://mcp.acme.example/mcp",
 *           "auth": { "type": "oauth", "scopes": ["tools:read"], "clientId": "plugboard",
 *                     "clientSecretEnv": "ACME_OAUTH_SECRET" } }
 * ```
 *
 * The secret of a preregistered client is never written in the file: `clientSecretEnv` names the
 * environment variable that holds it, read when the connections are built (`oauthServers`).
 * Only an HTTP server can sign its users in, and the user's token travels in `Authorization`, so
 * `auth` beside `forwardUcan` or a static `Authorization` header is refused.
 */
import type { McpOAuthConfig, McpServerConfig, McpTransportConfig } from "../Types.js"
import type { OAuthServerConfig } from "./Connections.js"

const AUTH_KEYS: ReadonlySet<string> = new Set(["type", "scopes", "clientId", "clientSecretEnv"])
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Checks a server's `auth` value, pushing every problem at `at.auth`. */
export const parseAuth = (
  value: unknown,
  context: { readonly transport: McpTransportConfig | undefined; readonly forwardUcan: boolean },
  at: string,
  errors: Array<string>,
  warnings: Array<string>
): McpOAuthConfig | undefined => {
  if (value === undefined) return undefined
  const where = `${at}.auth`
  if (value !== "oauth" && !(isRecord(value) && value.type === "oauth")) {
    errors.push(
      `${where} must be "oauth" or an object with "type": "oauth" (scopes, clientId, clientSecretEnv).`
    )
    return undefined
  }
  const before = errors.length
  if (context.transport?.kind === "stdio") {
    errors.push(`${where} is only for HTTP servers ('url'): a stdio server has no users to sign in.`)
  }
  if (context.forwardUcan) {
    errors.push(
      `${where} and ${at}.forwardUcan both send each user's credential in Authorization; keep one of them.`
    )
  }
  if (context.transport?.kind === "http") {
    const clash = Object.keys(context.transport.headers).find((h) => h.toLowerCase() === "authorization")
    if (clash !== undefined) {
      errors.push(
        `${where} sends each user's token in Authorization, which ${at}.headers.${clash} also sets; drop one of them.`
      )
    }
  }
  if (!isRecord(value)) return errors.length > before ? undefined : {}
  for (const key of Object.keys(value)) {
    if (!AUTH_KEYS.has(key)) {
      warnings.push(
        `${where}.${key} is not a known key and is ignored (known: ${[...AUTH_KEYS].join(", ")}).`
      )
    }
  }
  let scopes: ReadonlyArray<string> | undefined
  if (value.scopes !== undefined) {
    if (
      !Array.isArray(value.scopes) ||
      !value.scopes.every((s) => typeof s === "string" && s.length > 0 && !/\s/.test(s))
    ) {
      errors.push(`${where}.scopes must be a list of scope names (no spaces).`)
    } else scopes = value.scopes as ReadonlyArray<string>
  }
  let clientId: string | undefined
  if (value.clientId !== undefined) {
    if (typeof value.clientId !== "string" || value.clientId.trim() === "") {
      errors.push(`${where}.clientId must be a non-empty string.`)
    } else clientId = value.clientId
  }
  let clientSecretEnv: string | undefined
  if (value.clientSecretEnv !== undefined) {
    if (typeof value.clientSecretEnv !== "string" || !ENV_NAME.test(value.clientSecretEnv)) {
      errors.push(`${where}.clientSecretEnv must be the name of an environment variable.`)
    } else if (value.clientId === undefined) {
      errors.push(
        `${where}.clientSecretEnv is the secret of a preregistered client: set ${where}.clientId too.`
      )
    } else clientSecretEnv = value.clientSecretEnv
  }
  if (errors.length > before) return undefined
  return {
    ...(scopes === undefined ? {} : { scopes }),
    ...(clientId === undefined ? {} : { clientId }),
    ...(clientSecretEnv === undefined ? {} : { clientSecretEnv })
  }
}

/**
 * The OAuth servers of a checked config, for `OAuthConnections.make`, with each preregistered
 * client's secret read from `env`; a secret variable that is unset is a problem named here.
 */
export const oauthServers = (
  servers: ReadonlyArray<McpServerConfig>,
  env: Readonly<Record<string, string | undefined>>
): { readonly servers: ReadonlyArray<OAuthServerConfig>; readonly errors: ReadonlyArray<string> } => {
  const errors: Array<string> = []
  const out: Array<OAuthServerConfig> = []
  for (const server of servers) {
    const oauth = server.oauth
    if (oauth === undefined || server.transport.kind !== "http") continue
    const secretName = oauth.clientSecretEnv
    const secret = secretName === undefined ? undefined : env[secretName]
    if (secretName !== undefined && (secret === undefined || secret === "")) {
      errors.push(
        `MCP server '${server.name}' reads its OAuth client secret from ${secretName}, which is not set.`
      )
      continue
    }
    out.push({
      name: server.name,
      url: server.transport.url,
      ...(oauth.scopes === undefined ? {} : { scopes: oauth.scopes }),
      ...(oauth.clientId === undefined ? {} : { clientId: oauth.clientId }),
      ...(secret === undefined ? {} : { clientSecret: secret })
    })
  }
  return { servers: out, errors }
}
