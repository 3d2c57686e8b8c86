/**
 * `@plugboard/ucan` — UCAN auth for the oracle: verifies a request's credentials into
 * the user's DID, mints tokens, and keeps Ed25519 keys as text.
 */
export type { Credentials } from "./Credentials.js"
export * from "./Keys.js"
export * as NativeEd25519 from "./NativeEd25519.js"
export * from "./Refusal.js"
export {
  DEFAULT_MAX_TOKEN_LENGTH,
  DEFAULT_MAX_TTL_SECONDS,
  DEFAULT_RESOURCE,
  decode as decodeToken,
  encode as encodeToken,
  type MintOptions,
  mintDelegation,
  mintInvocation,
  type Signer
} from "./Token.js"
export * as UcanAuth from "./UcanAuth.js"
export * from "./UcanVerifier.js"
export type { Verdict } from "./VerdictCache.js"
