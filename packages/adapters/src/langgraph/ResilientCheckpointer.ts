/**
 * Seed 002, "Checkpointer load: error logged; falls back to empty state. Turn proceeds." A
 * LangGraph graph reads its thread through `getTuple`; this wrapper turns a failing read into
 * "no checkpoint yet", so the turn runs on a fresh state. Writes are not masked: a turn whose
 * state cannot be saved must fail loudly rather than pretend it was kept.
 *
 * A turn that ran on an empty state because its read failed must not save that state as the
 * thread's newest checkpoint over a history it never saw (the history would vanish from the
 * thread, and retention would later prune it for good). So its first save reads the thread again:
 * still nothing there (a new thread, or a damaged database started afresh) and it is saved;
 * a history there, or a read that fails again, and the save is refused with an error.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointMetadata,
  CheckpointTuple
} from "@langchain/langgraph-checkpoint"
import type { RuntimeLogger } from "@plugboard/core"
import { DelegatingCheckpointSaver } from "./DelegatingCheckpointSaver.js"

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const threadOf = (config: RunnableConfig) => ({
  thread_id: config.configurable?.thread_id as unknown,
  checkpoint_ns: (config.configurable?.checkpoint_ns as string | undefined) ?? ""
})
const keyOf = (config: RunnableConfig): string => {
  const { thread_id, checkpoint_ns } = threadOf(config)
  return JSON.stringify([String(thread_id), checkpoint_ns])
}

/** Delegates to `inner`; a failing `getTuple` is logged and read as an empty thread. */
export class ResilientCheckpointer extends DelegatingCheckpointSaver {
  /** Threads (and namespaces) whose read failed and that this wrapper has not saved since. */
  private readonly unread = new Set<string>()

  constructor(
    inner: BaseCheckpointSaver,
    private readonly logger: RuntimeLogger
  ) {
    super(inner)
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    try {
      return await this.inner.getTuple(config)
    } catch (error) {
      this.logger.error("checkpointer load failed; the turn proceeds on an empty state", {
        threadId: config.configurable?.thread_id,
        error: describe(error)
      })
      this.unread.add(keyOf(config))
      return undefined
    }
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions
  ): Promise<RunnableConfig> {
    const key = keyOf(config)
    // The first save after the failed read stands on the unread state, whether or not it names a
    // parent: a run addressed at a `checkpoint_id` (a resume, a fork) keeps that id in its config
    // when the read returned nothing.
    if (this.unread.has(key)) {
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
    return this.inner.put(config, checkpoint, metadata, newVersions)
  }
}
