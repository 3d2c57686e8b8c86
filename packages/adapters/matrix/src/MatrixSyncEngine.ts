/**
 * Background replication of per-user SQLite databases to Matrix.
 *
 * - `scheduleSync(did)` after a turn: debounced; a periodic tick re-schedules every known user.
 *   A sync takes an online backup under the user's write lock (the only step that holds it),
 *   skips the upload when the content hash is unchanged, uploads the gzip as media and points the
 *   user's `org.plugboard.snapshot` state event at it.
 * - `restore(did)` before serving a user: when the room holds a snapshot the local database is not,
 *   download, verify and rename it into place (`Restore.ts`; unsynced local state is moved aside).
 * - Failures never reach the caller of `scheduleSync`: they are logged and retried with bounded
 *   exponential backoff. `flush(deadlineMs)` pushes pending work out before shutdown.
 *
 * Safety rule: a database is uploaded only over the snapshot it descends from (`SyncLedger`), and
 * never while that user's restore is pending or failed, so a transient homeserver error cannot
 * make an empty database replace a good backup, locally or in the room.
 */
import { existsSync, mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { describe } from "@plugboard/core"
import { MatrixNotFound, MatrixSyncEngineError } from "./MatrixSyncEngineError.js"
import { type RestoreResult, restoreUser } from "./Restore.js"
import type { SnapshotPointer } from "./SnapshotPointer.js"
import type { SnapshotStore } from "./SnapshotStore.js"
import { confirmedAt, entryOf, type FileIdentity, fileIdentity, sameFile, writeLedger } from "./SyncLedger.js"
import { type CancelTimer, type SyncTimers, sleepOn, systemTimers, withDeadline } from "./SyncTimers.js"
import { type SyncOutcome, uploadUser } from "./Upload.js"
import type { UserDatabaseDirectory } from "./UserDatabaseDirectory.js"

/** Where the engine reports; each call is one line. */
export interface SyncLogger {
  readonly info: (message: string) => void
  readonly warn: (message: string) => void
  readonly error: (message: string) => void
}

/** Logs to the console with a `[matrix-sync]` prefix. */
export const consoleSyncLogger: SyncLogger = {
  info: (m) => console.info(`[matrix-sync] ${m}`),
  warn: (m) => console.warn(`[matrix-sync] ${m}`),
  error: (m) => console.error(`[matrix-sync] ${m}`)
}

export type { SyncOutcome } from "./Upload.js"

/**
 * Result of a restore. `Unavailable` (transient) and `Rejected` (the room's snapshot failed
 * verification) keep this user's uploads blocked and are retried in the background.
 */
export type RestoreOutcome =
  | RestoreResult
  | { readonly _tag: "Unavailable"; readonly message: string; readonly error: MatrixSyncEngineError }
  | { readonly _tag: "Rejected"; readonly message: string; readonly error: MatrixSyncEngineError }

/** Where a user's restore stands. Uploads are refused while `pending` or `failed`. */
export type RestoreStatus = "unknown" | "pending" | "failed" | "resolved"

/** Result of `flush`. */
export interface FlushReport {
  readonly synced: ReadonlyArray<{ readonly did: string; readonly outcome: SyncOutcome }>
  readonly failed: ReadonlyArray<{ readonly did: string; readonly error: string; readonly cause: unknown }>
  readonly timedOut: ReadonlyArray<string>
}

/** Options of the engine. Times in milliseconds. */
export interface MatrixSyncEngineOptions {
  readonly store: SnapshotStore
  readonly databases: UserDatabaseDirectory
  /** Quiet period after the last `scheduleSync` before syncing. Default 2,000. */
  readonly debounceMs?: number
  /** Period of the tick that re-syncs every known user (unchanged ones cost a backup + hash). 0 disables. Default 600,000. */
  readonly intervalMs?: number
  /** Retry backoff: `baseMs * 2^(n-1)`, capped at `maxMs`; after `maxAttempts` wait for the next schedule. */
  readonly retry?: { readonly baseMs?: number; readonly maxMs?: number; readonly maxAttempts?: number }
  /**
   * `restore` of a user whose restore resolved less than this long ago answers `LocalPresent`
   * without asking the homeserver. Default 0: always ask (one state-event read), so a user who
   * came back from another host gets the newer state. A host that restores before every turn and
   * routes users stickily may raise it to save that round trip.
   */
  readonly recheckAfterMs?: number
  /** Largest snapshot accepted on restore (uncompressed). Default 4 GiB. */
  readonly maxSnapshotBytes?: number
  /** Directory for backup temp files. Default: the database's directory. */
  readonly workDirectory?: string
  /**
   * Most syncs running at once across users (default 4). The periodic tick schedules every known
   * user at the same moment; each sync opens that user's database for its backup, so without a
   * bound a tick over thousands of users would open them all at once (file descriptors, memory).
   */
  readonly maxConcurrentSyncs?: number
  readonly logger?: SyncLogger
  /** Clock and timers (`SyncTimers.ts`); tests pass a manual clock. Default: the system's. */
  readonly timers?: SyncTimers
  /** The clock alone; default `timers.now`. */
  readonly now?: () => number
  /** Test instrumentation: awaited after the backup step, before any network call. */
  readonly afterSnapshot?: (did: string) => Promise<void>
}

interface UserState {
  restore: RestoreStatus
  dirty: boolean
  attempts: number
  restoreAttempts: number
  restoredInBackground: RestoreOutcome | undefined
  /** When the last restore of this user resolved. */
  resolvedAt: number
  /**
   * The database file as last restored or synced. Another file there since (moved aside and
   * started afresh, deleted, replaced) is not known to hold the room's state: the room is asked.
   */
  file: FileIdentity | undefined
  /** An operator adopted the local database over a room pointer that cannot be read. */
  adoptedOverUnreadable: boolean
  /** Since when background syncs of this user have been put off because the user was busy. */
  busySince: number | undefined
  debounce: CancelTimer | undefined
  retry: CancelTimer | undefined
  restoreRetry: CancelTimer | undefined
  /** Tail of this user's serialized sync/restore operations. */
  queue: Promise<unknown>
  /** The upload running now, if any (its dirty flag is already cleared). */
  inflight: Promise<SyncOutcome> | undefined
}

/** How long background syncs of a user who stays busy are put off before one waits for the user. */
const BUSY_PATIENCE_MS = 30_000

/** The Matrix sync engine; see the module doc. */
export class MatrixSyncEngine {
  private readonly users = new Map<string, UserState>()
  private interval: CancelTimer | undefined
  private readonly log: SyncLogger
  private readonly timers: SyncTimers
  private readonly now: () => number
  private readonly debounceMs: number
  private readonly baseMs: number
  private readonly maxMs: number
  private readonly maxAttempts: number
  private closed = false
  private readonly maxConcurrent: number
  private activeSyncs = 0
  private readonly waitingForSlot: Array<() => void> = []

  constructor(private readonly options: MatrixSyncEngineOptions) {
    this.log = options.logger ?? consoleSyncLogger
    const timers = options.timers ?? systemTimers
    this.timers = options.now === undefined ? timers : { ...timers, now: options.now }
    this.now = this.timers.now
    this.debounceMs = options.debounceMs ?? 2_000
    this.baseMs = options.retry?.baseMs ?? 1_000
    this.maxMs = options.retry?.maxMs ?? 60_000
    this.maxAttempts = options.retry?.maxAttempts ?? 10
    this.maxConcurrent = Math.max(1, options.maxConcurrentSyncs ?? 4)
  }

  /** Starts the periodic tick (idempotent). */
  start(): void {
    const every = this.options.intervalMs ?? 600_000
    if (this.interval !== undefined || every <= 0 || this.closed) return
    this.interval = this.timers.every(every, () => {
      for (const did of this.users.keys()) this.scheduleSync(did, 0)
    })
  }

  /** Stops timers; work already running finishes. Call `flush` first to push pending work. */
  close(): void {
    this.closed = true
    this.interval?.()
    this.interval = undefined
    for (const u of this.users.values()) this.clearTimers(u)
  }

  /** How many users have changes not yet in the room (scheduled, uploading, failed or refused). */
  pendingCount(): number {
    let n = 0
    for (const u of this.users.values()) if (u.dirty || u.inflight !== undefined) n++
    return n
  }

  /** Where the user's restore stands. */
  restoreStatus(did: string): RestoreStatus {
    return this.users.get(did)?.restore ?? "unknown"
  }

  /** Asks for a sync of `did` after the debounce period. Never throws, never blocks. */
  scheduleSync(did: string, delayMs: number = this.debounceMs): void {
    if (this.closed) return
    const u = this.user(did)
    u.dirty = true
    if (u.retry !== undefined) return // the pending retry will pick the new state up
    u.debounce?.()
    u.debounce = this.later(delayMs, () => {
      u.debounce = undefined
      void this.background(did)
    })
  }

  /** One sync attempt now (after this user's running operation). Rejects on failure. */
  syncNow(did: string): Promise<SyncOutcome> {
    return this.enqueue(did, () => this.syncOnce(did))
  }

  /** Restores `did` from the room when there is no local database; see `RestoreOutcome`. */
  restore(did: string): Promise<RestoreOutcome> {
    return this.enqueue(did, async () => {
      const u = this.user(did)
      // Hosts call this before every turn: skip the round trip while the last check is fresh.
      const path = this.options.databases.databasePath(did)
      const fresh = this.now() - u.resolvedAt < (this.options.recheckAfterMs ?? 0)
      // The inode is enough here (no database open per request): a false "replaced" only costs
      // one homeserver round trip.
      const current = fileIdentity(path, { withId: false })
      const replaced = u.file !== undefined && !sameFile(u.file, current)
      const outcome =
        u.restore === "resolved" && fresh && !replaced && current !== undefined
          ? ({ _tag: "LocalPresent" } as const)
          : await this.restoreOnce(did, false)
      // A background retry already brought the room's snapshot in since the last call.
      const earlier = u.restoredInBackground
      u.restoredInBackground = undefined
      return outcome._tag === "LocalPresent" && earlier !== undefined ? earlier : outcome
    })
  }

  /**
   * Operator override after a `diverged`/`restore-failed` refusal: declares the local database
   * the successor of the room's current snapshot, so the next sync replaces it.
   */
  async adoptLocal(did: string): Promise<void> {
    await this.enqueue(did, async () => {
      const key = this.options.databases.storageKey(did)
      const path = this.options.databases.databasePath(did)
      const u = this.user(did)
      try {
        const roomId = await this.options.store.room(key, { create: false })
        const remote = await this.options.store.readPointer(roomId, key)
        await writeLedger(path, confirmedAt(entryOf(remote, this.now())), fileIdentity(path))
      } catch (e) {
        // A pointer that cannot be read (malformed, another format) is what adoption is for too.
        if (e instanceof MatrixSyncEngineError && e.reason === "corrupt") u.adoptedOverUnreadable = true
        else if (!(e instanceof MatrixNotFound)) throw e
      }
      u.restore = "resolved"
      this.log.warn(`local database of ${did} adopted by an operator; the room's snapshot will be replaced`)
    })
    this.scheduleSync(did, 0)
  }

  /**
   * Runs every pending sync now, retrying transient failures, until done or `deadlineMs` has
   * passed. For SIGTERM: `await engine.flush(10_000)` then exit. A sync already uploading is
   * waited for (not skipped), and a user who became dirty meanwhile is synced again. Users that
   * failed or ran out of time stay pending (`pendingCount`) and, unless the engine is closed, are
   * scheduled again.
   */
  async flush(deadlineMs: number, options: { readonly retry?: boolean } = {}): Promise<FlushReport> {
    const deadline = this.now() + deadlineMs
    const pending = [...this.users.entries()].filter(
      ([, u]) => u.dirty || u.debounce !== undefined || u.retry !== undefined || u.inflight !== undefined
    )
    const synced: Array<{ did: string; outcome: SyncOutcome }> = []
    const failed: Array<{ did: string; error: string; cause: unknown }> = []
    const timedOut: Array<string> = []
    await Promise.all(
      pending.map(async ([did]) => {
        const result = await this.flushUser(did, deadline, options.retry !== false)
        if (result._tag === "Synced") synced.push({ did, outcome: result.outcome })
        else if (result._tag === "Failed")
          failed.push({ did, error: describe(result.cause), cause: result.cause })
        else timedOut.push(did)
        // Not in the room yet: keep the user scheduled (a no-op once the engine is closed).
        if (result._tag !== "Synced") this.scheduleSync(did)
      })
    )
    if (failed.length + timedOut.length > 0) {
      this.log.error(
        `flush: ${synced.length} synced, ${failed.length} failed, ${timedOut.length} timed out after ${deadlineMs} ms`
      )
    }
    return { synced, failed, timedOut }
  }

  /** One user's part of `flush`: the running upload, then syncs until the state is in the room. */
  private async flushUser(
    did: string,
    deadline: number,
    retry: boolean
  ): Promise<
    | { readonly _tag: "Synced"; readonly outcome: SyncOutcome }
    | { readonly _tag: "Failed"; readonly cause: unknown }
    | { readonly _tag: "TimedOut" }
  > {
    const u = this.user(did)
    let outcome: SyncOutcome | undefined
    let failure: { cause: unknown } | undefined
    // `syncOnce` cleared the dirty flag when this upload began: it carries the latest turn.
    const running = u.inflight
    if (running !== undefined) {
      const result = await withDeadline(this.timers, running, deadline)
      if (result === "timeout") return { _tag: "TimedOut" }
      if (result.ok) outcome = result.value
    }
    // Until a sync succeeded with nothing newer behind it (a turn may end during an upload).
    const settled = (o: SyncOutcome) => o._tag === "Refused" || o._tag === "NoLocalDatabase" || !u.dirty
    let attempt = 0
    while (outcome === undefined || !settled(outcome)) {
      if (this.now() >= deadline) break
      this.cancelSyncTimers(u)
      const result = await withDeadline(
        this.timers,
        this.limited(() => this.syncNow(did)),
        deadline
      )
      if (result === "timeout") break
      if (result.ok) {
        outcome = result.value
        failure = undefined
        // (A running background upload that was waited for above logs its own line.)
        if (outcome._tag === "Uploaded") this.logUploaded(did, outcome)
        continue
      }
      outcome = undefined
      failure = { cause: result.error }
      if (!retry) break
      attempt += 1
      const wait = Math.min(this.backoff(attempt), deadline - this.now())
      if (wait > 0) await sleepOn(this.timers, wait)
    }
    if (outcome !== undefined && settled(outcome)) {
      this.cancelSyncTimers(u)
      return { _tag: "Synced", outcome }
    }
    return failure === undefined ? { _tag: "TimedOut" } : { _tag: "Failed", cause: failure.cause }
  }

  private logUploaded(did: string, outcome: Extract<SyncOutcome, { _tag: "Uploaded" }>): void {
    this.log.info(`synced ${did}: ${outcome.size} B (${outcome.compressedSize} B gzip) as ${outcome.mxc}`)
  }

  private cancelSyncTimers(u: UserState): void {
    u.debounce?.()
    u.retry?.()
    u.debounce = undefined
    u.retry = undefined
  }

  private user(did: string): UserState {
    let u = this.users.get(did)
    if (u === undefined) {
      u = {
        restore: "unknown",
        dirty: false,
        attempts: 0,
        restoreAttempts: 0,
        restoredInBackground: undefined,
        resolvedAt: Number.NEGATIVE_INFINITY,
        file: undefined,
        adoptedOverUnreadable: false,
        busySince: undefined,
        debounce: undefined,
        retry: undefined,
        restoreRetry: undefined,
        queue: Promise.resolve(),
        inflight: undefined
      }
      this.users.set(did, u)
    }
    return u
  }

  private clearTimers(u: UserState): void {
    for (const cancel of [u.debounce, u.retry, u.restoreRetry]) cancel?.()
    u.debounce = undefined
    u.retry = undefined
    u.restoreRetry = undefined
  }

  private enqueue<A>(did: string, op: () => Promise<A>): Promise<A> {
    const u = this.user(did)
    const run = u.queue.then(op, op)
    u.queue = run.catch(() => undefined)
    return run
  }

  /** Runs `fn` once fewer than `maxConcurrentSyncs` syncs are running (first come, first served). */
  private async limited<A>(fn: () => Promise<A>): Promise<A> {
    if (this.activeSyncs < this.maxConcurrent) this.activeSyncs++
    else await new Promise<void>((resolve) => this.waitingForSlot.push(resolve)) // a slot handed over
    try {
      // Closed while this one waited for its slot: what was running finishes, nothing new starts.
      if (this.closed)
        throw new MatrixSyncEngineError({ reason: "unavailable", message: "the sync engine is closed" })
      return await fn()
    } finally {
      const next = this.waitingForSlot.shift()
      if (next !== undefined) next()
      else this.activeSyncs--
    }
  }

  private backoff(attempt: number): number {
    const raw = Math.min(this.maxMs, this.baseMs * 2 ** Math.max(0, attempt - 1))
    return Math.round(raw * (0.8 + Math.random() * 0.4))
  }

  /** A timer that does not keep the process alive (debounce, retries). */
  private later(ms: number, fn: () => void): CancelTimer {
    return this.timers.after(ms, fn, { background: true })
  }

  /** A scheduled sync: never throws; failures are logged and retried with backoff. */
  private async background(did: string): Promise<void> {
    const u = this.user(did)
    // A user in the middle of a turn: come back after the debounce rather than hold one of the
    // few sync slots while the backup waits for the turn (four long turns would stall everyone's
    // replication) — but not for ever, or a user who is never idle would never be synced.
    if (this.options.databases.isBusy?.(did) === true && !this.closed) {
      u.busySince ??= this.now()
      if (this.now() - u.busySince < BUSY_PATIENCE_MS) {
        this.scheduleSync(did)
        return
      }
    }
    u.busySince = undefined
    try {
      const outcome = await this.limited(() => this.syncNow(did))
      u.attempts = 0
      if (outcome._tag === "Uploaded") {
        this.logUploaded(did, outcome)
      } else if (outcome._tag === "Refused") {
        this.log.warn(`not uploading ${did}: ${outcome.message}`)
      }
      if (u.dirty && outcome._tag !== "Refused") this.scheduleSync(did)
    } catch (e) {
      u.dirty = true
      u.attempts += 1
      if (this.closed) return
      if (u.attempts > this.maxAttempts) {
        this.log.error(
          `sync of ${did} failed ${u.attempts - 1} times, waiting for the next schedule: ${describe(e)}`
        )
        u.attempts = 0
        return
      }
      const wait = this.backoff(u.attempts)
      this.log.warn(`sync of ${did} failed (attempt ${u.attempts}), retrying in ${wait} ms: ${describe(e)}`)
      u.retry = this.later(wait, () => {
        u.retry = undefined
        void this.background(did)
      })
    }
  }

  private async syncOnce(did: string): Promise<SyncOutcome> {
    const u = this.user(did)
    const { databases, store } = this.options
    if (u.restore === "pending" || (u.restore === "failed" && u.restoreRetry === undefined)) {
      // A sync (after a turn, the periodic tick's, flush's at shutdown) that would be refused
      // tries the restore first rather than wait for its timer — or, once its retries ran out,
      // for the user's next request. A refused snapshot (failed) is fetched again only then.
      u.restoreRetry?.()
      u.restoreRetry = undefined
      await this.restoreOnce(did, true)
    }
    if (u.restore === "pending" || u.restore === "failed") {
      u.dirty = true
      return {
        _tag: "Refused",
        reason: u.restore === "pending" ? "restore-pending" : "restore-failed",
        message: `restore of ${did} is ${u.restore}; the room's snapshot is kept until it resolves`
      }
    }
    const path = databases.databasePath(did)
    u.dirty = false
    if (!existsSync(path)) return { _tag: "NoLocalDatabase" }
    try {
      let snapshotted: FileIdentity | undefined
      const upload = uploadUser({
        did,
        store,
        databases,
        workDirectory: this.workDirectory(path),
        now: this.now,
        afterSnapshot: this.options.afterSnapshot,
        overUnreadable: u.adoptedOverUnreadable,
        onFile: (file) => {
          snapshotted = file
        }
      })
      // For `flush`, which must wait for this upload rather than skip a user who is not dirty.
      u.inflight = upload
      const outcome = await upload.finally(() => {
        u.inflight = undefined
      })
      if (outcome._tag === "Refused") {
        u.dirty = true
        if (outcome.reason === "diverged") this.log.error(`diverged ${did}: ${outcome.message}`)
      } else if (outcome._tag === "Uploaded" || outcome._tag === "Unchanged") {
        if (outcome._tag === "Uploaded") u.adoptedOverUnreadable = false
        u.file = snapshotted // the record was there, or has just been written
      }
      return outcome
    } catch (e) {
      u.dirty = true
      throw e
    }
  }

  private workDirectory(databasePath: string): string {
    const dir = this.options.workDirectory ?? dirname(databasePath)
    mkdirSync(dir, { recursive: true })
    return dir
  }

  private async restoreOnce(did: string, background: boolean): Promise<RestoreOutcome> {
    const u = this.user(did)
    u.restore = "pending"
    let pointer: SnapshotPointer | undefined
    let file: FileIdentity | undefined
    try {
      const result = await restoreUser({
        did,
        store: this.options.store,
        databases: this.options.databases,
        maxBytes: this.options.maxSnapshotBytes ?? 4 * 1024 ** 3,
        now: this.now,
        onPointer: (p) => {
          pointer = p
        },
        onFile: (f) => {
          file = f
        }
      })
      this.resolved(u, file)
      if (result._tag !== "Restored") return result
      if (background) u.restoredInBackground = result
      this.log.info(
        `restored ${did}: snapshot ${result.sha256.slice(0, 12)}, ${result.size} B` +
          (result.movedAside
            ? `; the local database held unsynced state and was kept as ${result.movedAside}`
            : "")
      )
      if (u.dirty) this.scheduleSync(did)
      return result
    } catch (e) {
      // An operator adopted the local database over a pointer nobody can read: reading it fails
      // the same way until the adopted upload replaces it, which a restore must not undo.
      if (
        u.adoptedOverUnreadable &&
        pointer === undefined &&
        e instanceof MatrixSyncEngineError &&
        e.reason === "corrupt"
      ) {
        this.resolved(u, fileIdentity(this.options.databases.databasePath(did)))
        return { _tag: "LocalPresent" }
      }
      return this.restoreFailed(did, e, pointer)
    }
  }

  private resolved(u: UserState, file: FileIdentity | undefined): void {
    u.restore = "resolved"
    u.resolvedAt = this.now()
    u.file = file
    u.restoreAttempts = 0
    u.restoreRetry?.()
    u.restoreRetry = undefined
  }

  private restoreFailed(did: string, e: unknown, pointer: SnapshotPointer | undefined): RestoreOutcome {
    const u = this.user(did)
    const corrupt = e instanceof MatrixSyncEngineError && e.reason === "corrupt"
    u.restore = corrupt ? "failed" : "pending"
    u.restoreAttempts += 1
    const what = pointer ? `snapshot ${pointer.mxc} (sha256 ${pointer.sha256.slice(0, 12)})` : "snapshot"
    if (corrupt) {
      this.log.error(
        `restore of ${did} refused: ${what} failed verification: ${describe(e)}; keeping the local state as it is and not uploading`
      )
    } else {
      this.log.warn(`restore of ${did} postponed: ${describe(e)}; not uploading until it succeeds`)
    }
    if (!this.closed && u.restoreAttempts <= this.maxAttempts) {
      u.restoreRetry?.()
      u.restoreRetry = this.later(this.backoff(u.restoreAttempts), () => {
        u.restoreRetry = undefined
        void this.enqueue(did, () => this.restoreOnce(did, true))
      })
    }
    const error =
      e instanceof MatrixSyncEngineError
        ? e
        : new MatrixSyncEngineError({ reason: "unavailable", message: describe(e), cause: e })
    return { _tag: corrupt ? "Rejected" : "Unavailable", message: describe(e), error }
  }
}
