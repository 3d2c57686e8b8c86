/** A turn's view of the user's saver that knows when the turn's own writes have landed. */
import type { RunnableConfig } from "@langchain/core/runnables"
import type {
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  PendingWrite
} from "@langchain/langgraph-checkpoint"
import { DelegatingCheckpointSaver } from "@plugboard/adapters/langgraph"

const noop = () => {}

/**
 * The saver of one turn: delegates to the user's, but reads wait for this turn's writes still in
 * flight, and `settled()` for all of them. LangGraph does not await the final checkpoint of a run
 * whose signal aborted it (nor always of one that ended) before its stream returns; without this,
 * the turn's cleanup would read the thread as it was before the turn, and the turn would count as
 * ended (the next turn of the session starting, a delete going ahead) before its save landed.
 */
export class SettledSaver extends DelegatingCheckpointSaver {
  private readonly pending = new Set<Promise<void>>()

  private track<A>(write: Promise<A>): Promise<A> {
    const settled = write.then(noop, noop)
    this.pending.add(settled)
    void settled.then(() => this.pending.delete(settled))
    return write
  }

  /** Resolves once every write this saver started (including ones started meanwhile) has settled. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending])
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    await this.settled()
    return this.inner.getTuple(config)
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
    return this.track(this.inner.put(config, checkpoint, metadata, newVersions))
  }

  override putWrites(
    config: RunnableConfig,
    writes: Array<PendingWrite>,
    taskId: string,
    taskPath?: string
  ): Promise<void> {
    return this.track(this.inner.putWrites(config, writes, taskId, taskPath))
  }
}
