/**
 * The `MatrixSync` port: background replication of a user's state (their SQLite files) to
 * Matrix, so any host can pick the user up (docs/spec/graph-state.md#checkpointing,
 * docs/spec/pipeline.md#hosting).
 *
 * - `scheduleSync(did)` after a turn changed the user's state: cheap, returns at once; repeated
 *   calls before an upload coalesce into one.
 * - `flush(deadlineMs)` uploads what is scheduled, stopping when the deadline (a duration from
 *   the call) is reached; what was not uploaded stays scheduled. Graceful shutdown calls it.
 * - `restore(did)` before serving a user: `restored` when the replica was newer than the local
 *   copy (or there was none) and replaced it, `kept-local` when the local copy is current (or no
 *   replica exists but a local copy does), `absent` when neither exists (a new user).
 *
 * An unreachable homeserver fails with `unavailable` and loses nothing: scheduled users stay
 * scheduled, local state stays as it was.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { isDid } from "./Auth.js"
import { Clock } from "./Clock.js"

/** What `restore` did. */
export type RestoreOutcome = "restored" | "absent" | "kept-local"

/** What `flush` achieved before its deadline. */
export interface FlushResult {
  /** Users uploaded by this flush. */
  readonly synced: number
  /** Users still scheduled (deadline reached); a later flush uploads them. */
  readonly pending: number
}

/** Why a sync operation failed. */
export const MatrixSyncErrorReason = Schema.Literal(
  "invalid-did",
  "invalid-deadline",
  "unavailable",
  "unauthorized",
  "corrupt"
)
/** Why a sync operation failed. */
export type MatrixSyncErrorReason = typeof MatrixSyncErrorReason.Type

/** A sync operation failed; local state and the schedule are unchanged. */
export class MatrixSyncError extends Schema.TaggedError<MatrixSyncError>()("MatrixSyncError", {
  reason: MatrixSyncErrorReason,
  message: Schema.String
}) {}

/** The operations of the MatrixSync port. */
export interface MatrixSyncService {
  readonly scheduleSync: (did: string) => Effect.Effect<void, MatrixSyncError>
  readonly flush: (deadlineMs: number) => Effect.Effect<FlushResult, MatrixSyncError>
  readonly restore: (did: string) => Effect.Effect<RestoreOutcome, MatrixSyncError>
}

/** The MatrixSync port. */
export class MatrixSync extends Context.Tag("@plugboard/core/MatrixSync")<MatrixSync, MatrixSyncService>() {}

/** Validates a DID argument. */
export const checkDid = (did: unknown): Effect.Effect<string, MatrixSyncError> =>
  isDid(did)
    ? Effect.succeed(did)
    : Effect.fail(new MatrixSyncError({ reason: "invalid-did", message: "MatrixSync expects a user DID." }))

/** Validates a flush deadline: a non-negative whole number of milliseconds. */
export const checkDeadline = (deadlineMs: unknown): Effect.Effect<number, MatrixSyncError> =>
  typeof deadlineMs === "number" && Number.isSafeInteger(deadlineMs) && deadlineMs >= 0
    ? Effect.succeed(deadlineMs)
    : Effect.fail(
        new MatrixSyncError({
          reason: "invalid-deadline",
          message: `Flush deadline must be a non-negative whole number of milliseconds, got ${String(deadlineMs)}.`
        })
      )

/**
 * Sync turned off: a single host with local state only. Nothing is replicated, so `restore`
 * always answers `absent` (no replica exists); inputs are still validated.
 */
export const disabled: MatrixSyncService = {
  scheduleSync: (did) => Effect.asVoid(checkDid(did)),
  flush: (deadlineMs) => Effect.as(checkDeadline(deadlineMs), { synced: 0, pending: 0 }),
  restore: (did) => Effect.as(checkDid(did), "absent" as const)
}

/** `MatrixSync` turned off (the embedded default without Matrix credentials). */
export const layerDisabled: Layer.Layer<MatrixSync> = Layer.succeed(MatrixSync, disabled)

/** A versioned copy of one user's state. */
export interface Snapshot {
  readonly version: number
  readonly data: string
}

/** The shared "homeserver" of memory replicas: one per test, shared by its hosts. */
export interface MemoryRemote {
  readonly snapshots: Map<string, Snapshot>
  /** While false, every remote operation fails with `unavailable`. */
  available: boolean
}

/** A fresh, empty, reachable memory homeserver. */
export const makeMemoryRemote = (): MemoryRemote => ({ snapshots: new Map(), available: true })

/** One host's view: its sync service and its local copy of users' state. */
export interface MemoryHost {
  readonly sync: MatrixSyncService
  /** Changes the user's local state (what a turn would do); bumps its version. */
  readonly write: (did: string, data: string) => Effect.Effect<void>
  /** The user's local state, if this host has any. */
  readonly read: (did: string) => Effect.Effect<string | undefined>
}

/**
 * A memory implementation for tests: each host keeps users' state in a map and replicates it
 * to a shared `MemoryRemote`. Versions stand in for the real adapter's sync tokens; when two
 * hosts write the same user, the last flush wins. The deadline is measured on the `Clock` port.
 */
export const makeMemoryHost = (remote: MemoryRemote): Effect.Effect<MemoryHost, never, Clock> =>
  Effect.gen(function* () {
    const clock = yield* Clock
    const local = new Map<string, Snapshot>()
    const scheduled = new Set<string>()
    const unavailable = () =>
      new MatrixSyncError({ reason: "unavailable", message: "The Matrix homeserver cannot be reached." })

    const sync: MatrixSyncService = {
      scheduleSync: (did) => Effect.map(checkDid(did), (d) => void scheduled.add(d)),
      flush: (deadlineMs) =>
        Effect.gen(function* () {
          const budget = yield* checkDeadline(deadlineMs)
          const start = yield* clock.now()
          if (scheduled.size > 0 && !remote.available) return yield* Effect.fail(unavailable())
          let synced = 0
          for (const did of [...scheduled]) {
            if ((yield* clock.now()) - start >= budget) break
            const snapshot = local.get(did)
            if (snapshot !== undefined) {
              // Last flush wins: the upload is newer than whatever the replica held.
              const version = Math.max(snapshot.version, (remote.snapshots.get(did)?.version ?? 0) + 1)
              const uploaded = { version, data: snapshot.data }
              remote.snapshots.set(did, uploaded)
              local.set(did, uploaded)
            }
            scheduled.delete(did)
            synced++
          }
          return { synced, pending: scheduled.size }
        }),
      restore: (did) =>
        Effect.flatMap(checkDid(did), (d) =>
          Effect.suspend(() => {
            if (!remote.available) return Effect.fail(unavailable())
            const replica = remote.snapshots.get(d)
            const mine = local.get(d)
            if (replica === undefined) return Effect.succeed(mine === undefined ? "absent" : "kept-local")
            if (mine !== undefined && mine.version >= replica.version) return Effect.succeed("kept-local")
            local.set(d, replica)
            return Effect.succeed("restored")
          })
        )
    }

    return {
      sync,
      write: (did, data) =>
        Effect.sync(() => void local.set(did, { version: (local.get(did)?.version ?? 0) + 1, data })),
      read: (did) => Effect.sync(() => local.get(did)?.data)
    }
  })

/**
 * `MatrixSync` as one memory host replicating to `remote` (a fresh one by default): the layer
 * form of `makeMemoryHost`, for tests that provide the port rather than drive hosts.
 */
export const layerMemory = (
  remote: MemoryRemote = makeMemoryRemote()
): Layer.Layer<MatrixSync, never, Clock> =>
  Layer.effect(
    MatrixSync,
    Effect.map(makeMemoryHost(remote), (host) => host.sync)
  )
