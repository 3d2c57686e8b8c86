/**
 * The package's one group commit, for every file that commits writes as they come: the user
 * files (`Database.write`) and the run store (`SqliteRunStore.ts`). Writes asked for in the same
 * turn of the event loop commit together: one `BEGIN IMMEDIATE` transaction, each write in a
 * savepoint of its own, committed before the next turn, groups in the order they were asked for,
 * and each write answers once its group has committed. A commit, which appends every page it
 * changed to the WAL, costs more than a small write's statements, and a group writes a shared page
 * once: a turn's checkpoint writes arrive together (LangGraph issues a step's writes and its
 * checkpoint back to back), and with many turns at once one turn's run end, another's frames and a
 * third's creation go in one.
 *
 * A write that throws rolls back to its savepoint and fails alone (a run store's refusal, e.g. an
 * append to an ended run, leaves nothing written); the others still commit. A failure that
 * concerns the whole file (busy, corrupt, the commit itself) rolls the group back and fails or
 * retries it whole. A read first commits the writes asked for before it.
 */
import type BetterSqlite3 from "better-sqlite3"
import { isBusy, isCorruption, SqliteStorageError } from "../errors.js"

/** How a file's group commit retries and reports. */
export interface GroupCommitOptions {
  /** The file's path, for messages. */
  readonly filename: string
  /**
   * Total time a group (or a read) keeps retrying a file another process holds locked, with
   * jittered backoff that never blocks the event loop, before failing `busy`; 0 fails at once
   * (after SQLite's own `busy_timeout`).
   */
  readonly busyRetryMs: number
  /** What an error becomes for the caller: each rejection goes through it. */
  readonly failure: (error: unknown) => unknown
}

/** A write waiting for its group's commit. */
interface QueuedWrite {
  readonly fn: () => unknown
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/** What one write of a group came to. */
type Outcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: unknown }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The group commit of one open connection; `close()` it before the connection closes. */
export class GroupCommit {
  /** How many times an operation found the file locked by another connection and retried. */
  busyRetries = 0
  private readonly db: BetterSqlite3.Database
  private readonly options: GroupCommitOptions
  // Cached statements: cheaper than `db.transaction()` per group.
  private readonly begin: BetterSqlite3.Statement
  private readonly commit: BetterSqlite3.Statement
  private readonly rollback: BetterSqlite3.Statement
  private readonly savepoint: BetterSqlite3.Statement
  private readonly release: BetterSqlite3.Statement
  private readonly rollbackTo: BetterSqlite3.Statement
  private closed = false
  /** Writes waiting for the group commit at the end of this turn of the event loop. */
  private queued: Array<QueuedWrite> = []
  private scheduled: ReturnType<typeof setImmediate> | undefined
  /** The last group's commit (groups commit one after the other). */
  private flushing: Promise<void> = Promise.resolve()
  private committed = 0

  constructor(db: BetterSqlite3.Database, options: GroupCommitOptions) {
    this.db = db
    this.options = options
    this.begin = db.prepare("BEGIN IMMEDIATE")
    this.commit = db.prepare("COMMIT")
    this.rollback = db.prepare("ROLLBACK")
    this.savepoint = db.prepare("SAVEPOINT plugboard_write")
    this.release = db.prepare("RELEASE plugboard_write")
    this.rollbackTo = db.prepare("ROLLBACK TO plugboard_write")
  }

  /** How many write transactions have committed (a group counts once): for tests and diagnostics. */
  get commits(): number {
    return this.committed
  }

  /** Queues `fn` (its statements) for this turn's group and resolves with what it returned once committed. */
  write<T>(fn: () => T): Promise<T> {
    if (this.closed) return Promise.reject(this.options.failure(this.closedError()))
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ fn, resolve: resolve as (value: unknown) => void, reject })
      this.scheduled ??= setImmediate(() => void this.flushWrites())
    })
  }

  /** Runs a read (retried like a group) once every write asked for before it has committed. */
  async read<T>(fn: () => T): Promise<T> {
    if (this.queued.length > 0 || this.scheduled !== undefined) await this.flushWrites()
    else await this.flushing
    try {
      return await this.retrying(fn)
    } catch (error) {
      throw this.options.failure(error)
    }
  }

  /** Gives the waiting writes one attempt now, then refuses any later one (idempotent). */
  close(): void {
    if (this.closed) return
    if (this.scheduled !== undefined) clearImmediate(this.scheduled)
    this.scheduled = undefined
    const group = this.queued
    this.queued = []
    if (group.length > 0) {
      let outcomes: ReadonlyArray<Outcome>
      try {
        outcomes = this.commitGroup(group)
      } catch (error) {
        for (const w of group) w.reject(this.options.failure(error))
        outcomes = []
      }
      this.answer(group, outcomes)
    }
    this.closed = true
  }

  /** Commits the queued writes (after any group still retrying), then answers each of them. */
  private flushWrites(): Promise<void> {
    if (this.scheduled !== undefined) {
      clearImmediate(this.scheduled)
      this.scheduled = undefined
    }
    this.flushing = this.flushing.then(async () => {
      const group = this.queued
      this.queued = []
      if (group.length === 0) return
      let outcomes: ReadonlyArray<Outcome>
      try {
        outcomes = await this.retrying(() => this.commitGroup(group))
      } catch (error) {
        const failed = this.options.failure(error)
        for (const w of group) w.reject(failed)
        return
      }
      this.answer(group, outcomes)
    })
    return this.flushing
  }

  private answer(group: ReadonlyArray<QueuedWrite>, outcomes: ReadonlyArray<Outcome>): void {
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) group[i]!.resolve(outcome.value)
      else group[i]!.reject(this.options.failure(outcome.error))
    })
  }

  /**
   * One IMMEDIATE transaction over the group (the write lock taken up front, so a lock upgrade
   * can never deadlock into BUSY). A lone write needs no savepoint: if it throws, the whole
   * transaction is its own.
   */
  private commitGroup(group: ReadonlyArray<QueuedWrite>): ReadonlyArray<Outcome> {
    this.begin.run()
    try {
      const outcomes =
        group.length === 1
          ? [{ ok: true as const, value: group[0]!.fn() }]
          : group.map((w) => this.inSavepoint(w.fn))
      this.commit.run()
      this.committed++
      return outcomes
    } catch (error) {
      if (this.db.inTransaction) this.rollback.run()
      throw error
    }
  }

  private inSavepoint(fn: () => unknown): Outcome {
    this.savepoint.run()
    try {
      const value = fn()
      this.release.run()
      return { ok: true, value }
    } catch (error) {
      if (isBusy(error) || isCorruption(error)) throw error
      this.rollbackTo.run()
      this.release.run()
      return { ok: false, error }
    }
  }

  private async retrying<T>(attempt: () => T): Promise<T> {
    const { busyRetryMs, filename } = this.options
    const deadline = Date.now() + busyRetryMs
    for (let n = 0; ; n++) {
      if (this.closed) throw this.closedError()
      try {
        return attempt()
      } catch (error) {
        if (!isBusy(error)) throw error
        if (Date.now() >= deadline) {
          throw new SqliteStorageError({
            reason: "busy",
            message:
              busyRetryMs > 0 ? `${filename} stayed locked for ${busyRetryMs} ms` : `${filename} is locked`,
            cause: error
          })
        }
        this.busyRetries++
        await sleep(Math.min(100, 2 + 2 ** Math.min(n, 6)) * (0.5 + Math.random()))
      }
    }
  }

  private closedError(): SqliteStorageError {
    return new SqliteStorageError({ reason: "closed", message: `${this.options.filename} is closed` })
  }
}
