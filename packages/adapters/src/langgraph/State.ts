/**
 * The main agent's graph state (seed 004) as a LangGraph annotation. Every channel's reducer is
 * core's (`GraphState.reducers`); this file only translates between LangChain messages and the
 * shape core reasons about.
 */

import { randomUUID } from "node:crypto"
import type { BaseMessage } from "@langchain/core/messages"
import { Annotation } from "@langchain/langgraph"
import { GraphState, LoadedPlugins } from "@plugboard/core"

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

/** The LangGraph annotation of the main agent's state; reducers are core's. */
export const AgentState = Annotation.Root({
  messages: Annotation<Array<BaseMessage>, BaseMessage | Array<BaseMessage>>({
    reducer: (current, update) =>
      r.messages(
        current as unknown as Core["messages"],
        withIds(asArray(update)) as unknown as Core["messages"]
      ) as unknown as Array<BaseMessage>,
    default: () => []
  }),
  config: Annotation<Core["config"]>({ reducer: lift(r.config), default: () => ({ did: "" }) }),
  client: Annotation<Core["client"]>({ reducer: lift(r.client), default: () => "portal" }),
  editorRoomId: Annotation<Core["editorRoomId"]>({ reducer: lift(r.editorRoomId), default: () => undefined }),
  spaceId: Annotation<Core["spaceId"]>({ reducer: lift(r.spaceId), default: () => undefined }),
  currentEntityDid: Annotation<Core["currentEntityDid"]>({
    reducer: lift(r.currentEntityDid),
    default: () => undefined
  }),
  browserTools: Annotation<Core["browserTools"]>({ reducer: lift(r.browserTools), default: () => undefined }),
  agActions: Annotation<Core["agActions"]>({ reducer: lift(r.agActions), default: () => undefined }),
  userContext: Annotation<Core["userContext"]>({ reducer: lift(r.userContext), default: () => ({}) }),
  mcpUcanContext: Annotation<Core["mcpUcanContext"]>({
    reducer: lift(r.mcpUcanContext),
    default: () => undefined
  }),
  userPreferences: Annotation<Core["userPreferences"]>({
    reducer: lift(r.userPreferences),
    default: () => undefined
  }),
  loadedPlugins: Annotation<ReadonlyArray<string>>({
    // A checkpoint written by another version may hold anything here: read it defensively.
    reducer: (current, update) =>
      r.loadedPlugins(LoadedPlugins.fromUnknown(current), LoadedPlugins.fromUnknown(update)),
    default: () => LoadedPlugins.empty
  })
})

/** The state every node reads. */
export type AgentStateValue = typeof AgentState.State
/** A partial update a node returns. */
export type AgentStateUpdate = typeof AgentState.Update

/** The state as core's functions (RuntimeContext, reducers) see it. */
export const toCoreState = (state: AgentStateValue): GraphState.GraphState =>
  state as unknown as GraphState.GraphState
