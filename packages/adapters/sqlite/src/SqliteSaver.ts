/**
 * A LangGraph checkpoint saver on SQLite.
 *
 * Storage layout (after LangGraph's Postgres saver): a checkpoint row holds the checkpoint
 * without its channel values; each channel value is a blob keyed by (channel, version) and
 * written only when `newVersions` says the channel changed. A checkpoint's values are the
 * blobs its `channel_versions` point at, so an unchanged channel (a long `messages` list
 * while a tool runs) is stored once, not once per step. Pending writes live in `writes`.
 *
 * Every method serialises with the saver's `serde` first (async), then runs one synchronous
 * better-sqlite3 transaction, so a transaction never spans an await.
 *
 * Because a blob is shared by every checkpoint whose `channel_versions` name it, a (channel,
 * version) pair must name one value only: versions are unique per write (`getNextVersion`), and
 * a blob, once written, is never replaced.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type DeltaChannelHistory,
  JsonPlusSerializer,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP
} from "@langchain/langgraph-checkpoint"
import { makeDumper, makeLoader } from "@plugboard/serde"
import { Database, type DatabaseOptions } from "./Database.js"
import type { DeltaItem, DeltaItemSource } from "./DeltaItems.js"
import { SqliteStorageError } from "./errors.js"
import { DeltaHistory, jsonPathFor, type ValueRow, type WriteRow } from "./internal/deltaHistory.js"
import { COLUMNS, SQL } from "./internal/statements.js"
import { nextChannelVersion, versionsText } from "./internal/versions.js"
import { prune, type RetentionOptions, validateRetention } from "./Retention.js"

export { nextChannelVersion } from "./internal/versions.js"

/** Where a saver gets its connection: a fixed file, or a per-user registry's lease. */
export interface SaverBackend {
  /** Runs a read against the database. */
  readonly read: <T>(fn: (db: Database) => T) => Promise<T>
  /** Runs `fn` in one write transaction. */
  readonly write: <T>(fn: (db: Database) => T) => Promise<T>
}

/** Options of `SqliteSaver`. */
export interface SqliteSaverOptions {
  /** Keep only the newest checkpoints of each thread; absent = keep everything. */
  readonly retention?: RetentionOptions | undefined
  /** Told about a thread whose stored state could not be decoded and was moved aside. */
  readonly onDamagedThread?: ((report: DamagedThread) => void) | undefined
  /** A custom serializer (default: LangGraph's JsonPlusSerializer). */
  readonly serde?: SerializerProtocol | undefined
}

interface CheckpointRow {
  thread_id: string
  checkpoint_ns: string
  checkpoint_id: string
  parent_checkpoint_id: string | null
  type: string
  checkpoint: string | Uint8Array
  channel_versions: string
  metadata_type: string
  metadata: Uint8Array | string
}

/** SQL: whether checkpoint `alias` stores its own value of `@channel` (its version at JSON path `@path`). */
/**
 * A thread whose stored state could not be decoded. Its rows were moved, untouched, into the
 * `quarantined_*` tables of the same file (kept for inspection, never deleted), and the thread
 * starts afresh. `error` names the failure's kind only: stored bytes never reach a message.
 */
export interface DamagedThread {
  readonly threadId: string
  readonly checkpoints: number
  readonly error: string
}

/** The tables a thread's rows live in, and their quarantine twins (made on first use). */
const THREAD_TABLES = ["checkpoints", "blobs", "writes"] as const

/** What a decode failure is called in a message: its kind, never its text (which may quote bytes). */
const decodeFailure = (error: unknown): string =>
  error instanceof Error && error.name !== "Error" ? error.name : "undecodable data"

const LIST_PAGE = 64
const decoder = new TextDecoder()

const invalid = (message: string) => new SqliteStorageError({ reason: "invalid-input", message })

/** Threads whose puts since their last prune a saver counts at most (see `maybePrune`). */
const MAX_PRUNE_COUNTERS = 10_000

/** The LangGraph checkpoint saver on SQLite. */
export class SqliteSaver extends BaseCheckpointSaver {
  private readonly backend: SaverBackend
  private readonly retention: RetentionOptions | undefined
  private readonly putsSincePrune = new Map<string, number>()
  private readonly load: ReturnType<typeof makeLoader>
  private readonly dump: ReturnType<typeof makeDumper>
  private readonly onDamagedThread: ((report: DamagedThread) => void) | undefined
  /** The delta histories and items this saver decoded, kept for the next read (`DeltaHistory`). */
  private readonly deltas: DeltaHistory

  constructor(backend: SaverBackend, options?: SqliteSaverOptions) {
    super(options?.serde)
    this.backend = backend
    this.onDamagedThread = options?.onDamagedThread
    this.load = makeLoader(this.serde)
    this.dump = makeDumper(this.serde)
    // Items are read from the stock serializer's JSON; another serde's bytes are not.
    this.deltas = new DeltaHistory(backend, this.load, this.serde.constructor === JsonPlusSerializer)
    this.retention = options?.retention === undefined ? undefined : validateRetention(options.retention)
  }

  /** A unique, increasing numeric version (see `nextChannelVersion`). */
  override getNextVersion(current: number | undefined): number {
    // A string version is not ours; keep the base class's error for it.
    if (typeof current === "string") return super.getNextVersion(current)
    return nextChannelVersion(current)
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id
    if (threadId === undefined || threadId === null) return undefined
    const ns: string = config.configurable?.checkpoint_ns ?? ""
    const checkpointId: string | undefined = config.configurable?.checkpoint_id
    const loaded = await this.backend.read((db) => {
      const row = (
        checkpointId
          ? db.statement(SQL.byId).get(String(threadId), ns, checkpointId)
          : db.statement(SQL.latest).get(String(threadId), ns)
      ) as CheckpointRow | undefined
      return row === undefined ? undefined : this.loadRelated(db, row)
    })
    if (loaded === undefined) return undefined
    let tuple: CheckpointTuple
    try {
      tuple = await this.toTuple(loaded)
    } catch (error) {
      // A thread that cannot be decoded would fail every turn of its session for good: it is
      // moved aside like a damaged file (docs/failure-modes.md) and the session starts afresh.
      await this.quarantine(String(threadId), error)
      return undefined
    }
    // A caller that named the checkpoint gets its own config back, as LangGraph's savers do.
    return checkpointId ? { ...tuple, config } : tuple
  }

  override async *list(
    config: RunnableConfig,
    options?: CheckpointListOptions
  ): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options ?? {}
    const where: Array<string> = []
    const args: Array<unknown> = []
    const threadId = config.configurable?.thread_id
    if (threadId !== undefined && threadId !== null && threadId !== "") {
      where.push("thread_id = ?")
      args.push(String(threadId))
    }
    const ns = config.configurable?.checkpoint_ns
    if (ns !== undefined && ns !== null) {
      where.push("checkpoint_ns = ?")
      args.push(ns)
    }
    if (config.configurable?.checkpoint_id) {
      where.push("checkpoint_id = ?")
      args.push(config.configurable.checkpoint_id)
    }
    if (before?.configurable?.checkpoint_id !== undefined) {
      where.push("checkpoint_id < ?")
      args.push(before.configurable.checkpoint_id)
    }
    const filters = Object.entries(filter ?? {}).filter(([, v]) => v !== undefined)
    for (const [key, value] of filters) {
      const path = jsonPathFor(key)
      if (path === undefined) continue // checked below, in JavaScript
      where.push("(metadata_type <> 'json' OR metadata -> ? = ?)")
      args.push(path, JSON.stringify(value))
    }
    let remaining = limit !== undefined && limit > 0 ? Math.trunc(limit) : Number.POSITIVE_INFINITY
    if (limit !== undefined && limit <= 0) return
    // Paged by the full key so a long history is never read into memory at once, and the
    // statement is never left open across a yield (the connection stays usable).
    let cursor: [string, string, string] | undefined
    while (remaining > 0) {
      const pageWhere =
        cursor === undefined ? where : [...where, "(checkpoint_id, thread_id, checkpoint_ns) < (?, ?, ?)"]
      const sql = `SELECT ${COLUMNS} FROM checkpoints${pageWhere.length > 0 ? ` WHERE ${pageWhere.join(" AND ")}` : ""}
        ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT ${LIST_PAGE}`
      const pageArgs = cursor === undefined ? args : [...args, ...cursor]
      const page = await this.backend.read((db) =>
        (db.statement(sql).all(...pageArgs) as Array<CheckpointRow>).map((row) => this.loadRelated(db, row))
      )
      const damaged = new Set<string>()
      for (const loaded of page) {
        if (damaged.has(loaded.row.thread_id)) continue
        let tuple: CheckpointTuple
        try {
          tuple = await this.toTuple(loaded)
        } catch (error) {
          // As in getTuple: the thread is moved aside, and the listing goes on without it.
          damaged.add(loaded.row.thread_id)
          await this.quarantine(loaded.row.thread_id, error)
          continue
        }
        if (
          !filters.every(
            ([k, v]) => JSON.stringify(tuple.metadata?.[k as keyof CheckpointMetadata]) === JSON.stringify(v)
          )
        )
          continue
        yield tuple
        if (--remaining <= 0) return
      }
      if (page.length < LIST_PAGE) return
      const last = page[page.length - 1]!.row
      cursor = [last.checkpoint_id, last.thread_id, last.checkpoint_ns]
    }
  }

  /**
   * The writes a delta channel (LangGraph's `DeltaChannel`, the agent's `messages`) is rebuilt
   * from, and the value they start from, without reading a whole checkpoint per ancestor as the
   * base class does: per channel, one recursive query walks the parent chain up to the nearest
   * ancestor that stores the channel's value (a `DeltaSnapshot`, or a full value written before
   * the channel became a delta channel), one reads the writes of that channel on the way, and
   * one reads the seed. So a load costs what the thread's messages cost to decode, not what
   * its checkpoints cost (docs/benchmarks.md, conversation).
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig
    channels: Array<string>
  }): Promise<Record<string, DeltaChannelHistory>> {
    // A channel name no JSON path can spell (quotes, backslashes) is walked the base class's way.
    return (
      (await this.deltas.history(options.config, options.channels)) ?? super.getDeltaChannelHistory(options)
    )
  }

  /**
   * The items of delta channel `channel` at the checkpoint `config` names (for the agent's
   * `messages`, one stored message each), undecoded: per item its id, its class and where it is
   * stored (`DeltaItems`), the seed's and then the writes', as `getDeltaChannelHistory` would
   * replay them. Paged history places them with core's reducer and decodes only a page's
   * (`deltaItemValues`), so a page does not decode the thread (docs/benchmarks.md, history pages).
   * Cached per thread like the decoded history: the read after a turn reads only the turn's
   * items. `undefined` when the history holds anything else than LangChain records stored by the
   * stock serializer, or `config` names no checkpoint: the caller reads the whole history then.
   */
  deltaItems(
    config: RunnableConfig,
    channel: string
  ): Promise<
    { readonly seed: ReadonlyArray<DeltaItem>; readonly writes: ReadonlyArray<DeltaItem> } | undefined
  > {
    return this.deltas.items(config, channel)
  }

  /**
   * The decoded values of the items `sources` names (from `deltaItems` at the same `config`), in
   * that order; `undefined` when one is gone (pruned or deleted since) or cannot be read.
   */
  deltaItemValues(
    config: RunnableConfig,
    channel: string,
    sources: ReadonlyArray<DeltaItemSource>
  ): Promise<ReadonlyArray<unknown> | undefined> {
    return this.deltas.itemValues(config, channel, sources)
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions
  ): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw invalid("put: config.configurable is missing")
    const threadId = config.configurable.thread_id
    if (threadId === undefined || threadId === null || threadId === "") {
      throw invalid('put: config.configurable is missing "thread_id"')
    }
    const ns: string = config.configurable.checkpoint_ns ?? ""
    const parentId: string | undefined = config.configurable.checkpoint_id
    const values = (checkpoint.channel_values ?? {}) as Record<string, unknown>
    const { channel_values: _values, ...rest } = checkpoint
    const skeleton = { ...rest, channel_values: {} }
    const blobKeys = Object.keys(newVersions ?? {})
    // The skeleton (ids, versions) is plain JSON by construction: no serde round trip needed.
    const bytes = JSON.stringify(skeleton)
    const [[metaType, metaBytes], blobs] = await Promise.all([
      this.dump(metadata),
      Promise.all(
        blobKeys.map((channel) =>
          Object.hasOwn(values, channel)
            ? this.dump(values[channel])
            : Promise.resolve(["empty", null] as const)
        )
      )
    ])
    const counters = (metadata as Record<string, unknown> | undefined)?.counters_since_delta_snapshot
    const needsAncestors =
      typeof counters === "object" && counters !== null && Object.keys(counters).length > 0 ? 1 : 0
    const thread = String(threadId)
    await this.backend.write((db) => {
      const insertBlob = db.statement(SQL.insertBlob)
      for (let i = 0; i < blobKeys.length; i++) {
        const channel = blobKeys[i]!
        const [blobType, blob] = blobs[i]!
        insertBlob.run(thread, ns, channel, String(newVersions[channel]), blobType, blob)
      }
      db.statement(SQL.insertCheckpoint).run(
        thread,
        ns,
        checkpoint.id,
        parentId ?? null,
        "json",
        bytes,
        versionsText(checkpoint.channel_versions ?? {}),
        metaType,
        metaType === "json" ? decoder.decode(metaBytes) : metaBytes,
        needsAncestors
      )
    })
    if (this.retention !== undefined) await this.maybePrune(thread, ns)
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } }
  }

  override async putWrites(
    config: RunnableConfig,
    writes: Array<PendingWrite>,
    taskId: string,
    taskPath?: string
  ): Promise<void> {
    const threadId = config.configurable?.thread_id
    const checkpointId = config.configurable?.checkpoint_id
    if (threadId === undefined || threadId === null || threadId === "") {
      throw invalid('putWrites: config.configurable is missing "thread_id"')
    }
    if (checkpointId === undefined || checkpointId === null || checkpointId === "") {
      throw invalid('putWrites: config.configurable is missing "checkpoint_id"')
    }
    const ns: string = config.configurable?.checkpoint_ns ?? ""
    // A write to a checkpoint older than a cached history's may be to one of its ancestors.
    this.deltas.forgetAfter(String(threadId), ns, String(checkpointId))
    const serialized = await Promise.all(writes.map(([, value]) => this.dump(value)))
    await this.backend.write((db) => {
      const ignore = db.statement(SQL.insertWrite)
      const replace = db.statement(SQL.replaceWrite)
      writes.forEach(([channel], i) => {
        const special = WRITES_IDX_MAP[channel]
        const idx = special ?? i
        const [type, value] = serialized[i]!
        // Special writes (errors, interrupts) replace; ordinary ones are write-once per task.
        ;(special !== undefined ? replace : ignore).run(
          String(threadId),
          ns,
          checkpointId,
          taskId,
          idx,
          channel,
          type,
          value,
          taskPath ?? ""
        )
      })
    })
  }

  /**
   * Deletes a thread so that its content is gone from the file's bytes too: the connection
   * zeroes what it deletes (`secure_delete`, see `Database.open`), the freed pages go back to
   * the file system, and the WAL, which still holds the thread's earlier page images, is
   * checkpointed and truncated.
   */
  override async deleteThread(threadId: string): Promise<void> {
    const thread = String(threadId)
    this.deltas.forget(thread)
    await this.backend.write((db) => {
      db.statement(SQL.deleteCheckpoints).run(thread)
      db.statement(SQL.deleteBlobs).run(thread)
      db.statement(SQL.deleteWrites).run(thread)
      db.vacuumFreePages()
    })
    // Outside the write transaction (a checkpoint cannot run inside one).
    await this.backend.read((db) => db.truncateWal())
    for (const key of this.putsSincePrune.keys())
      if (key.startsWith(`${thread}\u0000`)) this.putsSincePrune.delete(key)
  }

  /**
   * Applies the retention policy to one thread (all namespaces when `ns` is omitted), or to
   * every thread when `threadId` is omitted. Returns how many checkpoints were removed.
   */
  async prune(threadId?: string, ns?: string): Promise<number> {
    if (this.retention === undefined) return 0
    const retention = this.retention
    return this.backend.write((db) => prune(db, retention, threadId, ns))
  }

  private async maybePrune(thread: string, ns: string): Promise<void> {
    const key = `${thread}\u0000${ns}`
    const n = (this.putsSincePrune.get(key) ?? 0) + 1
    if (n < (this.retention?.pruneEvery ?? 10)) {
      // One entry per thread written since boot would grow for the saver's life; forgetting the
      // counts only delays a thread's next prune by a few puts.
      if (this.putsSincePrune.size >= MAX_PRUNE_COUNTERS && !this.putsSincePrune.has(key))
        this.putsSincePrune.clear()
      this.putsSincePrune.set(key, n)
      return
    }
    this.putsSincePrune.set(key, 0)
    await this.prune(thread, ns)
  }

  /** Moves every row of `threadId` into the `quarantined_*` tables, in one transaction. */
  private async quarantine(threadId: string, error: unknown): Promise<void> {
    this.deltas.forget(threadId)
    const checkpoints = await this.backend.write((db) => {
      let moved = 0
      for (const table of THREAD_TABLES) {
        db.db.exec(`CREATE TABLE IF NOT EXISTS quarantined_${table} AS SELECT * FROM ${table} WHERE 0`)
        db.statement(`INSERT INTO quarantined_${table} SELECT * FROM ${table} WHERE thread_id = ?`).run(
          threadId
        )
        const { changes } = db.statement(`DELETE FROM ${table} WHERE thread_id = ?`).run(threadId)
        if (table === "checkpoints") moved = changes
      }
      return moved
    })
    try {
      this.onDamagedThread?.({ threadId, checkpoints, error: decodeFailure(error) })
    } catch {
      // A listener's failure must not undo the repair.
    }
  }

  /** Reads the blobs, pending writes and (old format) parent sends a row needs. */
  private loadRelated(db: Database, row: CheckpointRow) {
    const blobs = db
      .statement(SQL.blobs)
      .all(row.channel_versions, row.thread_id, row.checkpoint_ns) as Array<ValueRow>
    const writes = db
      .statement(SQL.writes)
      .all(row.thread_id, row.checkpoint_ns, row.checkpoint_id) as Array<WriteRow>
    return { row, blobs, writes }
  }

  private async toTuple(loaded: ReturnType<SqliteSaver["loadRelated"]>): Promise<CheckpointTuple> {
    const { row, blobs, writes } = loaded
    const [checkpoint, metadata, values, pendingWrites] = await Promise.all([
      Promise.resolve(
        JSON.parse(
          typeof row.checkpoint === "string" ? row.checkpoint : decoder.decode(row.checkpoint)
        ) as Checkpoint
      ),
      this.load(row.metadata_type, row.metadata) as CheckpointMetadata | Promise<CheckpointMetadata>,
      Promise.all(
        blobs
          .filter((b) => b.type !== "empty")
          .map(async (b) => [b.channel, await this.load(b.type, b.value ?? "")] as const)
      ),
      Promise.all(
        writes.map(
          async (w): Promise<CheckpointPendingWrite> => [
            w.task_id,
            w.channel,
            await this.load(w.type, w.value ?? "")
          ]
        )
      )
    ])
    checkpoint.channel_values = Object.fromEntries(values)
    if (checkpoint.v < 4 && row.parent_checkpoint_id !== null) {
      // Before format v4, pending sends lived on the parent's writes; migrate them on read.
      const parentId = row.parent_checkpoint_id
      const sends = await this.backend.read(
        (db) => db.statement(SQL.sends).all(row.thread_id, row.checkpoint_ns, parentId) as Array<WriteRow>
      )
      checkpoint.channel_values[TASKS] = await Promise.all(sends.map((s) => this.load(s.type, s.value ?? "")))
      const versions = Object.values(checkpoint.channel_versions)
      // 1, not getNextVersion: a read must return the same tuple every time.
      checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : 1
    }
    const tuple: CheckpointTuple = {
      config: {
        configurable: {
          thread_id: row.thread_id,
          checkpoint_ns: row.checkpoint_ns,
          checkpoint_id: row.checkpoint_id
        }
      },
      checkpoint,
      metadata,
      pendingWrites
    }
    if (row.parent_checkpoint_id !== null) {
      tuple.parentConfig = {
        configurable: {
          thread_id: row.thread_id,
          checkpoint_ns: row.checkpoint_ns,
          checkpoint_id: row.parent_checkpoint_id
        }
      }
    }
    return tuple
  }
}

/** Options of `makeSqliteSaver`: the file, how to open it, and the saver's own options. */
export interface MakeSqliteSaverOptions extends DatabaseOptions, SqliteSaverOptions {}

/** A saver and the database it owns; `close()` releases the file. */
export interface OwnedSqliteSaver extends SqliteSaver {
  /** The open database (for `backup()`, `integrityCheck()`, diagnostics). */
  readonly database: Database
  /** Closes the database. The saver must not be used afterwards. */
  close(): void
}

/**
 * A saver on one database file, for callers without Effect (the conformance suite, a
 * script). Opens synchronously; throws `SqliteOpenError` when the file is not usable.
 */
export const makeSqliteSaver = (options: MakeSqliteSaverOptions): OwnedSqliteSaver => {
  if (options.retention !== undefined) validateRetention(options.retention) // before opening anything
  const database = Database.open(options)
  const saver = new SqliteSaver(
    {
      read: async (fn) => database.read(() => fn(database)),
      write: async (fn) => database.write(() => fn(database))
    },
    options
  ) as SqliteSaver & { database: Database; close(): void }
  Object.defineProperty(saver, "database", { value: database, enumerable: false })
  saver.close = () => database.close()
  return saver
}
