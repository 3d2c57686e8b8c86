/**
 * The one error of OAuth connections (docs/oauth.md). Its `reason` says what can be done:
 * `needs-connect` (this user has no usable connection to this server: never connected, forgotten,
 * a refresh the authorization server refused, a record that no longer opens; the user connects
 * again), `refused` (the authorization server or the user said no to this flow: a denied consent,
 * a code refused, a state that is unknown, used or expired), `unreachable` (a server could not be
 * reached or answered malformed metadata: try later; nothing was forgotten), `invalid` (the
 * server's OAuth config or the caller's input is wrong), `unavailable` (the connection store
 * failed). A message never carries a token.
 */
import { Schema } from "effect"

/** Why an OAuth operation failed. */
export type OAuthErrorReason = "needs-connect" | "refused" | "unreachable" | "invalid" | "unavailable"

/** A failed OAuth operation for one server (its config name). */
export class OAuthError extends Schema.TaggedError<OAuthError>()("OAuthError", {
  reason: Schema.Literal("needs-connect", "refused", "unreachable", "invalid", "unavailable"),
  server: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** True for an `OAuthError` (also one built by another copy of this module). */
export const isOAuthError = (value: unknown): value is OAuthError =>
  value instanceof OAuthError ||
  (typeof value === "object" && value !== null && (value as { _tag?: unknown })._tag === "OAuthError")
