/**
 * The `Checkpointer` port on Postgres: LangGraph's own `PostgresSaver`
 * (`@langchain/langgraph-checkpoint-postgres`), which passes the official checkpointer suite
 * as our SQLite saver does ("LangGraph's own ... if it passes what ours passes").
 *
 * One saver serves every user; each user gets a `UserScopedSaver` over it whose thread ids are
 * stored as `<owner>:<thread id>` (owner: the digest of the DID), so users never read, list or
 * delete each other's threads, and configs come back with the thread id the caller gave.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite
} from "@langchain/langgraph-checkpoint"
import type { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { Checkpointer, describe } from "@plugboard/core"
import { Data, Effect, Layer } from "effect"
import { type HistorySource, makeDeltaHistoryCache, readDeltaHistory } from "./DeltaHistory.js"
import { ownerKey, redact } from "./internal/sql.js"
import { PgDatabase, type PgDatabaseService } from "./PgDatabase.js"

/**
 * A failure of the Postgres saver, its message free of the connection string's secrets. Thrown to
 * LangGraph, which awaits the saver: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
 */
export class PostgresCheckpointError extends Data.TaggedError("PostgresCheckpointError")<{
  readonly message: string
}> {
  constructor(message: string) {
    super({ message })
  }
}

/**
 * One user's view of a shared `PostgresSaver`: thread ids are prefixed with the user's owner
 * key on the way in and stripped on the way out. A `list` without a thread id lists only the
 * user's threads.
 */
export class UserScopedSaver extends BaseCheckpointSaver {
  private readonly prefix: string

  constructor(
    readonly inner: PostgresSaver,
    readonly did: string,
    private readonly url: string,
    /** Where delta history is read in one pass (`DeltaHistory`); without it, the base class's walk. */
    private readonly history?: HistorySource | undefined
  ) {
    super(inner.serde)
    this.prefix = `${ownerKey(did)}:`
  }

  private into(config: RunnableConfig): RunnableConfig
  private into(config: RunnableConfig | undefined): RunnableConfig | undefined
  private into(config: RunnableConfig | undefined): RunnableConfig | undefined {
    const thread = config?.configurable?.thread_id
    if (config === undefined || thread === undefined || thread === null) return config
    return { ...config, configurable: { ...config.configurable, thread_id: this.prefix + String(thread) } }
  }

  private out(config: RunnableConfig | undefined): RunnableConfig | undefined {
    const thread = config?.configurable?.thread_id
    if (config === undefined || typeof thread !== "string" || !thread.startsWith(this.prefix)) return config
    return {
      ...config,
      configurable: { ...config.configurable, thread_id: thread.slice(this.prefix.length) }
    }
  }

  private mine(tuple: CheckpointTuple): boolean {
    const thread = tuple.config.configurable?.thread_id
    return typeof thread === "string" && thread.startsWith(this.prefix)
  }

  private outTuple(tuple: CheckpointTuple): CheckpointTuple {
    const parentConfig = this.out(tuple.parentConfig)
    return {
      ...tuple,
      config: this.out(tuple.config)!,
      ...(parentConfig === undefined ? {} : { parentConfig })
    }
  }

  private async guard<A>(doing: string, run: () => Promise<A>): Promise<A> {
    try {
      return await run()
    } catch (error) {
      const message = describe(error)
      throw new PostgresCheckpointError(redact(`checkpoint ${doing} failed: ${message}`, this.url))
    }
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const tuple = await this.guard("read", () => this.inner.getTuple(this.into(config)))
    return tuple === undefined || !this.mine(tuple) ? undefined : this.outTuple(tuple)
  }

  override async *list(
    config: RunnableConfig,
    options?: CheckpointListOptions
  ): AsyncGenerator<CheckpointTuple> {
    const scoped: CheckpointListOptions | undefined =
      options?.before === undefined ? options : { ...options, before: this.into(options.before) }
    const threadGiven = config?.configurable?.thread_id !== undefined
    // Without a thread id the inner saver lists every user's threads: skip the others', and
    // apply the limit after that filter, not before.
    const inner = threadGiven || scoped?.limit === undefined ? scoped : { ...scoped, limit: undefined }
    let left = threadGiven ? Number.POSITIVE_INFINITY : (scoped?.limit ?? Number.POSITIVE_INFINITY)
    const iterator = this.inner.list(this.into(config), inner)
    while (left > 0) {
      const next = await this.guard("list", () => iterator.next())
      if (next.done === true) return
      if (!this.mine(next.value)) continue
      left--
      yield this.outTuple(next.value)
    }
    await iterator.return?.(undefined)
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions
  ): Promise<RunnableConfig> {
    const stored = await this.guard("write", () =>
      this.inner.put(this.into(config), checkpoint, metadata, newVersions)
    )
    return this.out(stored)!
  }

  override putWrites(config: RunnableConfig, writes: Array<PendingWrite>, taskId: string): Promise<void> {
    return this.guard("write", () => this.inner.putWrites(this.into(config), writes, taskId))
  }

  /**
   * A delta channel's history in one round trip per channel (`DeltaHistory`) instead of the base
   * class's walk, one `getTuple` per ancestor: so the agent stores its messages as deltas on
   * Postgres too (`agentStateFor`).
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig
    channels: Array<string>
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config, channels } = options
    const thread = config.configurable?.thread_id
    const history = this.history
    if (history === undefined || thread === undefined || thread === null)
      return super.getDeltaChannelHistory(options)
    return this.guard("read", () =>
      readDeltaHistory(history, this.serde, {
        thread: this.prefix + String(thread),
        ns: String(config.configurable?.checkpoint_ns ?? ""),
        checkpointId: config.configurable?.checkpoint_id || undefined,
        channels
      })
    )
  }

  override deleteThread(threadId: string): Promise<void> {
    this.history?.cache?.forget(this.prefix + threadId)
    return this.guard("delete", () => this.inner.deleteThread(this.prefix + threadId))
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current as never) as number
  }
}

/**
 * The Checkpointer port on a database: `forUser(did)` applies the migrations (first use) and
 * returns the user's scoped view of the shared saver. Put a host's `checkpointerForUser` hook in
 * front with `Checkpointer.withOverride`.
 */
export const makeCheckpointer = (
  db: PgDatabaseService
): Checkpointer.CheckpointerService<UserScopedSaver> => {
  // One cache per host: each request's scoped saver reads through it (docs/benchmarks.md#conversation).
  const history: HistorySource = { pool: db.pool, schema: db.schema, cache: makeDeltaHistoryCache() }
  return {
    forUser: (did) =>
      Effect.flatMap(Checkpointer.checkDid(did), (d) =>
        Effect.as(
          Effect.mapError(
            db.ready,
            (failure) =>
              new Checkpointer.CheckpointerError({
                reason: "unavailable",
                message: `checkpoint storage unavailable: ${failure.message}`
              })
          ),
          new UserScopedSaver(db.saver, d, db.url, history)
        )
      )
  }
}

/** The Checkpointer port on the `PgDatabase`. */
export const layerCheckpointer: Layer.Layer<Checkpointer.Checkpointer, never, PgDatabase> = Layer.effect(
  Checkpointer.typed<UserScopedSaver>(),
  Effect.map(PgDatabase, makeCheckpointer)
)
