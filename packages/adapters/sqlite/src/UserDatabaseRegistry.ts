/**
 * The per-user database registry: one SQLite file per user DID under one directory
 * (`SQLITE_DATABASE_PATH`), a bounded LRU of open connections, recovery from bad files, and
 * the hooks the Matrix sync needs (`databasePath`, `withUserWriteLock`, `backup`).
 *
 * File names are `u-<sha256 of the DID>.sqlite`: fixed length, lowercase hex, so no DID
 * (`../`, `/`, NUL, 10 kB, a Cyrillic look-alike) can escape the directory, trip a file-name
 * limit, or collide with another DID on a case-insensitive file system.
 *
 * Connections are leased per operation, not per saver: a saver handed to a long agent run
 * stays valid when its connection is evicted (the next operation reopens it), and the LRU
 * only ever closes a connection no operation, turn or sync is using.
 */
import { createHash } from "node:crypto"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint"
import { Database, type DatabaseOptions } from "./Database.js"
import { SqliteOpenError, SqliteStorageError } from "./errors.js"
import { moveAside } from "./MoveAside.js"
import type { RetentionOptions } from "./Retention.js"
import { type DamagedThread, SqliteSaver } from "./SqliteSaver.js"
import { UserGate } from "./UserGate.js"

/** Options of the registry. */
export interface UserDatabaseRegistryOptions {
  /** The directory holding every user's database (created, mode 0700, when missing). */
  readonly directory: string
  /** Most connections kept open at once (default 64). A soft bound: in-use ones are never closed. */
  readonly maxOpen?: number | undefined
  /** Checkpoint retention per thread (default keep 100); `false` keeps everything. */
  readonly retention?: RetentionOptions | false | undefined
  /** Connection settings (busy timeout, synchronous, verify on open). */
  readonly connection?: Omit<DatabaseOptions, "filename" | "ownerDid"> | undefined
  /**
   * How long an open that failed for a passing reason (`unavailable`: another process holds a
   * lock, too many open files, an I/O error) is retried before the operation fails with it
   * (default 5,000). Such a file is never moved aside.
   */
  readonly openRetryMs?: number | undefined
  /**
   * Told that a user's file changed: after a write transaction that committed outside a turn (a
   * session created, touched or deleted, a thread deleted), and once when the user's last running
   * turn ends for the writes made during it (a replication has nothing to gain from a snapshot
   * it would have to wait for the turn to take).
   */
  readonly onWrite?: ((did: string) => void) | undefined
  /** Serializer for checkpoint values (default LangGraph's JsonPlusSerializer). */
  readonly serde?: SerializerProtocol | undefined
  /**
   * Told about every database that could not be used as it was: the typed error, with
   * `movedTo` when the file was moved aside and a fresh one started. Default: `console.error`.
   */
  readonly onOpenError?: ((error: SqliteOpenError) => void) | undefined
  /** Told about a user's thread that could not be decoded and was moved aside (`DamagedThread`). */
  readonly onDamagedThread?: ((did: string, report: DamagedThread) => void) | undefined
}

/** What `withUserWriteLock` hands its callback while the user's database is quiet. */
export interface QuiescentDatabase {
  /** Absolute path of the user's database file. */
  readonly path: string
  /** Online backup to `destination` (a consistent snapshot, WAL included). */
  readonly backup: (destination: string) => Promise<void>
  /**
   * Closes the user's connection so the file may be replaced (a restore). The next operation
   * after the lock is released reopens and re-verifies it.
   */
  readonly closeConnection: () => void
}

/** The result of `open`: set when the user's file was bad and a fresh one was started. */
export interface OpenReport {
  readonly recovered: SqliteOpenError | undefined
}

interface Entry {
  readonly did: string
  readonly path: string
  db: Database | undefined
  leases: number
}

const RECOVERABLE = new Set(["not-a-database", "corrupt", "unreadable", "owner-mismatch"])

// With the `u` flag a surrogate pair is one code point, so this matches unpaired halves only.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u

/**
 * A user's storage key: lowercase hex of a domain-separated SHA-256 of the DID's UTF-8 bytes.
 * Stable across hosts, so it also names the user's snapshots in Matrix. A string with a lone
 * surrogate has no UTF-8 form (it would be hashed as U+FFFD, the key of another string): refused.
 */
export const storageKey = (did: string): string => {
  if (typeof did !== "string" || did.length === 0) {
    throw new SqliteStorageError({ reason: "invalid-input", message: "user DID must be a non-empty string" })
  }
  if (LONE_SURROGATE.test(did)) {
    throw new SqliteStorageError({
      reason: "invalid-input",
      message: "user DID must be well-formed Unicode (it holds a lone surrogate)"
    })
  }
  return createHash("sha256").update("plugboard/user-db/v1\u0000").update(did, "utf8").digest("hex")
}

/** The file name of a user's database: `u-<storageKey>.sqlite`. */
export const databaseFileName = (did: string): string => `u-${storageKey(did)}.sqlite`

/** The registry of per-user databases. */
export class UserDatabaseRegistry {
  /** Absolute directory of the databases. */
  readonly directory: string
  private readonly maxOpen: number
  private readonly retention: RetentionOptions | undefined
  private readonly connection: Omit<DatabaseOptions, "filename" | "ownerDid">
  private readonly openRetryMs: number
  private readonly onWrite: ((did: string) => void) | undefined
  /** Users written to while a turn of theirs was running, told at the end of their last turn. */
  private readonly writtenDuringTurn = new Set<string>()
  private readonly serde: SerializerProtocol | undefined
  private readonly onOpenError: (error: SqliteOpenError) => void
  private readonly onDamagedThread: ((did: string, report: DamagedThread) => void) | undefined
  private readonly entries = new Map<string, Entry>() // insertion order = LRU order
  private readonly gates = new Map<string, UserGate>()
  private readonly savers = new Map<string, SqliteSaver>()
  private closed = false

  constructor(options: UserDatabaseRegistryOptions) {
    this.directory = resolve(options.directory)
    mkdirSync(this.directory, { recursive: true, mode: 0o700 })
    this.maxOpen = Math.max(1, options.maxOpen ?? 64)
    this.retention = options.retention === false ? undefined : (options.retention ?? { keepCheckpoints: 100 })
    this.connection = options.connection ?? {}
    this.openRetryMs = Math.max(0, options.openRetryMs ?? 5_000)
    this.onWrite = options.onWrite
    this.serde = options.serde
    this.onDamagedThread = options.onDamagedThread
    this.onOpenError =
      options.onOpenError ??
      ((e) =>
        console.error(`[sqlite] ${e.reason} ${e.path}: ${e.message}${e.movedTo ? ` → ${e.movedTo}` : ""}`))
  }

  /** Absolute path of a user's database file (whether or not it exists yet). */
  databasePath(did: string): string {
    return join(this.directory, databaseFileName(did))
  }

  /** The user's storage key (see `storageKey`), for naming the user's data elsewhere. */
  storageKey(did: string): string {
    return storageKey(did)
  }

  /** How many connections are open now. */
  get openCount(): number {
    let n = 0
    for (const e of this.entries.values()) if (e.db !== undefined) n++
    return n
  }

  /**
   * The LangGraph checkpointer of a user. Cheap and stable: the same saver for a DID while it
   * is cached, valid across connection evictions. A host that wants another checkpointer per
   * user passes its own `checkpointerForUser` hook instead of this one.
   */
  checkpointerForUser(did: string): SqliteSaver {
    databaseFileName(did) // validates the DID before handing out a saver
    let saver = this.savers.get(did)
    if (saver === undefined) {
      saver = new SqliteSaver(
        { read: (fn) => this.use(did, "read", fn), write: (fn) => this.use(did, "write", fn) },
        {
          retention: this.retention,
          serde: this.serde,
          onDamagedThread: (report) => this.onDamagedThread?.(did, report)
        }
      )
      this.savers.set(did, saver)
      // Savers hold their prune counters and the decoded histories of their last threads:
      // dropping one delays a prune, and its threads' next loads read their history whole.
      if (this.savers.size > this.maxOpen * 4) this.savers.delete(this.savers.keys().next().value!)
    } else {
      this.savers.delete(did)
      this.savers.set(did, saver)
    }
    return saver
  }

  /**
   * Opens the user's database now (normally it opens lazily on first use). When the file was
   * bad, it has been moved aside and a fresh one started; `recovered` says why.
   */
  async open(did: string): Promise<OpenReport> {
    const entry = this.entry(did)
    if (entry.db !== undefined && !entry.db.isClosed) return { recovered: undefined }
    return { recovered: await this.retryingOpen(() => this.openEntry(entry)) }
  }

  /**
   * Runs `fn` against the user's database: a read, or one write transaction. Holds the
   * user's gate as an operation and leases the connection for the duration.
   */
  async use<T>(did: string, mode: "read" | "write", fn: (db: Database) => T): Promise<T> {
    if (this.closed) throw new SqliteStorageError({ reason: "closed", message: "the registry is closed" })
    const gate = this.gate(did)
    const wait = gate.enter("op")
    if (wait !== undefined) await wait
    const entry = this.entry(did)
    try {
      const db = await this.retryingOpen(() => this.lease(entry))
      try {
        if (mode === "read") return await db.read(() => fn(db))
        const result = await db.write(() => fn(db))
        if (gate.turnRunning) this.writtenDuringTurn.add(did)
        else this.tellWritten(did)
        return result
      } catch (error) {
        if (error instanceof SqliteStorageError && error.reason === "corrupt") this.quarantine(entry, error)
        throw error
      } finally {
        entry.leases--
      }
    } finally {
      gate.leave("op")
      this.evict()
    }
  }

  /**
   * Marks a turn of the user as running for the duration of `fn` (shared: many turns may run
   * at once). `withUserWriteLock` waits for running turns and holds new ones back.
   */
  async withTurn<T>(did: string, fn: () => Promise<T>): Promise<T> {
    const gate = this.gate(did)
    const wait = gate.enter("turn")
    if (wait !== undefined) await wait
    try {
      return await fn()
    } finally {
      gate.leave("turn")
      if (!gate.turnRunning && this.writtenDuringTurn.delete(did)) this.tellWritten(did)
      this.evict()
    }
  }

  /**
   * True while a turn or a storage operation of the user is running (a sync would wait for it):
   * what a replication checks before it takes one of its few slots for this user.
   */
  isBusy(did: string): boolean {
    return this.gates.get(did)?.busy === true
  }

  private tellWritten(did: string): void {
    try {
      this.onWrite?.(did)
    } catch {
      // The write has committed; a listener's failure must not make it look failed.
    }
  }

  /**
   * Runs `fn` when no turn or storage operation of the user is in progress, and keeps new
   * ones waiting until it finishes: the Matrix sync's quiescent point for a backup or a
   * restore. Other users are not affected. Inside `fn`, use what it is given (`path`,
   * `backup`, `closeConnection`, or a connection of your own on `path`), not this registry's
   * savers or `use` for the same user: those wait for the lock `fn` holds.
   */
  async withUserWriteLock<T>(did: string, fn: (db: QuiescentDatabase) => Promise<T>): Promise<T> {
    const gate = this.gate(did)
    const wait = gate.enterExclusive()
    if (wait !== undefined) await wait
    try {
      return await fn({
        path: this.databasePath(did),
        backup: async (destination) => {
          // Looked up at call time: the entry may have been dropped while `fn` awaited.
          const entry = this.entry(did)
          const db = await this.retryingOpen(() => this.lease(entry))
          try {
            await db.db.backup(destination)
          } finally {
            entry.leases--
          }
        },
        closeConnection: () => {
          const entry = this.entries.get(did)
          if (entry !== undefined) this.closeEntry(entry)
        }
      })
    } finally {
      gate.leaveExclusive()
      this.evict()
    }
  }

  /** Online backup of the user's database to `destination`, taken while the user is quiet. */
  backup(did: string, destination: string): Promise<void> {
    return this.withUserWriteLock(did, (db) => db.backup(destination))
  }

  /** Closes every connection; later operations fail with `closed`. */
  async close(): Promise<void> {
    this.closed = true
    for (const entry of this.entries.values()) this.closeEntry(entry)
    this.entries.clear()
    this.savers.clear()
  }

  private gate(did: string): UserGate {
    let gate = this.gates.get(did)
    if (gate === undefined) {
      storageKey(did) // an invalid DID throws here, before it holds a gate it would never leave
      gate = new UserGate()
      this.gates.set(did, gate)
    }
    return gate
  }

  private entry(did: string): Entry {
    let entry = this.entries.get(did)
    if (entry === undefined) {
      entry = { did, path: this.databasePath(did), db: undefined, leases: 0 }
    } else {
      this.entries.delete(did) // re-inserted below: most recently used
    }
    this.entries.set(did, entry)
    return entry
  }

  /**
   * Runs `open` (which opens the entry's file when needed) and, while it fails `unavailable`,
   * again with jittered backoff for up to `openRetryMs`; the last failure is reported and thrown.
   */
  private async retryingOpen<A>(open: () => A): Promise<A> {
    const deadline = Date.now() + this.openRetryMs
    for (let n = 0; ; n++) {
      try {
        return open()
      } catch (error) {
        if (!(error instanceof SqliteOpenError) || error.reason !== "unavailable") throw error
        if (Date.now() >= deadline || this.closed) {
          this.onOpenError(error)
          throw error
        }
        await new Promise((r) =>
          setTimeout(r, Math.min(250, 5 * 2 ** Math.min(n, 6)) * (0.5 + Math.random()))
        )
      }
    }
  }

  private lease(entry: Entry): Database {
    if (this.closed) throw new SqliteStorageError({ reason: "closed", message: "the registry is closed" })
    if (entry.db === undefined || entry.db.isClosed) this.openEntry(entry)
    entry.leases++
    return entry.db!
  }

  /** Opens the entry's file; a bad file is moved aside and replaced by a fresh database. */
  private openEntry(entry: Entry): SqliteOpenError | undefined {
    const options = { ...this.connection, filename: entry.path, ownerDid: entry.did }
    try {
      entry.db = Database.open(options)
      return undefined
    } catch (error) {
      // Unavailable is reported by `retryingOpen` once it gives up, not at every attempt.
      if (!(error instanceof SqliteOpenError) || !RECOVERABLE.has(error.reason)) {
        if (error instanceof SqliteOpenError && error.reason !== "unavailable") this.onOpenError(error)
        throw error
      }
      const movedTo = moveAside(entry.path, "corrupt")
      const report = new SqliteOpenError({
        reason: error.reason,
        path: error.path,
        message: error.message,
        movedTo,
        cause: error.cause
      })
      this.onOpenError(report)
      if (movedTo === undefined) throw report // nothing to move: the directory itself is the problem
      entry.db = Database.open(options)
      return report
    }
  }

  /** A database that reported corruption mid-operation: close it and move it aside. */
  private quarantine(entry: Entry, cause: SqliteStorageError) {
    this.closeEntry(entry)
    const movedTo = moveAside(entry.path, "corrupt")
    this.onOpenError(
      new SqliteOpenError({ reason: "corrupt", path: entry.path, message: cause.message, movedTo, cause })
    )
  }

  private closeEntry(entry: Entry) {
    const db = entry.db
    entry.db = undefined
    db?.close()
  }

  /** Closes least recently used connections beyond `maxOpen` that nobody is using. */
  private evict() {
    let open = this.openCount
    for (const entry of this.entries.values()) {
      if (open <= this.maxOpen) break
      const gate = this.gates.get(entry.did)
      if (entry.db === undefined || entry.leases > 0 || gate?.busy) continue
      this.closeEntry(entry)
      open--
    }
    for (const [did, entry] of this.entries) {
      if (entry.db === undefined && entry.leases === 0 && !this.gates.get(did)?.busy) this.entries.delete(did)
    }
    for (const [did, gate] of this.gates) {
      if (gate.idle && !this.entries.has(did)) this.gates.delete(did)
    }
  }
}
