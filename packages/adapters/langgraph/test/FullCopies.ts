/**
 * The saver as code before messages were stored as deltas saw it: the same methods as the saver
 * it wraps, but the base class's delta walk instead of that saver's own, so the agent stores full
 * copies of the messages on it (`agentStateFor`). The anchor of the delta tests and benchmarks.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type PendingWrite
} from "@langchain/langgraph-checkpoint"

/** `saver`, seen by the agent as a saver without its own delta history. */
export class FullCopies extends BaseCheckpointSaver {
  constructor(private readonly saver: BaseCheckpointSaver) {
    super(saver.serde)
  }
  override getTuple(config: RunnableConfig) {
    return this.saver.getTuple(config)
  }
  override list(config: RunnableConfig, options?: CheckpointListOptions) {
    return this.saver.list(config, options)
  }
  override put(c: RunnableConfig, cp: Checkpoint, m: CheckpointMetadata, v: ChannelVersions) {
    return this.saver.put(c, cp, m, v)
  }
  override putWrites(c: RunnableConfig, w: Array<PendingWrite>, t: string, p?: string) {
    return this.saver.putWrites(c, w, t, p)
  }
  override deleteThread(id: string) {
    return this.saver.deleteThread(id)
  }
  override getNextVersion(current: number | undefined): number {
    return this.saver.getNextVersion(current as never) as number
  }
}
