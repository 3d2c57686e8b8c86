/**
 * Token revocation (RFC 7009): what disconnecting asks of the authorization server, when its
 * metadata names a `revocation_endpoint`. The SDK v1 client has no revocation helper, so this is
 * one POST on `fetch`, authenticated as the token endpoint is (client_secret_basic for a client
 * with a secret, else the client_id in the body).
 */
import type { FetchLike } from "@modelcontextprotocol/client"
import { describe } from "@plugboard/core"
import type { AuthorizationServer } from "./Metadata.js"
import type { Client } from "./Secret.js"

/** What a revocation did: `revoked`, `unsupported` (no endpoint), or `failed` with why. */
export type Revocation =
  | { readonly outcome: "revoked" }
  | { readonly outcome: "unsupported" }
  | { readonly outcome: "failed"; readonly why: string }

/** Revokes one token. Never throws: a failure is reported, the caller forgets the token anyway. */
export const revoke = async (
  metadata: AuthorizationServer,
  client: Client,
  token: string,
  hint: "refresh_token" | "access_token",
  fetchFn: FetchLike
): Promise<Revocation> => {
  const endpoint = metadata.revocation_endpoint
  if (endpoint === undefined) return { outcome: "unsupported" }
  const body = new URLSearchParams({ token, token_type_hint: hint })
  const headers = new Headers({
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json"
  })
  if (client.client_secret === undefined) {
    body.set("client_id", client.client_id)
  } else {
    const basic = Buffer.from(
      `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`
    ).toString("base64")
    headers.set("authorization", `Basic ${basic}`)
  }
  try {
    const response = await fetchFn(endpoint, { method: "POST", headers, body })
    await response.body?.cancel()
    // RFC 7009 §2.2: 200 for a revoked token and for one the server did not know.
    return response.ok ? { outcome: "revoked" } : { outcome: "failed", why: `HTTP ${response.status}` }
  } catch (error) {
    return { outcome: "failed", why: describe(error) }
  }
}
