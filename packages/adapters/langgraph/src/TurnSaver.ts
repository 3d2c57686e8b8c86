/**
 * The saver a turn runs on: the user's checkpointer seen through the three rules a turn needs of
 * it, in one wrapper so that a request resolves its saver once and no rule can be stacked twice.
 *
 * 1. **A failed read does not fail the turn** (docs/spec/pipeline.md#failure-modes: the thread
 *    cannot be read). A failing `getTuple` is logged and read as an empty thread. Writes are not
 *    masked. A turn that ran on an empty state because its read failed must not save that state
 *    over a history it never saw (the history would vanish from the thread, and retention would
 *    later prune it for good): its first save reads the thread again, and is refused with an error
 *    unless the thread is still empty.
 * 2. **The thread is read once.** A host that already read the thread for the request (to check
 *    whose it is, when users share one saver) hands that read over (`prefetch`): the turn's own
 *    load uses it, under the same policy (a prefetched failure is a failed read). A turn that had
 *    to wait for the session's previous turn drops it (`dropPrefetch`), since that turn changed
 *    the thread.
 * 3. **A turn has ended only once its writes have landed.** LangGraph does not await the final
 *    checkpoint of a run whose signal aborted it (nor always of one that ended) before its
 *    stream returns. Reads wait for this turn's writes still in flight, and `settled()` for all
 *    of them: the turn's cleanup then reads what it saved, and the session's next turn starts
 *    from it.
 *
 * It also measures where the turn's storage time goes (`timings`: reads as `load`, writes as
 * `save`), which the server reports per request, and says whether the turn's load found its
 * thread (`threadFound`: a new thread's first turn stores its messages as one full copy).
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  DeltaChannelHistory,
  PendingWrite
} from "@langchain/langgraph-checkpoint"
import type { RuntimeLogger } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { DelegatingCheckpointSaver } from "./DelegatingCheckpointSaver.js"

const threadOf = (config: RunnableConfig) => ({
  thread_id: config.configurable?.thread_id as unknown,
  checkpoint_ns: (config.configurable?.checkpoint_ns as string | undefined) ?? ""
})
const keyOf = (config: RunnableConfig): string => {
  const { thread_id, checkpoint_ns } = threadOf(config)
  return JSON.stringify([String(thread_id), checkpoint_ns])
}

const noop = () => {}

/** Milliseconds a turn spent reading (`load`) and writing (`save`) its thread. */
export interface StorageTimings {
  load: number
  save: number
}

/** A read of the thread made before the turn: its result, or why it failed. */
export type PrefetchedRead =
  | { readonly _tag: "Read"; readonly tuple: CheckpointTuple | undefined }
  | { readonly _tag: "Failed"; readonly error: unknown }

/** The saver of one turn; see the module doc. */
export class TurnSaver extends DelegatingCheckpointSaver {
  /** Storage time of this turn so far. */
  readonly timings: StorageTimings = { load: 0, save: 0 }
  private readonly inFlight: StorageTimings = { load: 0, save: 0 }
  private readonly since: StorageTimings = { load: 0, save: 0 }
  /** Threads (and namespaces) whose read failed and that this saver has not saved since. */
  private readonly unread = new Set<string>()
  private readonly pending = new Set<Promise<void>>()
  /** Whether this saver has started a write (before that, there is nothing to wait for). */
  private wrote = false
  private foundThread: boolean | undefined
  private prefetched: { readonly key: string; readonly read: PrefetchedRead } | undefined

  constructor(
    inner: BaseCheckpointSaver,
    private readonly logger: RuntimeLogger
  ) {
    super(inner)
  }

  /** Hands over a read of `threadId`'s latest checkpoint: the turn's first load of it uses this. */
  prefetch(threadId: string, read: PrefetchedRead): void {
    this.prefetched = { key: keyOf({ configurable: { thread_id: threadId } }), read }
  }

  /**
   * Whether the turn's load found a checkpoint of its thread: `false` when it read the thread and
   * it was empty, `true` when it was not, `undefined` before the first read of the thread's latest
   * checkpoint or when that read failed. The messages channel stores a new thread's first turn as
   * one full copy (`State.ts`, `agentStateFor`).
   */
  get threadFound(): boolean | undefined {
    return this.foundThread
  }

  /** Forgets the prefetched read (the thread may have changed since). */
  dropPrefetch(): void {
    this.prefetched = undefined
  }

  /** Resolves once every write this saver started (including ones started meanwhile) has settled. */
  async settled(): Promise<void> {
    if (!this.wrote) return
    for (;;) {
      while (this.pending.size > 0) await Promise.all([...this.pending])
      // LangGraph starts a run's last put from a promise callback once the run's delta writes
      // (the messages, stored as deltas) have landed, a few microtasks after they settle: a
      // macrotask turn lets it start, so a read never sees the writes without their checkpoint.
      await new Promise<void>((resolve) => setImmediate(resolve))
      if (this.pending.size === 0) return
    }
  }

  /**
   * Adds to `stage` the wall time during which at least one of its calls was in flight: writes
   * overlap (a step's writes go out together and commit as one group on the SQLite saver), and
   * summing each call's own time would count the same milliseconds once per call.
   */
  private async timed<A>(stage: keyof StorageTimings, run: () => Promise<A>): Promise<A> {
    if (this.inFlight[stage]++ === 0) this.since[stage] = performance.now()
    try {
      return await run()
    } finally {
      if (--this.inFlight[stage] === 0) this.timings[stage] += performance.now() - this.since[stage]
    }
  }

  private track<A>(write: Promise<A>): Promise<A> {
    this.wrote = true
    const settled = write.then(noop, noop)
    this.pending.add(settled)
    void settled.then(() => this.pending.delete(settled))
    return write
  }

  private failedRead(config: RunnableConfig, error: unknown): undefined {
    this.logger.error("checkpointer load failed; the turn proceeds on an empty state", {
      threadId: config.configurable?.thread_id,
      error: describe(error)
    })
    this.unread.add(keyOf(config))
    return undefined
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    await this.settled()
    const latest = config.configurable?.checkpoint_id === undefined
    const prefetched = this.prefetched
    // Only a read of the thread's latest checkpoint can stand for the one made before the turn.
    if (prefetched !== undefined && latest && prefetched.key === keyOf(config)) {
      this.prefetched = undefined
      if (prefetched.read._tag === "Failed") return this.failedRead(config, prefetched.read.error)
      return this.found(config, prefetched.read.tuple)
    }
    return this.timed("load", async () => {
      let tuple: CheckpointTuple | undefined
      try {
        tuple = await this.inner.getTuple(config)
      } catch (error) {
        return this.failedRead(config, error)
      }
      return latest ? this.found(config, tuple) : tuple
    })
  }

  /** Notes whether a read of a thread's latest checkpoint found one (the root namespace's first read). */
  private found(config: RunnableConfig, tuple: CheckpointTuple | undefined): CheckpointTuple | undefined {
    if (this.foundThread === undefined && threadOf(config).checkpoint_ns === "")
      this.foundThread = tuple !== undefined
    return tuple
  }

  /**
   * The messages' delta history (the other half of a load when they are stored as deltas), under
   * the same rule as `getTuple`: a failed read is logged, the channels load empty, and the turn's
   * first save is checked as after any failed read.
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig
    channels: Array<string>
  }): Promise<Record<string, DeltaChannelHistory>> {
    await this.settled()
    return this.timed("load", async () => {
      try {
        return await this.inner.getDeltaChannelHistory(options)
      } catch (error) {
        this.failedRead(options.config, error)
        return {}
      }
    })
  }

  override async *list(
    config: RunnableConfig,
    options?: CheckpointListOptions
  ): AsyncGenerator<CheckpointTuple> {
    await this.settled()
    yield* this.inner.list(config, options)
  }

  override put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions
  ): Promise<RunnableConfig> {
    return this.track(
      this.timed("save", async () => {
        await this.checkUnread(config)
        return this.inner.put(config, checkpoint, metadata, newVersions)
      })
    )
  }

  override putWrites(
    config: RunnableConfig,
    writes: Array<PendingWrite>,
    taskId: string,
    taskPath?: string
  ): Promise<void> {
    return this.track(this.timed("save", () => this.inner.putWrites(config, writes, taskId, taskPath)))
  }

  /**
   * The first save after a failed read stands on the unread state, whether or not it names a
   * parent (a run addressed at a `checkpoint_id`, a resume or a fork, keeps that id in its config
   * when the read returned nothing): it goes ahead only on a thread that is still empty.
   */
  private async checkUnread(config: RunnableConfig): Promise<void> {
    const key = keyOf(config)
    if (!this.unread.has(key)) return
    const refuse = (why: string) =>
      new Error(
        `not saved: the thread's state could not be read when the turn began, and ${why}; ` +
          "saving this turn would hide the thread's history"
      )
    let existing: CheckpointTuple | undefined
    try {
      existing = await this.inner.getTuple({ configurable: threadOf(config) })
    } catch (error) {
      throw refuse(`it still cannot be read (${describe(error)})`)
    }
    if (existing !== undefined) throw refuse("it holds a history")
    this.unread.delete(key)
  }
}
