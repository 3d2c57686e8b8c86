/**
 * Reading a thread's messages outside a turn (`GET /messages`, paged history, tools that show a
 * conversation), whatever form the saver holds them in: a full list in the checkpoint (threads
 * written before messages were stored as deltas, and savers that store full copies), a
 * `DeltaSnapshot`, or the writes since the last full copy, which are replayed by the same
 * channel a turn loads them with (`DeltaAgentState`), so a reader and the next turn see the same
 * messages.
 */
import { type BaseMessage, isBaseMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  type BaseCheckpointSaver,
  type CheckpointTuple,
  isDeltaSnapshot
} from "@langchain/langgraph-checkpoint"
import { GraphState, HistoryPage } from "@plugboard/core"
import { Either } from "effect"
import { DelegatingCheckpointSaver } from "./DelegatingCheckpointSaver.js"
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

/** A stored message as a saver that reads delta history item by item describes it, undecoded. */
export interface StoredItem {
  /** The message's id, when it has one. */
  readonly id: string | undefined
  /** Its LangChain class (`HumanMessage`, `AIMessage`, ...). */
  readonly kind: string
  /** Where it is stored, for the saver's `deltaItemValues`. */
  readonly source: unknown
}

/**
 * A saver that reads a delta channel's history item by item (the SQLite saver): the items of the
 * seed and of the writes after it, undecoded, then the values of a few of them. Either answers
 * `undefined` when it cannot, and the whole history is read instead.
 */
export interface DeltaItemReader {
  readonly deltaItems: (
    config: RunnableConfig,
    channel: string
  ) => Promise<
    { readonly seed: ReadonlyArray<StoredItem>; readonly writes: ReadonlyArray<StoredItem> } | undefined
  >
  readonly deltaItemValues: (
    config: RunnableConfig,
    channel: string,
    sources: ReadonlyArray<unknown>
  ) => Promise<ReadonlyArray<unknown> | undefined>
}

const isItemReader = (saver: BaseCheckpointSaver): saver is BaseCheckpointSaver & DeltaItemReader =>
  typeof (saver as Partial<DeltaItemReader>).deltaItems === "function" &&
  typeof (saver as Partial<DeltaItemReader>).deltaItemValues === "function"

/**
 * The item reader under `saver`: itself, or one under plain forwarding wrappers
 * (`DelegatingCheckpointSaver`, which pass configs through unchanged). A wrapper that rewrites
 * configs (a user-scoped view) hides the saver under it, whose thread ids differ.
 */
const itemReaderOf = (saver: BaseCheckpointSaver): DeltaItemReader | undefined => {
  let s = saver
  for (let depth = 0; depth < 8; depth++) {
    if (isItemReader(s)) return s
    if (!(s instanceof DelegatingCheckpointSaver)) return undefined
    s = s.inner
  }
  return undefined
}

/**
 * The outline made of the items a saver answered, by the object it answered: a saver that keeps
 * its items (the SQLite saver) answers the same object until the thread changes, so the pages read
 * between two turns place the items once.
 */
const outlines = new WeakMap<object, ReadonlyArray<StoredItem>>()

/** How paged history reads a message: its id, and whether it is the user's (a turn's start). */
export const messageView: HistoryPage.MessageView<BaseMessage> = {
  idOf: (m) => m.id,
  startsTurn: (m) => m.getType() === "human"
}

/** The classes whose `getType()` is "human": the messages that start a turn. */
const HUMAN = new Set(["HumanMessage", "HumanMessageChunk"])
const itemView: HistoryPage.MessageView<StoredItem> = {
  idOf: (item) => item.id,
  startsTurn: (item) => HUMAN.has(item.kind)
}

/**
 * One page of the thread at checkpoint `tuple` (`HistoryPage`: whole turns, opaque cursors). On a
 * saver that reads delta history item by item, the page is found over the thread's outline — each
 * stored message's id and class, placed where core's messages reducer places it — and only the
 * page's messages are decoded, never the thread (docs/benchmarks.md, history pages). Otherwise,
 * or when the saver cannot (another serializer), the page is cut from the whole list
 * (`messagesAt`). Both give the same page and the same cursors (for messages with an id).
 */
export const pageAt = async (
  saver: BaseCheckpointSaver,
  tuple: CheckpointTuple | undefined,
  request: HistoryPage.PageRequest
): Promise<Either.Either<HistoryPage.Page<BaseMessage>, HistoryPage.HistoryPageError>> => {
  const reader = itemReaderOf(saver)
  if (
    reader !== undefined &&
    tuple !== undefined &&
    tuple.checkpoint.channel_values.messages === undefined &&
    tuple.checkpoint.channel_versions.messages !== undefined
  ) {
    const items = await reader.deltaItems(tuple.config, "messages")
    if (items !== undefined) {
      // The same rule that places the decoded messages (DeltaAgentState replays the writes onto the seed).
      const outline =
        outlines.get(items) ??
        GraphState.appendMessages(
          items.seed as ReadonlyArray<StoredItem & GraphState.StateMessage>,
          items.writes as ReadonlyArray<StoredItem & GraphState.StateMessage>
        )
      outlines.set(items, outline)
      const window = HistoryPage.window(outline, itemView, request)
      if (Either.isLeft(window)) return Either.left(window.left)
      const { start, end, ...cursors } = window.right
      const values = await reader.deltaItemValues(
        tuple.config,
        "messages",
        outline.slice(start, end).map((item) => item.source)
      )
      if (values?.every(isBaseMessage)) return Either.right({ messages: values, ...cursors })
    }
  }
  return HistoryPage.page(await messagesAt(saver, tuple), messageView, request)
}
