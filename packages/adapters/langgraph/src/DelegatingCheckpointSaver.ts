/**
 * A checkpointer that forwards every call to another one. Wrappers that change one aspect of a
 * saver (a read that must not fail a turn, timings, ...) extend it and override only that, so no
 * wrapper can forget to forward a method LangGraph calls.
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

/** Forwards every `BaseCheckpointSaver` method to `inner`. */
export class DelegatingCheckpointSaver extends BaseCheckpointSaver {
  constructor(readonly inner: BaseCheckpointSaver) {
    super(inner.serde)
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.inner.getTuple(config)
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
