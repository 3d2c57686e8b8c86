/**
 * Seed 002, "Checkpointer load: error logged; falls back to empty state. Turn proceeds." A
 * LangGraph graph reads its thread through `getTuple`; this wrapper turns a failing read into
 * "no checkpoint yet", so the turn runs on a fresh state. Writes are not masked: a turn whose
 * state cannot be saved must fail loudly rather than pretend it was kept.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph-checkpoint"
import type { RuntimeLogger } from "@plugboard/core"
import { DelegatingCheckpointSaver } from "./DelegatingCheckpointSaver.js"

/** Delegates to `inner`; a failing `getTuple` is logged and read as an empty thread. */
export class ResilientCheckpointer extends DelegatingCheckpointSaver {
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
        error: error instanceof Error ? error.message : String(error)
      })
      return undefined
    }
  }
}
