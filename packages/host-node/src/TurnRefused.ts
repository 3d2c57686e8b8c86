/**
 * `TurnRefused`: why the turn service did not start a turn (nothing ran, nothing is left to undo).
 * Its own module so that the session access it comes from and the doors that map it to their
 * status (`Messages.ts`: 404, 400, 503) need not import the service.
 */
import { Schema } from "effect"

/** Why a turn was refused before it started; `reason` is what a door maps to its status. */
export class TurnRefused extends Schema.TaggedError<TurnRefused>()("TurnRefused", {
  reason: Schema.Literal(
    "session-not-found",
    "client-tool",
    "invalid-input",
    "storage-unavailable",
    "runs-unavailable"
  ),
  /** What went wrong; for an unavailable service, what could not be done (never a driver's message). */
  message: Schema.String,
  /** For `client-tool`: core's `ClientToolError` reason; for `storage-unavailable`: which service. */
  detail: Schema.optional(Schema.String),
  /** The port's failure behind an unavailable service, for the server's log only. */
  cause: Schema.optional(Schema.Defect)
}) {}
