/**
 * Discovery for one remote MCP server, as the MCP authorization spec orders it: ask the server
 * without a token and read its 401's `WWW-Authenticate` (the `resource_metadata` URL and the
 * scope it asks for); read its protected-resource metadata (RFC 9728, that URL or the well-known
 * one); check that the metadata names this server as the resource; read the authorization
 * server's metadata (RFC 8414, or OpenID Connect discovery) and check it offers the
 * authorization-code flow with PKCE S256 under the issuer it claims. The SDK's helpers
 * (`@modelcontextprotocol/client`) do the HTTP; this module adds the checks and the
 * errors a user can act on.
 */
import {
  type AuthorizationServerMetadata,
  buildDiscoveryUrls,
  checkResourceAllowed,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  type FetchLike,
  type OAuthProtectedResourceMetadata,
  resourceUrlFromServerUrl
} from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { describeError } from "../McpError.js"
import { OAuthError } from "./OAuthError.js"

/**
 * An authorization server's metadata with the fields of it the flow reads beyond the SDK's types
 * (the SDK's own OpenID discovery drops them: RFC 7009's endpoint, RFC 9207's flag, the
 * Client ID Metadata Document flag).
 */
export type AuthorizationServer = AuthorizationServerMetadata & {
  readonly revocation_endpoint?: string | undefined
  readonly authorization_response_iss_parameter_supported?: boolean | undefined
  /** It fetches a client's metadata document from its URL client_id (draft-ietf-oauth-client-id-metadata-document). */
  readonly client_id_metadata_document_supported?: boolean | undefined
}

/** What discovery found for one server. */
export interface ServerMetadata {
  /** The resource indicator (RFC 8707) sent with every authorization and token request. */
  readonly resource: string
  /** The authorization server's issuer. */
  readonly issuer: string
  readonly authorizationServer: AuthorizationServer
  /** The server's RFC 9728 metadata; undefined for a server that publishes none (legacy: its origin is the issuer). */
  readonly resourceMetadata: OAuthProtectedResourceMetadata | undefined
  /** The scope the server's 401 asked for, when it named one. */
  readonly challengedScope: string | undefined
}

/** What to discover: the server's config name and its MCP endpoint. */
export interface DiscoverTarget {
  readonly name: string
  readonly url: string
}

const unreachable = (server: string, message: string, cause?: unknown) =>
  new OAuthError({ reason: "unreachable", server, message, cause })
const invalid = (server: string, message: string) => new OAuthError({ reason: "invalid", server, message })

/**
 * The revision the unauthenticated probe offers: a 2025 `initialize` is what every server of
 * either era answers (a 2026-07-28 server serves `initialize` too, and a refused one answers 401
 * before reading the body either way).
 */
const PROBE_PROTOCOL_VERSION = "2025-11-25"

/** The unauthenticated first request: an `initialize`, as a client would send it. */
const probe = (target: DiscoverTarget, fetchFn: FetchLike) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetchFn(target.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: {
            protocolVersion: PROBE_PROTOCOL_VERSION,
            capabilities: {},
            clientInfo: { name: "plugboard", version: "0.1.0" }
          }
        })
      })
      await response.body?.cancel()
      return response.status === 401 ? extractWWWAuthenticateParams(response) : {}
    },
    catch: (cause) =>
      unreachable(
        target.name,
        `MCP server '${target.name}' at ${target.url} cannot be reached to discover its OAuth (${describeError(cause)})`,
        cause
      )
  })

/**
 * The authorization server's metadata, from the first of the SDK's discovery URLs (RFC 8414 then
 * OpenID, path-aware) that answers, parsed with the SDK's loose schemas so every field is kept.
 */
const readAuthorizationServer = async (
  issuer: string,
  fetchFn: FetchLike
): Promise<AuthorizationServer | undefined> => {
  for (const { url, type } of buildDiscoveryUrls(issuer)) {
    const response = await fetchFn(url, { headers: { accept: "application/json" } })
    if (!response.ok) {
      await response.body?.cancel()
      if (response.status >= 400 && response.status < 500) continue
      throw new Error(`HTTP ${response.status} from ${url.href}`)
    }
    const json: unknown = await response.json()
    return readMetadata(json, type, url)
  }
  return undefined
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The metadata document, every field kept, once the fields the flow relies on have their types
 * (RFC 8414 §2; OpenID Discovery §3 for `oidc`, which also requires `jwks_uri`).
 */
const readMetadata = (json: unknown, type: "oauth" | "oidc", url: URL): AuthorizationServer => {
  const bad = (what: string) => new Error(`the metadata at ${url.href} ${what}`)
  if (!isRecord(json)) throw bad("is not a JSON object")
  for (const field of ["issuer", "authorization_endpoint", "token_endpoint"]) {
    if (typeof json[field] !== "string") throw bad(`has no '${field}' string`)
  }
  if (type === "oidc" && typeof json.jwks_uri !== "string") throw bad("has no 'jwks_uri' string")
  const types = json.response_types_supported
  if (!Array.isArray(types) || !types.every((t) => typeof t === "string")) {
    throw bad("has no 'response_types_supported' list")
  }
  const methods = json.code_challenge_methods_supported
  if (methods !== undefined && !(Array.isArray(methods) && methods.every((m) => typeof m === "string"))) {
    throw bad("has a 'code_challenge_methods_supported' that is not a list of strings")
  }
  return json as unknown as AuthorizationServer
}

const sameIssuer = (a: string, b: string): boolean => a.replace(/\/+$/, "") === b.replace(/\/+$/, "")

/** Discovers the server's resource and authorization server, checked. */
export const discover = (
  target: DiscoverTarget,
  fetchFn: FetchLike
): Effect.Effect<ServerMetadata, OAuthError> =>
  Effect.gen(function* () {
    const challenge = yield* probe(target, fetchFn)
    const resourceMetadata = yield* Effect.tryPromise(() =>
      discoverOAuthProtectedResourceMetadata(
        target.url,
        challenge.resourceMetadataUrl === undefined
          ? {}
          : { resourceMetadataUrl: challenge.resourceMetadataUrl },
        fetchFn
      )
    ).pipe(
      // A server that names its metadata and then fails to serve it is broken; one that names
      // none and has none at the well-known URL is a legacy server: its origin is the issuer.
      Effect.catchAll((cause) =>
        challenge.resourceMetadataUrl === undefined
          ? Effect.succeed(undefined)
          : Effect.fail(
              unreachable(
                target.name,
                `MCP server '${target.name}' names its protected-resource metadata at ${challenge.resourceMetadataUrl.href}, which cannot be read (${describeError(cause)})`,
                cause
              )
            )
      )
    )
    const ownUrl = resourceUrlFromServerUrl(target.url)
    let resource = ownUrl.href
    if (resourceMetadata !== undefined) {
      if (
        !checkResourceAllowed({ requestedResource: ownUrl, configuredResource: resourceMetadata.resource })
      ) {
        return yield* invalid(
          target.name,
          `MCP server '${target.name}' at ${target.url} publishes metadata for another resource (${resourceMetadata.resource}); refusing to send its tokens there`
        )
      }
      resource = resourceMetadata.resource
    }
    const issuer = resourceMetadata?.authorization_servers?.[0] ?? new URL("/", target.url).href
    const authorizationServer = yield* Effect.tryPromise({
      try: () => readAuthorizationServer(issuer, fetchFn),
      catch: (cause) =>
        unreachable(
          target.name,
          `the authorization server ${issuer} of MCP server '${target.name}' cannot be read (${describeError(cause)})`,
          cause
        )
    })
    if (authorizationServer === undefined) {
      return yield* unreachable(
        target.name,
        `the authorization server ${issuer} of MCP server '${target.name}' publishes no metadata (RFC 8414 or OpenID discovery)`
      )
    }
    if (!sameIssuer(authorizationServer.issuer, issuer)) {
      return yield* invalid(
        target.name,
        `the authorization server metadata at ${issuer} claims the issuer ${authorizationServer.issuer}; refusing it (RFC 8414 §3.3)`
      )
    }
    if (!authorizationServer.response_types_supported.includes("code")) {
      return yield* invalid(
        target.name,
        `the authorization server ${issuer} does not offer the authorization-code flow`
      )
    }
    if (!(authorizationServer.code_challenge_methods_supported ?? []).includes("S256")) {
      return yield* invalid(
        target.name,
        `the authorization server ${issuer} does not list PKCE S256 in code_challenge_methods_supported, which the MCP authorization spec requires`
      )
    }
    return {
      resource,
      issuer: authorizationServer.issuer,
      authorizationServer,
      resourceMetadata,
      challengedScope: challenge.scope
    }
  })
