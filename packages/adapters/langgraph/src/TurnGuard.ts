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

/** Tool lists whose definitions `countTools` remembers, per counter. */
const TOOL_LISTS_KEPT = 64

/** Per counter: the last tool lists counted, by their names, with the definitions they held. */
const toolCounts = new WeakMap<
  TokenCounter.TokenCounterService,
  Map<string, { readonly tools: ReadonlyArray<FunctionDefinition>; readonly count: number }>
>()

/**
 * The count of `tools`' schemas (`JSON.stringify` of the list), remembered across turns: every
 * turn of a host offers the same few lists again, and each definition is the same object for
 * the same offered tool (`ToolDefinitions.ts`), so a list whose items are the very objects
 * counted before has the same text and the same count. Any other list is counted.
 */
const countTools = (
  counter: TokenCounter.TokenCounterService,
  names: string,
  tools: ReadonlyArray<FunctionDefinition>
): number => {
  let kept = toolCounts.get(counter)
  if (kept === undefined) {
    kept = new Map()
    toolCounts.set(counter, kept)
  }
  const known = kept.get(names)
  if (
    known !== undefined &&
    known.tools.length === tools.length &&
    known.tools.every((t, i) => t === tools[i])
  )
    return known.count
  const count = counter.count(JSON.stringify(tools))
  if (kept.size >= TOOL_LISTS_KEPT && known === undefined) kept.clear()
  kept.set(names, { tools: tools.slice(), count })
  return count
}

/** Texts whose count `countText` remembers, per counter, and their characters in all. */
const TEXTS_KEPT = 512
const TEXT_CHARS_KEPT = 1_000_000

/** Per counter: the counts of the texts counted last, and how many characters they hold. */
const textCounts = new WeakMap<
  TokenCounter.TokenCounterService,
  { readonly counts: Map<string, number>; chars: number }
>()

/**
 * `counter.count(text)`, remembered across turns by the text itself: every call of a turn sends
 * the system prompt and the history again, and every turn of a host sends the same system prompt
 * for the same loaded plugins and a thread's earlier messages again. A count depends on the text
 * alone, so a remembered one is the count. Bounded (texts and characters): when full, it starts
 * over; a text longer than an eighth of the bound is counted and not kept.
 */
export const countText = (counter: TokenCounter.TokenCounterService, text: string): number => {
  let kept = textCounts.get(counter)
  if (kept === undefined) {
    kept = { counts: new Map(), chars: 0 }
    textCounts.set(counter, kept)
  }
  const known = kept.counts.get(text)
  if (known !== undefined) return known
  const count = counter.count(text)
  if (text.length > TEXT_CHARS_KEPT / 8) return count
  if (kept.counts.size >= TEXTS_KEPT || kept.chars + text.length > TEXT_CHARS_KEPT) {
    kept.counts.clear()
    kept.chars = 0
  }
  kept.counts.set(text, count)
  kept.chars += text.length
  return count
}

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
  const counter = rt.request.tokenCounter ?? TokenCounter.heuristic
  // A turn sends the same system prompt, history and tools again at each call: the offered
  // tools' schemas are counted once per turn by their names (fixed within a request), and each
  // text once for as long as `countText` keeps it.
  const counts = rt.tally.counts
  const tools = sent.tools
  const names = tools.map((t) => t.function.name).join("\u0000")
  const toolsKey = `\u0000tools\u0000${names}`
  let toolTokens = counts.get(toolsKey)
  if (toolTokens === undefined) {
    toolTokens = countTools(counter, names, tools)
    counts.set(toolsKey, toolTokens)
  }
  let counted = toolTokens + countText(counter, textOf(answer))
  for (const m of sent.input) counted += countText(counter, textOf(m))
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
