/**
 * Reading a thread's messages outside a turn (`GET /messages`, paged history, tools that show a
 * conversation), whatever form the saver holds them in: a full list in the checkpoint (threads
 * written before messages were stored as deltas, and savers that store full copies), a
 * `DeltaSnapshot`, or the writes since the last full copy, which are replayed by the same
 * channel a turn loads them with (`DeltaAgentState`), so a reader and the next turn see the same
 * messages.
 */
import type { BaseMessage } from "@langchain/core/messages"
import {
  type BaseCheckpointSaver,
  type CheckpointTuple,
  isDeltaSnapshot
} from "@langchain/langgraph-checkpoint"
import { DeltaAgentState } from "./State.js"

/**
 * The messages at the checkpoint `tuple` (as `saver.getTuple` returned it; `undefined`, an empty
 * thread, has none). Reads the delta history from `saver` only when the checkpoint does not
 * hold the list itself.
 */
export const messagesAt = async (
  saver: BaseCheckpointSaver,
  tuple: CheckpointTuple | undefined
): Promise<ReadonlyArray<BaseMessage>> => {
  if (tuple === undefined) return []
  const stored = tuple.checkpoint.channel_values.messages
  if (isDeltaSnapshot(stored)) return stored.value as ReadonlyArray<BaseMessage>
  if (Array.isArray(stored)) return stored as ReadonlyArray<BaseMessage>
  if (tuple.checkpoint.channel_versions.messages === undefined) return []
  const history = (await saver.getDeltaChannelHistory({ config: tuple.config, channels: ["messages"] }))
    .messages
  const channel = DeltaAgentState.spec.messages.fromCheckpoint(history?.seed as never)
  channel.replayWrites(history?.writes ?? [])
  return channel.isAvailable() ? channel.get() : []
}

/** The messages of a thread's latest checkpoint (none for a thread that does not exist). */
export const threadMessages = async (
  saver: BaseCheckpointSaver,
  threadId: string
): Promise<ReadonlyArray<BaseMessage>> =>
  messagesAt(saver, await saver.getTuple({ configurable: { thread_id: threadId } }))
