/**
 * A checkpointer wrapper that measures where a turn's storage time goes: reads (`getTuple`) count
 * as the "load" stage, writes (`put`, `putWrites`) as "save". The benchmark's per-stage split
 * comes from here; behaviour is exactly the inner saver's.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointMetadata,
  CheckpointTuple,
  PendingWrite
} from "@langchain/langgraph-checkpoint"
import { DelegatingCheckpointSaver } from "@plugboard/adapters/langgraph"

/** Accumulated milliseconds of reads and writes. */
export interface StorageTimings {
  load: number
  save: number
}

/** Delegates to `inner`, adding each call's duration to `timings`. */
export class TimedSaver extends DelegatingCheckpointSaver {
  constructor(
    inner: BaseCheckpointSaver,
    readonly timings: StorageTimings
  ) {
    super(inner)
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
}
