/**
 * A checkpointer wrapper that measures where a turn's storage time goes: reads (`getTuple`,
 * `list`) count as the "load" stage, writes (`put`, `putWrites`) as "save". The benchmark's
 * per-stage split comes from here; behaviour is exactly the inner saver's.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite
} from "@langchain/langgraph-checkpoint"

/** Accumulated milliseconds of reads and writes. */
export interface StorageTimings {
  load: number
  save: number
}

/** Delegates to `inner`, adding each call's duration to `timings`. */
export class TimedSaver extends BaseCheckpointSaver {
  constructor(
    readonly inner: BaseCheckpointSaver,
    readonly timings: StorageTimings
  ) {
    super(inner.serde)
  }

  private async measure<A>(stage: keyof StorageTimings, run: () => Promise<A>): Promise<A> {
    const started = performance.now()
    try {
      return await run()
    } finally {
      this.timings[stage] += performance.now() - started
    }
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.measure("load", () => this.inner.getTuple(config))
  }

  override list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options)
  }

  override put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions
  ): Promise<RunnableConfig> {
    return this.measure("save", () => this.inner.put(config, checkpoint, metadata, newVersions))
  }

  override putWrites(
    config: RunnableConfig,
    writes: Array<PendingWrite>,
    taskId: string,
    taskPath?: string
  ): Promise<void> {
    return this.measure("save", () => this.inner.putWrites(config, writes, taskId, taskPath))
  }

  override getDeltaChannelHistory(options: { config: RunnableConfig; channels: Array<string> }) {
    return this.inner.getDeltaChannelHistory(options)
  }

  override deleteThread(threadId: string): Promise<void> {
    return this.inner.deleteThread(threadId)
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current as never) as number
  }
}
