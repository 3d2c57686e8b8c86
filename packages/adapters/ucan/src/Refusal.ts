/**
 * Refusals are core's `AuthError` (the Auth port's error), thrown by the promise API and failed
 * with by the layer, so a host maps one type to 401 whichever API it uses.
 */
import { Auth } from "@plugboard/core"

/** Builds the AuthError for `reason`; `message` is shown to the client. */
export const refuse = (reason: Auth.AuthErrorReason, message: string): Auth.AuthError =>
  new Auth.AuthError({ reason, message })

/** Type guard that also recognises an AuthError from a duplicated copy of core. */
export const isAuthError = (u: unknown): u is Auth.AuthError =>
  u instanceof Auth.AuthError ||
  (typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "AuthError")
