/**
 * The oracle's Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document, the MCP
 * authorization spec's preferred client identity; docs/oauth.md#client-identity): the client_id
 * is the HTTPS URL of a JSON document the host serves, and an authorization server that advertises
 * `client_id_metadata_document_supported` fetches it instead of being asked to register a client.
 * The document names a public client (PKCE, no secret) whose one redirect URI is the host's callback.
 */

/** Where the host serves its document, under its public URL. */
export const CLIENT_METADATA_PATH = "/oauth/client-metadata.json"

/** The document's fields (RFC 7591 client metadata, `client_id` being the document's own URL). */
export interface ClientMetadataDocument {
  readonly client_id: string
  readonly client_name: string
  readonly redirect_uris: ReadonlyArray<string>
  readonly grant_types: ReadonlyArray<string>
  readonly response_types: ReadonlyArray<string>
  readonly token_endpoint_auth_method: "none"
}

/**
 * The document served at `clientId` for a client redirected back to `redirectUri`. A `clientId`
 * that is not an https URL without fragment or credentials cannot be one (the draft's §3): a
 * caller's bug, refused with a RangeError.
 */
export const document = (options: {
  readonly clientId: string
  readonly redirectUri: string
  readonly clientName?: string | undefined
}): ClientMetadataDocument => {
  const problem = clientIdProblem(options.clientId)
  if (problem !== undefined) throw new RangeError(`client metadata document URL ${problem}`)
  return {
    client_id: options.clientId,
    client_name: options.clientName ?? "plugboard",
    redirect_uris: [options.redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none"
  }
}

/**
 * Why `url` cannot be a client_id of this kind (it must be https, with a path, no fragment, no
 * user info, no dot segments), or undefined when it can.
 */
export const clientIdProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `'${url.slice(0, 200)}' is not a URL`
  }
  if (parsed.protocol !== "https:")
    return `'${url.slice(0, 200)}' is not https (the draft requires an https client_id)`
  if (parsed.hash !== "" || url.includes("#")) return `'${url.slice(0, 200)}' has a fragment`
  if (parsed.username !== "" || parsed.password !== "") return `'${url.slice(0, 200)}' carries user info`
  if (/\/\.\.?(\/|$)/.test(url.replace(/%2e/gi, "."))) return `'${url.slice(0, 200)}' has a dot segment`
  return undefined
}

/**
 * The document's URL under a host's public URL (`PUBLIC_URL`), or undefined where that URL is not
 * https: such a host cannot use this identity, and falls back to dynamic registration.
 */
export const urlFor = (publicUrl: string): string | undefined => {
  const url = `${publicUrl.replace(/\/+$/, "")}${CLIENT_METADATA_PATH}`
  return clientIdProblem(url) === undefined ? url : undefined
}
