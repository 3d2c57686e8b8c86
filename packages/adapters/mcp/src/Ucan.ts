/**
 * Per-user invocations for MCP servers that want to know who calls (`forwardUcan`). The oracle
 * signs, for each such server, an invocation of `{ can: "mcp/call", with: "mcp:<server>" }` whose
 * caveats name the requesting user; the host keeps them in the graph state
 * (`mcpUcanContext.invocations`) and each call sends its server's one. The user goes in the
 * capability's `nb` rather than in `facts`, so a server that checks the capability with
 * `@ucanto/validator` reads the user as a typed field of the very capability it validated.
 *
 * `Token.mintInvocation` (the UCAN adapter) only mints the oracle's own `*` capability with no caveats, so minting
 * here uses `@ucanto/core` directly; the wire form is the same (`encodeToken`).
 */

import {
  DEFAULT_MAX_TTL_SECONDS,
  decodeToken,
  encodeToken,
  NativeEd25519,
  refuse,
  type Signer
} from "@plugboard/ucan"
import { type API, invoke, UCAN } from "@ucanto/core"
import type { ForwardUcan, McpServerConfig } from "./Types.js"

/** The ability an MCP invocation grants. */
export const MCP_ABILITY = "mcp/call"

/** The resource of a server's invocations: `mcp:<server name>`. */
export const resourceOf = (serverName: string): string => `mcp:${serverName}`

/** The longest lifetime minted or accepted: 15 minutes, as for the oracle's own tokens. */
export const MAX_TTL_SECONDS = DEFAULT_MAX_TTL_SECONDS

/** The default lifetime of a minted invocation. */
export const DEFAULT_TTL_SECONDS = 300

const DID = /^did:[a-z0-9]+:\S+$/

/** Options of {@link mintMcpInvocation}. */
export interface MintMcpInvocationOptions {
  /** The oracle's key: servers trust the oracle, which vouches for the user. */
  readonly signer: Signer
  /** The server's name (the resource is `mcp:<name>`). */
  readonly server: string
  /** Who the token is addressed to; default the oracle's own DID. */
  readonly audience?: string | undefined
  /** The requesting user, carried in the capability's `nb.user`. */
  readonly userDid: string
  /** Lifetime in seconds, at most 900; default 300. */
  readonly ttlSeconds?: number | undefined
  /** The current time in epoch milliseconds; default `Date.now()`. */
  readonly now?: number | undefined
}

const checkTtl = (ttl: number): void => {
  if (!(Number.isFinite(ttl) && ttl > 0 && ttl <= MAX_TTL_SECONDS)) {
    throw new TypeError(
      `ttlSeconds must be more than 0 and at most ${MAX_TTL_SECONDS} (15 minutes), got ${ttl}.`
    )
  }
}

/** Mints one server's invocation for one user; returns its base64 wire form. */
export const mintMcpInvocation = async (options: MintMcpInvocationOptions): Promise<string> => {
  const ttl = options.ttlSeconds ?? DEFAULT_TTL_SECONDS
  checkTtl(ttl)
  if (!DID.test(options.userDid)) throw new TypeError(`userDid must be a DID, got '${options.userDid}'.`)
  const audience = options.audience ?? options.signer.did()
  if (!DID.test(audience)) throw new TypeError(`audience must be a DID, got '${audience}'.`)
  const invocation = invoke({
    issuer: options.signer,
    audience: { did: () => audience as API.DID },
    capability: {
      can: MCP_ABILITY,
      with: resourceOf(options.server) as API.Resource,
      nb: { user: options.userDid }
    },
    expiration: Math.floor((options.now ?? Date.now()) / 1000) + ttl
  })
  return encodeToken(await invocation.buildIPLDView())
}

/** Options of {@link mintInvocations}. */
export interface MintInvocationsOptions {
  /** The oracle's key. */
  readonly signer: Signer
  /** The requesting user. */
  readonly userDid: string
  /** Lifetime in seconds, at most 900; default 300. */
  readonly ttlSeconds?: number | undefined
  readonly now?: number | undefined
}

/**
 * One invocation per `forwardUcan` server, by server name: what the host puts in
 * `mcpUcanContext.invocations` for a user's turn. Servers without `forwardUcan` get none.
 */
export const mintInvocations = async (
  servers: ReadonlyArray<McpServerConfig>,
  options: MintInvocationsOptions
): Promise<Record<string, string>> => {
  const out: Record<string, string> = {}
  for (const server of servers) {
    if (server.forwardUcan === undefined) continue
    out[server.name] = await mintMcpInvocation({
      signer: options.signer,
      server: server.name,
      audience: server.forwardUcan.audience,
      userDid: options.userDid,
      ttlSeconds: options.ttlSeconds,
      now: options.now
    })
  }
  return out
}

/** The header that carries an invocation: `Authorization: Bearer <token>`, or the token as is in another header. */
export const invocationHeaders = (forward: ForwardUcan, token: string): Record<string, string> => ({
  [forward.header]: forward.header.toLowerCase() === "authorization" ? `Bearer ${token}` : token
})

/**
 * The pool connection of one user of a `forwardUcan` server: keyed by server and user, so no
 * user's invocation ever travels on a connection another user's requests use.
 */
export const userConnectionKey = (serverName: string, userDid: string): string =>
  `${serverName}\u0000${userDid}`

/** Options of {@link readInvocationUser}. */
export interface ReadInvocationUserOptions {
  /** The oracle's `did:key`: the only issuer accepted. */
  readonly oracleDid: string
  /** When given, the resource must be `mcp:<server>`; else any `mcp:` resource. */
  readonly server?: string | undefined
  /** When given, the token must be addressed to it (a server's own DID). */
  readonly audience?: string | undefined
  /** The current time in epoch milliseconds; default `Date.now()`. */
  readonly now?: number | undefined
}

/**
 * The user an MCP invocation vouches for, for a server that receives one: the token must be
 * signed by the oracle, inside its time bounds with an expiry at most 15 minutes ahead, and
 * carry `mcp/call` on the server's resource with `nb.user` a DID. Rejects with core's
 * `AuthError` (reason and a message safe to show) for anything else.
 */
export const readInvocationUser = async (
  token: string,
  options: ReadInvocationUserOptions
): Promise<string> => {
  const invocation = await decodeToken(token)
  const issuer = invocation.issuer.did()
  if (issuer !== options.oracleDid) {
    throw refuse(
      "bad-signature",
      `The invocation is issued by ${issuer}, not by the oracle ${options.oracleDid}.`
    )
  }
  let valid = false
  try {
    valid = await UCAN.verifySignature(invocation.data, NativeEd25519.parse(options.oracleDid))
  } catch {
    valid = false
  }
  if (!valid)
    throw refuse("bad-signature", "The invocation's signature does not verify against the oracle's key.")
  if (options.audience !== undefined && invocation.audience.did() !== options.audience) {
    throw refuse(
      "wrong-audience",
      `The invocation is addressed to ${invocation.audience.did()}, not ${options.audience}.`
    )
  }
  const now = Math.floor((options.now ?? Date.now()) / 1000)
  const expiration = invocation.expiration
  if (!Number.isFinite(expiration)) throw refuse("no-expiry", "The invocation carries no expiry.")
  if (expiration <= now)
    throw refuse("expired", `The invocation expired at ${new Date(expiration * 1000).toISOString()}.`)
  if (expiration > now + MAX_TTL_SECONDS) {
    throw refuse("expiry-too-far", `The invocation expires more than ${MAX_TTL_SECONDS} seconds from now.`)
  }
  if (invocation.notBefore !== undefined && now < invocation.notBefore) {
    throw refuse("not-yet-valid", "The invocation is not valid yet.")
  }
  const wanted = options.server === undefined ? undefined : resourceOf(options.server)
  const capability = invocation.capabilities.find(
    (c) => c.can === MCP_ABILITY && (wanted === undefined ? c.with.startsWith("mcp:") : c.with === wanted)
  )
  if (capability === undefined) {
    throw refuse(
      "wrong-capability",
      `The invocation does not carry ${MCP_ABILITY} on ${wanted ?? "an mcp: resource"}.`
    )
  }
  const user = (capability as { readonly nb?: { readonly user?: unknown } }).nb?.user
  if (typeof user !== "string" || !DID.test(user)) {
    throw refuse("malformed", "The invocation does not name its user (nb.user) as a DID.")
  }
  return user
}
