/**
 * Core's `MatrixSync` port on the Matrix sync engine: `scheduleSync` is the engine's debounced
 * background sync (it never fails a turn), `flush` makes one attempt per scheduled user before the
 * deadline (for shutdown), `restore` maps the engine's outcomes onto the port's.
 */
import { describe, MatrixSync } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { MatrixSyncEngine, type MatrixSyncEngineOptions, type RestoreOutcome } from "./MatrixSyncEngine.js"
import { MatrixSyncEngineError } from "./MatrixSyncEngineError.js"

const statusOf = (e: unknown): number | undefined => {
  const cause = e instanceof MatrixSyncEngineError ? e.cause : undefined
  const s =
    typeof cause === "object" && cause !== null ? (cause as { httpStatus?: unknown }).httpStatus : undefined
  return typeof s === "number" ? s : undefined
}

/** The port's error for an engine failure. */
export const toPortError = (e: unknown): MatrixSync.MatrixSyncError => {
  const message = describe(e)
  if (e instanceof MatrixSyncEngineError && e.reason === "corrupt") {
    return new MatrixSync.MatrixSyncError({ reason: "corrupt", message })
  }
  const status = statusOf(e)
  if (status === 401 || status === 403)
    return new MatrixSync.MatrixSyncError({ reason: "unauthorized", message })
  return new MatrixSync.MatrixSyncError({ reason: "unavailable", message })
}

const toRestore = (
  outcome: RestoreOutcome
): Effect.Effect<MatrixSync.RestoreOutcome, MatrixSync.MatrixSyncError> => {
  switch (outcome._tag) {
    case "Restored":
      return Effect.succeed("restored")
    case "LocalPresent":
      return Effect.succeed("kept-local")
    case "NoBackup":
      return Effect.succeed("absent")
    case "Unavailable":
    case "Rejected":
      return Effect.fail(toPortError(outcome.error))
  }
}

/** The port's operations on an existing engine (the caller owns its lifecycle). */
export const matrixSyncFromEngine = (engine: MatrixSyncEngine): MatrixSync.MatrixSyncService => ({
  scheduleSync: (did) => Effect.map(MatrixSync.checkDid(did), (d) => engine.scheduleSync(d)),
  flush: (deadlineMs) =>
    Effect.flatMap(MatrixSync.checkDeadline(deadlineMs), (ms) =>
      Effect.flatMap(
        Effect.promise(() => engine.flush(ms, { retry: false })),
        (report) => {
          const first = report.failed[0]
          if (first !== undefined) return Effect.fail(toPortError(first.cause))
          const synced = report.synced.filter((s) => s.outcome._tag !== "Refused").length
          return Effect.succeed({ synced, pending: engine.pendingCount() })
        }
      )
    ),
  restore: (did) =>
    Effect.flatMap(MatrixSync.checkDid(did), (d) =>
      Effect.flatMap(
        Effect.promise(() => engine.restore(d)),
        toRestore
      )
    )
})

/**
 * `MatrixSync` backed by a new engine, started with the layer and closed with it. Closing does
 * not flush: the host calls `flush(deadlineMs)` on SIGTERM first.
 */
export const layerMatrixSync = (options: MatrixSyncEngineOptions): Layer.Layer<MatrixSync.MatrixSync> =>
  Layer.scoped(
    MatrixSync.MatrixSync,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => {
          const engine = new MatrixSyncEngine(options)
          engine.start()
          return engine
        }),
        (engine) => Effect.sync(() => engine.close())
      ),
      matrixSyncFromEngine
    )
  )
