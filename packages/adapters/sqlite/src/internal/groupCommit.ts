/**
 * The run store's group commit (`SqliteRunStore.ts`): the writes made in one turn of the event
 * loop share one `BEGIN IMMEDIATE` transaction, committed before the next turn, in call order, and
 * each answers once its group has committed. A commit, not its statements, is most of a small
 * write's cost; with many turns at once, one turn's end, another's frames and a third's creation go
 * in one.
 */
import { RunStore } from "@plugboard/core"
import type BetterSqlite3 from "better-sqlite3"
import { Effect } from "effect"

/** The writes of the current turn of the event loop, waiting for their commit. */
export interface GroupCommit {
  /**
   * Queues `apply` (its statements, run inside the group's transaction) for the group's commit
   * and answers what it returned; `committed` runs first, once the group committed. A
   * `RunStoreError` it throws refuses it alone, so it must throw before it writes anything; any
   * other error (the driver's) fails the whole group, each write with `failure(error)`.
   */
  readonly grouped: <A>(
    apply: () => A,
    committed?: (a: A) => void
  ) => Effect.Effect<A, RunStore.RunStoreError>
  /** Commits the pending group now: before any other statement, and before the file closes. */
  readonly flush: () => void
}

interface PendingWrite {
  readonly apply: () => unknown
  readonly settle: (result: unknown) => void
}

/** The group commit of `db`; `failure` turns a driver's error into the port's. */
export const makeGroupCommit = (
  db: BetterSqlite3.Database,
  failure: (error: unknown) => RunStore.RunStoreError
): GroupCommit => {
  let pending: Array<PendingWrite> = []
  let scheduled: ReturnType<typeof setImmediate> | undefined

  const applyOne = (p: PendingWrite): unknown => {
    try {
      return p.apply()
    } catch (error) {
      // Refused, with nothing written: the others of the group go on.
      if (error instanceof RunStore.RunStoreError) return error
      throw error
    }
  }
  const writeGroup = db.transaction((group: ReadonlyArray<PendingWrite>) => group.map(applyOne))

  const flush = (): void => {
    if (scheduled !== undefined) {
      clearImmediate(scheduled)
      scheduled = undefined
    }
    if (pending.length === 0) return
    const group = pending
    pending = []
    let results: ReadonlyArray<unknown>
    try {
      results = writeGroup.immediate(group)
    } catch (error) {
      const failed = failure(error)
      results = group.map(() => failed)
    }
    group.forEach((p, i) => {
      p.settle(results[i])
    })
  }

  const grouped = <A>(apply: () => A, committed: (a: A) => void = () => {}) =>
    Effect.async<A, RunStore.RunStoreError>((resume) => {
      pending.push({
        apply,
        settle: (result) => {
          if (result instanceof RunStore.RunStoreError) resume(Effect.fail(result))
          else {
            committed(result as A)
            resume(Effect.succeed(result as A))
          }
        }
      })
      scheduled ??= setImmediate(flush)
    })

  return { grouped, flush }
}
