/**
 * The scripted model's vocabulary: what a script step or a responder (a script replayer, the
 * router) answers, and what it sees of each invocation. Its own module so that `Router.ts` and
 * `ScriptedChatModel.ts` both depend on it instead of on each other.
 */
import type { BaseMessage } from "@langchain/core/messages"
import type { ToolSpec } from "@plugboard/core"

/** One tool call the model makes. `args` defaults to `{}`. */
export interface ScriptedToolCall {
  readonly tool: string
  readonly args?: Readonly<Record<string, unknown>>
}

/** A final answer (a string) or an AI message carrying one or several tool calls. */
export type ScriptedAction = string | ScriptedToolCall | ReadonlyArray<ScriptedToolCall>

/** A reply with the model's reasoning about it, exposed as a provider exposes reasoning. */
export interface ScriptedReasonedReply {
  readonly reasoning: string
  readonly reply: ScriptedAction
}

/**
 * What the model answers on one invocation: a string is a final answer, a tool call (or several)
 * is an AI message carrying tool calls, `{ reasoning, reply }` is either of them with the
 * model's reasoning, an `Error` is thrown (to exercise `onError` middleware).
 */
export type ScriptedReply = ScriptedAction | ScriptedReasonedReply | Error

/** What a step or a responder sees of one invocation. */
export interface ScriptedTurn {
  readonly messages: ReadonlyArray<BaseMessage>
  /** Names of the tools bound for this invocation, in bind order. */
  readonly offeredTools: ReadonlyArray<string>
  /**
   * The same tools as their definitions (name, description, JSON Schema of the arguments), in
   * the same order: what a responder routes on when it knows no catalog (the router over tools a
   * client sent, `Router.ts`). The scripted model computes them on first read; a turn built by
   * hand may leave them out, and a reader then has the names only.
   */
  readonly tools?: ReadonlyArray<ToolSpec.ToolSpec>
  /** 0-based index of this invocation among all invocations of the model and its copies. */
  readonly callIndex: number
}

/** A script step: a fixed reply, or a reply computed from the conversation so far. */
export type ScriptStep = ScriptedReply | ((turn: ScriptedTurn) => ScriptedReply)

/** Decides the reply of each invocation (a script replayer, or the router). */
export type Responder = (turn: ScriptedTurn) => ScriptedReply
