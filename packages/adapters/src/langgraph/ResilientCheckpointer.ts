/**
 * Seed 002, "Checkpointer load: error logged; falls back to empty state. Turn proceeds." A
 * LangGraph graph reads its thread through `getTuple`; this wrapper turns a failing read into
 * "no checkpoint yet", so the turn runs on a fresh state. Writes are not masked: a turn whose
 * state cannot be saved must fail loudly rather than pretend it was kept.
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
import type { RuntimeLogger } from "@plugboard/core"

/** Delegates to `inner`; a failing `getTuple` is logged and read as an empty thread. */
export class ResilientCheckpointer extends BaseCheckpointSaver {
  constructor(
    readonly inner: BaseCheckpointSaver,
    private readonly logger: RuntimeLogger
  ) {
    super(inner.serde)
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    try {
      return await this.inner.getTuple(config)
    } catch (error) {
      this.logger.error("checkpointer load failed; the turn proceeds on an empty state", {
        threadId: config.configurable?.thread_id,
        error: error instanceof Error ? error.message : String(error)
      })
      return undefined
    }
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
    return this.inner.put(config, checkpoint, metadata, newVersions)
  }

  override putWrites(
    config: RunnableConfig,
    writes: Array<PendingWrite>,
    taskId: string,
    taskPath?: string
  ): Promise<void> {
    return this.inner.putWrites(config, writes, taskId, taskPath)
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
