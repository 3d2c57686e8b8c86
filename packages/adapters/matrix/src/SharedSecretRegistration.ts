/**
 * Synapse's shared-secret registration (`/_synapse/admin/v1/register`): creates an account
 * without interactive auth, for bootstrapping the oracle's Matrix account and for tests.
 * The request carries a one-time nonce and an HMAC-SHA1, keyed by the homeserver's
 * `registration_shared_secret`, over `nonce \0 username \0 password \0 admin|notadmin`.
 */
import { createHmac } from "node:crypto"
import type { MatrixAccount } from "./SnapshotStore.js"

/** What to register. */
export interface SharedSecretRegistration {
  readonly baseUrl: string
  readonly sharedSecret: string
  readonly username: string
  readonly password: string
  readonly admin?: boolean
  readonly displayName?: string
}

/** The HMAC the admin API expects, hex. */
export const registrationMac = (
  sharedSecret: string,
  nonce: string,
  username: string,
  password: string,
  admin: boolean
): string =>
  createHmac("sha1", sharedSecret)
    .update([nonce, username, password, admin ? "admin" : "notadmin"].join("\0"))
    .digest("hex")

const postJson = async (url: string, body?: unknown): Promise<Record<string, unknown>> => {
  const response = await fetch(url, {
    method: body === undefined ? "GET" : "POST",
    headers: { "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000)
  })
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>
  if (!response.ok) {
    throw new Error(
      `${url}: ${response.status} ${String(json.errcode ?? "")} ${String(json.error ?? "")}`.trim()
    )
  }
  return json
}

/** Registers an account with the shared secret and returns its credentials. */
export const registerWithSharedSecret = async (options: SharedSecretRegistration): Promise<MatrixAccount> => {
  const url = `${options.baseUrl.replace(/\/$/, "")}/_synapse/admin/v1/register`
  const { nonce } = await postJson(url)
  if (typeof nonce !== "string") throw new Error(`${url}: no nonce in the response`)
  const admin = options.admin ?? false
  const result = await postJson(url, {
    nonce,
    username: options.username,
    password: options.password,
    admin,
    displayname: options.displayName ?? options.username,
    mac: registrationMac(options.sharedSecret, nonce, options.username, options.password, admin)
  })
  if (typeof result.user_id !== "string" || typeof result.access_token !== "string") {
    throw new Error(`${url}: unexpected response ${JSON.stringify(result)}`)
  }
  return {
    baseUrl: options.baseUrl,
    userId: result.user_id,
    accessToken: result.access_token,
    ...(typeof result.device_id === "string" ? { deviceId: result.device_id } : {})
  }
}
