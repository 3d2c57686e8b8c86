/**
 * Core's turn bounds (`TurnBounds`) applied by the agent loop: the model step asks before each
 * model call and records what it cost, the tool step asks before each tool call. A bound that is
 * reached ends the turn by throwing core's `TurnBoundExceeded` (its `reason` names the bound); a
 * repeated call is answered with core's message instead of being run. The rule is core's; this
 * module only keeps the turn's tally and the clock.
 *
 * Bounds apply when the request carries `turnBounds`. The tally is the agent runtime's own
 * (`AgentRuntime.tally`): one runtime per request, one turn per request. Its wall clock starts at
 * the turn's first model call. A call's tokens are the larger of the provider's report and the
 * request's `TokenCounter` count of what was sent (system prompt, messages, tool schemas) and
 * answered (core's `TurnBounds.tokensOf`).
 */
import type { BaseMessage } from "@langchain/core/messages"
import { TokenCounter, TurnBounds } from "@plugboard/core"
import type { AgentRuntime } from "./Runtime.js"
import type { FunctionDefinition } from "./ToolDefinitions.js"

const tallyOf = (rt: AgentRuntime, now: number): TurnBounds.Tally => {
  rt.tally.current ??= TurnBounds.start(now)
  return rt.tally.current
}

/** Before a model call: throws `TurnBoundExceeded` when the turn may not make another. */
export const guardModelCall = (rt: AgentRuntime, now = Date.now()): void => {
  const limits = rt.request.turnBounds
  if (limits === undefined) return
  const verdict = TurnBounds.beforeModelCall(limits, tallyOf(rt, now), now)
  if (verdict._tag === "Stop") throw verdict.error
  rt.tally.current = verdict.tally
}

/**
 * The counter of a request that names none: core's heuristic, remembering what it counted
 * (`TokenCounter.memoized`, as a host wraps its own counter at boot). One for the process: a
 * count is a pure function of the text, so requests sharing it share only right answers.
 */
const defaultCounter = TokenCounter.memoized(TokenCounter.heuristic)

const textOf = (m: BaseMessage): string =>
  typeof m.content === "string" ? m.content : JSON.stringify(m.content)

/**
 * After a model call: adds its tokens, the larger of the provider's usage report and the count of
 * what was sent (`input` and the offered `tools`' definitions) and answered.
 */
export const recordModelCall = (
  rt: AgentRuntime,
  sent: {
    readonly input: ReadonlyArray<BaseMessage>
    readonly tools: ReadonlyArray<FunctionDefinition>
  },
  answer: BaseMessage,
  usage: TurnBounds.Usage | undefined
): void => {
  const tally = rt.tally.current
  if (rt.request.turnBounds === undefined || tally === undefined) return
  const counter = rt.request.tokenCounter ?? defaultCounter
  // A turn sends the same system prompt, history and tools again at each call: the offered
  // tools' schemas are counted once per turn by their names (fixed within a request), and once
  // across turns for the very same definition objects (each offered tool's definition is one
  // object, `ToolDefinitions.ts`: the same list has the same text) when the counter remembers,
  // as each text is (`TokenCounter.memoized`).
  const counts = rt.tally.counts
  const tools = sent.tools
  const names = tools.map((t) => t.function.name).join("\u0000")
  const toolsKey = `\u0000tools\u0000${names}`
  let toolTokens = counts.get(toolsKey)
  if (toolTokens === undefined) {
    toolTokens = TokenCounter.countParts(counter, names, tools, () => JSON.stringify(tools))
    counts.set(toolsKey, toolTokens)
  }
  let counted = toolTokens + counter.count(textOf(answer))
  for (const m of sent.input) counted += counter.count(textOf(m))
  rt.tally.current = TurnBounds.afterModelCall(tally, TurnBounds.tokensOf(usage, counted))
}
/**
 * Before a tool call: throws `TurnBoundExceeded` when the turn may not make it; returns what the
 * model is told instead of the result when the call repeats one it made too often.
 */
export const guardToolCall = (
  rt: AgentRuntime,
  tool: string,
  args: unknown,
  now = Date.now()
): string | undefined => {
  const limits = rt.request.turnBounds
  if (limits === undefined) return undefined
  const verdict = TurnBounds.beforeToolCall(limits, tallyOf(rt, now), tool, args, now)
  if (verdict._tag === "Stop") throw verdict.error
  rt.tally.current = verdict.tally
  return verdict._tag === "Tell" ? verdict.message : undefined
}
