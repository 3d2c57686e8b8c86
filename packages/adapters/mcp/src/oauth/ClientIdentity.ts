/**
 * Which client identity a user's flow presents to an authorization server (docs/oauth.md#client-identity),
 * the first that applies: the operator's preregistered client (named on purpose, so it wins); the
 * host's Client ID Metadata Document where the server fetches them (the MCP authorization spec's
 * preferred way: nothing registered); a client registered for this user (RFC 7591), reused while
 * its issuer and redirect URI are unchanged. None of them is an `invalid` error naming the fix.
 */
import { type FetchLike, registerClient } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { describeError } from "../McpError.js"
import type { ServerMetadata } from "./Metadata.js"
import { OAuthError } from "./OAuthError.js"
import type * as Secret from "./Secret.js"

/** What the choice reads. */
export interface IdentityInput {
  /** The server's config name and its preregistered client, if any. */
  readonly server: {
    readonly name: string
    readonly clientId?: string | undefined
    readonly clientSecret?: string | undefined
  }
  readonly meta: ServerMetadata
  /** The user's record, whose registered client may be reused. */
  readonly existing: Secret.Secret | undefined
  readonly scope: string | undefined
  readonly redirectUri: string
  /** The host's document URL (https), when it serves one. */
  readonly clientMetadataUrl: string | undefined
  readonly clientName: string
  readonly fetchFn: FetchLike
}

/** The identity for this flow, registering a client where that is the one left. */
export const clientFor = (input: IdentityInput): Effect.Effect<Secret.Client, OAuthError> => {
  const { server, meta, existing, scope, redirectUri, clientMetadataUrl } = input
  if (server.clientId !== undefined) {
    return Effect.succeed({
      client_id: server.clientId,
      ...(server.clientSecret === undefined ? {} : { client_secret: server.clientSecret }),
      source: "configured" as const
    })
  }
  const fetchesDocuments = meta.authorizationServer.client_id_metadata_document_supported === true
  if (clientMetadataUrl !== undefined && fetchesDocuments) {
    return Effect.succeed({ client_id: clientMetadataUrl, source: "metadata-document" as const })
  }
  if (
    existing !== undefined &&
    existing.issuer === meta.issuer &&
    existing.client.source === "registered" &&
    existing.client.redirect_uri === redirectUri
  ) {
    return Effect.succeed(existing.client)
  }
  if (meta.authorizationServer.registration_endpoint === undefined) {
    return Effect.fail(
      new OAuthError({
        reason: "invalid",
        server: server.name,
        message: `the authorization server ${meta.issuer} of MCP server '${server.name}' offers no dynamic client registration${
          fetchesDocuments
            ? ", and this host has no https client metadata document for it to fetch (set PUBLIC_URL to the host's https address)"
            : " nor client metadata documents"
        }; register a client there and set its clientId in the server's oauth config`
      })
    )
  }
  return Effect.tryPromise({
    try: () =>
      registerClient(meta.issuer, {
        metadata: meta.authorizationServer,
        clientMetadata: {
          client_name: input.clientName,
          redirect_uris: [redirectUri],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
          ...(scope === undefined ? {} : { scope })
        },
        fetchFn: input.fetchFn
      }),
    catch: (cause) =>
      new OAuthError({
        reason: "refused",
        server: server.name,
        message: `the authorization server ${meta.issuer} refused to register plugboard as a client of MCP server '${server.name}' (${describeError(cause)})`,
        cause
      })
  }).pipe(
    Effect.map((info) => ({
      client_id: info.client_id,
      ...(info.client_secret === undefined ? {} : { client_secret: info.client_secret }),
      source: "registered" as const,
      redirect_uri: redirectUri
    }))
  )
}

/**
 * For a client whose identity is a metadata document the authorization server no longer accepts
 * (`invalid_client`: it could not fetch it, or refused what it says), where to look; else "".
 */
export const documentHint = (client: Secret.Client, oauthCode: string | undefined): string =>
  client.source === "metadata-document" && oauthCode === "invalid_client"
    ? `; it did not accept this host's client metadata document ${client.client_id}: check that it is served there (GET, public, over https) and lists this host's callback`
    : ""
