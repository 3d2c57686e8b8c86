/**
 * The one error a UCAN credential check ends in. `reason` says which rule refused the request;
 * `message` says it in words a client developer can act on.
 */
import { Data } from "effect"

/** Why a request's UCAN credentials were refused (the same literals as core's Auth port). */
export type UcanAuthReason =
  | "missing"
  | "malformed"
  | "bad-signature"
  | "expired"
  | "not-yet-valid"
  | "wrong-audience"
  | "wrong-capability"
  | "no-expiry"
  | "expiry-too-far"

/** Every reason, for exhaustive tests and for mapping onto other error types. */
export const reasons: ReadonlyArray<UcanAuthReason> = [
  "missing",
  "malformed",
  "bad-signature",
  "expired",
  "not-yet-valid",
  "wrong-audience",
  "wrong-capability",
  "no-expiry",
  "expiry-too-far"
]

/** A refused credential. Thrown (rejected) by the plain verifier; mapped to core's AuthError by the layer. */
export class UcanAuthError extends Data.TaggedError("UcanAuthError")<{
  readonly reason: UcanAuthReason
  readonly message: string
}> {}

/** Type guard that survives module duplication better than `instanceof` alone. */
export const isUcanAuthError = (u: unknown): u is UcanAuthError =>
  u instanceof UcanAuthError ||
  (typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "UcanAuthError")

/** Shorthand used throughout the verifier. */
export const refuse = (reason: UcanAuthReason, message: string): UcanAuthError =>
  new UcanAuthError({ reason, message })
