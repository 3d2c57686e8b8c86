/**
 * Which token a request carries, read from its headers the way QiForge oracles read them:
 * `Authorization: Bearer <invocation>` with `X-Auth-Type: ucan` first, else `x-ucan-delegation`.
 */
import { refuse } from "./Refusal.js"

/** A request's credential headers, as the host read them (absent headers may be `undefined`). */
export interface Credentials {
  /** The `Authorization` header. */
  readonly authorization?: string | undefined
  /** The `X-Auth-Type` header. */
  readonly authType?: string | undefined
  /** The `x-ucan-delegation` header. */
  readonly ucanDelegation?: string | undefined
}

const BEARER = /^Bearer[ \t]+(\S+)$/i

const nonEmpty = (value: string | undefined): string | undefined => {
  const trimmed = typeof value === "string" ? value.trim() : undefined
  return trimmed === "" ? undefined : trimmed
}

/** Shortens client-supplied text quoted in an error message. */
export const truncate = (text: string, max = 400): string =>
  text.length > max ? `${text.slice(0, max)}…` : text

/** Which token a request carries, and in which header; refuses (AuthError) when there is none usable. */
export const pickToken = (
  credentials: Credentials,
  acceptBareDelegation: boolean
): { readonly token: string; readonly via: "invocation" | "delegation" } => {
  const authorization = nonEmpty(credentials.authorization)
  const delegation = nonEmpty(credentials.ucanDelegation)
  const authType = nonEmpty(credentials.authType)
  if (authorization !== undefined && authType?.toLowerCase() === "ucan") {
    const match = BEARER.exec(authorization)
    if (match?.[1] === undefined) {
      throw refuse("malformed", "The Authorization header must read 'Bearer <UCAN invocation>'.")
    }
    return { token: match[1], via: "invocation" }
  }
  if (delegation !== undefined) {
    if (!acceptBareDelegation) {
      throw refuse(
        "missing",
        "A UCAN invocation is required: send Authorization: Bearer <invocation> with X-Auth-Type: ucan (x-ucan-delegation alone does not authenticate here)."
      )
    }
    return { token: delegation, via: "delegation" }
  }
  if (authorization !== undefined) {
    if (authType === undefined) {
      throw refuse("malformed", "The Authorization header needs X-Auth-Type: ucan beside it.")
    }
    throw refuse("unsupported", `X-Auth-Type '${truncate(authType, 40)}' is not supported; use 'ucan'.`)
  }
  throw refuse(
    "missing",
    "No credentials: send Authorization: Bearer <UCAN invocation> with X-Auth-Type: ucan, or x-ucan-delegation."
  )
}
