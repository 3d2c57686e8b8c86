/**
 * Errors of the Matrix sync engine (named apart from core's port error `MatrixSync.MatrixSyncError`,
 * which `MatrixSyncLayer` maps them onto). `unavailable` is transient (network, timeout, 5xx, 429): retry later and
 * never conclude anything about the remote state from it. `rejected` is a definite answer from the
 * homeserver (4xx other than not-found). `corrupt` is a snapshot that failed verification.
 */
import { Data } from "effect"

/** Why a Matrix sync step failed. */
export type MatrixSyncEngineErrorReason = "unavailable" | "rejected" | "corrupt"

/** A failed Matrix sync step; `cause` keeps the underlying error. */
export class MatrixSyncEngineError extends Data.TaggedError("MatrixSyncEngineError")<{
  readonly reason: MatrixSyncEngineErrorReason
  readonly message: string
  readonly cause?: unknown
}> {}

/** The homeserver said the thing does not exist (404 / `M_NOT_FOUND`): a definite "none". */
export class MatrixNotFound extends Data.TaggedError("MatrixNotFound")<{
  readonly message: string
}> {}

const statusOf = (e: unknown): number | undefined => {
  if (typeof e === "object" && e !== null && "httpStatus" in e) {
    const s = (e as { httpStatus: unknown }).httpStatus
    return typeof s === "number" ? s : undefined
  }
  return undefined
}

const errcodeOf = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "errcode" in e
    ? String((e as { errcode: unknown }).errcode)
    : undefined

/**
 * Classifies an error thrown by matrix-js-sdk or fetch. Only an explicit 404/`M_NOT_FOUND` is
 * "not found"; anything without an HTTP status (connection refused, reset, timeout) is transient.
 */
export const classify = (what: string, e: unknown): MatrixSyncEngineError | MatrixNotFound => {
  if (e instanceof MatrixSyncEngineError || e instanceof MatrixNotFound) return e
  const status = statusOf(e)
  const errcode = errcodeOf(e)
  const detail =
    typeof e === "object" && e !== null && "message" in e
      ? String((e as { message: unknown }).message)
      : String(e)
  if (status === 404 || errcode === "M_NOT_FOUND") {
    return new MatrixNotFound({ message: `${what}: not found (${detail})` })
  }
  if (status === undefined || status >= 500 || status === 429 || status === 408) {
    return new MatrixSyncEngineError({
      reason: "unavailable",
      message: `${what}: homeserver unavailable (${status ?? "no response"}: ${detail})`,
      cause: e
    })
  }
  return new MatrixSyncEngineError({
    reason: "rejected",
    message: `${what}: rejected by the homeserver (${status}${errcode ? ` ${errcode}` : ""}: ${detail})`,
    cause: e
  })
}
