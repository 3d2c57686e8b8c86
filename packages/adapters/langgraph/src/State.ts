/**
 * The main agent's graph state (docs/spec/graph-state.md) as a LangGraph annotation. Every
 * channel's reducer is core's (`GraphState.reducers`); this file only translates between LangChain
 * messages and the shape core reasons about.
 */

import { randomUUID } from "node:crypto"
import type { BaseMessage } from "@langchain/core/messages"
import { Annotation, DeltaChannel } from "@langchain/langgraph"
import { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { GraphState, LoadedPlugins } from "@plugboard/core"
import { DelegatingCheckpointSaver } from "./DelegatingCheckpointSaver.js"

type Core = GraphState.GraphState<BaseMessage & GraphState.StateMessage>

/**
 * Sets a message's id so that it is checkpointed too: LangChain serialises a message from its
 * constructor fields (`lc_kwargs`), so assigning `id` alone is lost on the next load.
 */
export const setMessageId = (message: BaseMessage, id: string): void => {
  message.id = id
  ;(message.lc_kwargs as { id?: string }).id = id
}

/**
 * Gives every message an id before core's reducer sees it: core dedupes by id and appends
 * id-less messages, so without ids a re-sent message would be stored twice.
 */
const withIds = (messages: ReadonlyArray<BaseMessage>): ReadonlyArray<BaseMessage> => {
  for (const m of messages) if (m.id === undefined) setMessageId(m, randomUUID())
  return messages
}

const asArray = (update: BaseMessage | ReadonlyArray<BaseMessage>): ReadonlyArray<BaseMessage> =>
  Array.isArray(update) ? update : [update as BaseMessage]

const r = GraphState.reducers

/** Wraps a core reducer as a LangGraph channel reducer (LangGraph's types are mutable). */
const lift =
  <A>(reducer: GraphState.Reducer<A>) =>
  (current: A, update: A): A =>
    reducer(current, update)

/**
 * Each channel's reducer: core's, with the messages translated (`withIds`). The annotation's
 * channels and `applyUpdate` (the agent loop's state between its steps) share them.
 */
const reducers = {
  messages: (current: Array<BaseMessage>, update: BaseMessage | Array<BaseMessage>): Array<BaseMessage> =>
    r.messages(
      current as unknown as Core["messages"],
      withIds(asArray(update)) as unknown as Core["messages"]
    ) as unknown as Array<BaseMessage>,
  config: lift(r.config),
  client: lift(r.client),
  editorRoomId: lift(r.editorRoomId),
  spaceId: lift(r.spaceId),
  currentEntityDid: lift(r.currentEntityDid),
  browserTools: lift(r.browserTools),
  agActions: lift(r.agActions),
  userContext: lift(r.userContext),
  mcpUcanContext: lift(r.mcpUcanContext),
  userPreferences: lift(r.userPreferences),
  // A checkpoint written by another version may hold anything here: read it defensively.
  loadedPlugins: (current: ReadonlyArray<string>, update: ReadonlyArray<string>): ReadonlyArray<string> =>
    r.loadedPlugins(LoadedPlugins.fromUnknown(current), LoadedPlugins.fromUnknown(update))
}

/** The LangGraph annotation of the main agent's state; reducers are core's. */
export const AgentState = Annotation.Root({
  messages: Annotation<Array<BaseMessage>, BaseMessage | Array<BaseMessage>>({
    reducer: reducers.messages,
    default: () => []
  }),
  config: Annotation<Core["config"]>({ reducer: reducers.config, default: () => ({ did: "" }) }),
  client: Annotation<Core["client"]>({ reducer: reducers.client, default: () => "portal" }),
  editorRoomId: Annotation<Core["editorRoomId"]>({
    reducer: reducers.editorRoomId,
    default: () => undefined
  }),
  spaceId: Annotation<Core["spaceId"]>({ reducer: reducers.spaceId, default: () => undefined }),
  currentEntityDid: Annotation<Core["currentEntityDid"]>({
    reducer: reducers.currentEntityDid,
    default: () => undefined
  }),
  browserTools: Annotation<Core["browserTools"]>({
    reducer: reducers.browserTools,
    default: () => undefined
  }),
  agActions: Annotation<Core["agActions"]>({ reducer: reducers.agActions, default: () => undefined }),
  userContext: Annotation<Core["userContext"]>({ reducer: reducers.userContext, default: () => ({}) }),
  mcpUcanContext: Annotation<Core["mcpUcanContext"]>({
    reducer: reducers.mcpUcanContext,
    default: () => undefined
  }),
  userPreferences: Annotation<Core["userPreferences"]>({
    reducer: reducers.userPreferences,
    default: () => undefined
  }),
  loadedPlugins: Annotation<ReadonlyArray<string>>({
    reducer: reducers.loadedPlugins,
    default: () => LoadedPlugins.empty
  })
})

/**
 * Per-channel updates of `messages` between two full copies of it (`DeltaSnapshot`s) when the
 * messages are stored as deltas. A copy costs the whole thread's bytes once; between copies a
 * checkpoint stores only the messages its step wrote, and a load replays them (one query on the
 * SQLite saver). LangGraph also copies after 5,000 supersteps without one
 * (`LANGGRAPH_DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT`), whichever comes first.
 */
export const MESSAGES_SNAPSHOT_EVERY = 2000

const appendMessages = (
  current: Array<BaseMessage>,
  writes: Array<BaseMessage | Array<BaseMessage>>
): Array<BaseMessage> =>
  GraphState.appendMessageBatches(
    current as unknown as Core["messages"],
    writes.map((w) => withIds(asArray(w))) as unknown as Array<Core["messages"]>
  ) as unknown as Array<BaseMessage>

/** How the messages channel stores them: a full copy every `MESSAGES_SNAPSHOT_EVERY` steps, else deltas. */
const messagesOptions = {
  snapshotFrequency: MESSAGES_SNAPSHOT_EVERY,
  initialValueFactory: (): Array<BaseMessage> => []
}

/** The messages as deltas through core's batch reducer (see `DeltaAgentState`). */
const messagesChannel = () =>
  new DeltaChannel<Array<BaseMessage>, BaseMessage | Array<BaseMessage>>(appendMessages, messagesOptions)

/**
 * `AgentState` with `messages` stored as deltas (LangGraph's `DeltaChannel`): each checkpoint
 * keeps only the messages its step added, and the thread is rebuilt from the writes since the
 * last full copy, through core's batch reducer (`GraphState.appendMessageBatches`). A thread
 * written with full copies (before this channel existed) loads as it is: its last full copy is
 * where the replay starts. Used on savers that read delta history in one pass (see
 * `agentStateFor`).
 */
export const DeltaAgentState = Annotation.Root({ ...AgentState.spec, messages: messagesChannel() })

/**
 * The messages channel of one turn, stored as one full copy when `newThread()` says the turn
 * began on an empty thread. Stored as deltas, a thread's first turn writes an empty stub
 * checkpoint for its messages to hang from, then each message as a write, then the checkpoint: a
 * full copy is the same bytes in one checkpoint (fewer rows, one commit), and a thread's later
 * turns go on as deltas from it. Either form loads the same messages, so a wrong answer costs
 * bytes, never a message. LangGraph makes the turn's channel (`fromCheckpoint`) after the turn's
 * load, which is when `newThread()` is asked.
 */
class TurnMessagesChannel extends DeltaChannel<Array<BaseMessage>, BaseMessage | Array<BaseMessage>> {
  constructor(private readonly newThread: () => boolean) {
    super(appendMessages, messagesOptions)
  }

  override fromCheckpoint(checkpoint?: Array<BaseMessage>) {
    const channel = super.fromCheckpoint(checkpoint)
    if (this.newThread()) channel.snapshotFrequency = 1
    return channel
  }
}

/**
 * The shape of every turn's own state (`agentStateFor` with `newThread`): the graph of that shape
 * is compiled once (`MainAgent.ts`), and each turn's copy of it is given that turn's own
 * messages channel (the one `agentStateFor` made, asking that turn's saver).
 */
export const TurnAgentState = Annotation.Root({
  ...AgentState.spec,
  messages: new TurnMessagesChannel(() => false)
}) as typeof AgentState

/**
 * The state a graph on `saver` uses: deltas (`DeltaAgentState`) when the saver under its
 * forwarding wrappers (`DelegatingCheckpointSaver`) reads delta history its own way (the SQLite
 * saver, the Postgres checkpointer's user-scoped saver, LangGraph's `MemorySaver`), full copies
 * (`AgentState`) otherwise. The base class's walk reads one whole checkpoint per ancestor, a
 * round trip each on a server database, which would make every load cost the thread's length in
 * round trips; such savers keep storing full copies until they read deltas in one pass. With
 * `newThread`, the state is the turn's own, whose messages go as one full copy on a new thread.
 */
export const agentStateFor = (
  saver: BaseCheckpointSaver,
  newThread?: (() => boolean) | undefined
): typeof AgentState => {
  let s = saver
  for (let depth = 0; depth < 8 && s instanceof DelegatingCheckpointSaver; depth++) s = s.inner
  if (s.getDeltaChannelHistory === BaseCheckpointSaver.prototype.getDeltaChannelHistory) return AgentState
  if (newThread === undefined) return DeltaAgentState as typeof AgentState
  return Annotation.Root({
    ...AgentState.spec,
    messages: new TurnMessagesChannel(newThread)
  }) as typeof AgentState
}

/** The state every node reads. */
export type AgentStateValue = typeof AgentState.State
/** A partial update a node returns. */
export type AgentStateUpdate = typeof AgentState.Update

/**
 * The state after `update`, through the same reducers as the graph's channels: how the agent loop
 * (`AgentLoop.ts`) sees its own steps before LangGraph applies them at the loop's end. Keys that
 * are not channels are ignored, as LangGraph ignores them.
 */
export const applyUpdate = (state: AgentStateValue, update: AgentStateUpdate): AgentStateValue => {
  const next: Record<string, unknown> = { ...state }
  for (const [key, value] of Object.entries(update)) {
    if (!Object.hasOwn(reducers, key)) continue
    const reduce = reducers[key as keyof typeof reducers] as (current: unknown, update: unknown) => unknown
    next[key] = reduce(next[key], value)
  }
  return next as AgentStateValue
}

/** The state as core's functions (RuntimeContext, reducers) see it. */
export const toCoreState = (state: AgentStateValue): GraphState.GraphState =>
  state as unknown as GraphState.GraphState
