/**
 * `@plugboard/langgraph`: the plugboard agent loop on LangGraph. Core decides what is
 * offered, gated and loaded; this adapter runs the graph, the checkpointer and the events.
 */

/** LangGraph's in-memory checkpointer: the embedded default and the one tests use. */
export { MemorySaver } from "@langchain/langgraph"
export { STALE_RESUME } from "./AgentLoop.js"
export { type ApprovalOption, ASK_AGAIN, WaitNeeded } from "./Approvals.js"
export type { CodeModeOption } from "./CodeRun.js"
export { CANCELLED_CALL, CUT_OFF, danglingCalls } from "./CutOff.js"
export { DelegatingCheckpointSaver } from "./DelegatingCheckpointSaver.js"
export type { ToolCallEvent } from "./Events.js"
export { type AgentGraph, type CreateMainAgentOptions, createMainAgent, type MainAgent } from "./MainAgent.js"
export { INTERRUPTED_CALL } from "./ModelNode.js"
export { reasoningOf } from "./Reasoning.js"
export { makeRequestScope, prepareCatalog, type RequestScope, SubAgentInput } from "./RequestScope.js"
export type {
  AgentRequest,
  ClientToolCall,
  ClientToolsOption,
  PreloadOption,
  QueryRanking
} from "./Runtime.js"
export {
  AgentState,
  type AgentStateUpdate,
  type AgentStateValue,
  agentStateFor,
  DeltaAgentState,
  MESSAGES_SNAPSHOT_EVERY
} from "./State.js"
export {
  type DeltaItemReader,
  messagesAt,
  messageView,
  pageAt,
  type StoredItem,
  threadMessages
} from "./ThreadHistory.js"
export {
  DEFAULT_THREAD_LOCK_TTL_MS,
  defaultThreadLock,
  type HeldThread,
  holdThread,
  type ThreadLockOption
} from "./ThreadLock.js"
export type { Outcome, ToolArtifact } from "./ToolNode.js"
export {
  runTurn,
  streamTurn,
  type TurnInput,
  type TurnResult,
  textOf
} from "./Turn.js"
export { type PrefetchedRead, type StorageTimings, TurnSaver } from "./TurnSaver.js"
