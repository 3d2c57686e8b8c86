/**
 * What one turn may spend: model calls, tool calls, tokens and wall-clock time, and a guard
 * against a model that repeats the same call. A rule of the domain (docs/spec/pipeline.md#turn-bounds; the
 * docs/architecture.md#packages-ports-and-the-dependency-rule puts such rules in core), so it lives here as pure functions over a turn's tally;
 * the agent loop asks before each model call and each tool call and obeys the verdict.
 *
 * Repetition: the same tool with the same arguments (compared as canonical JSON) runs at most
 * `repeatLimit - 1` times in a turn; the `repeatLimit`-th identical call is not run, and the model
 * is told instead; one more ends the turn.
 */
import { Schema } from "effect"

/** The bounds of one turn. */
export interface Limits {
  /** Most model calls in one turn. */
  readonly maxModelCalls: number
  /** Most tool calls in one turn (meta-tool calls count). */
  readonly maxToolCalls: number
  /** Most tokens (input and output of every model call) in one turn. */
  readonly maxTokens: number
  /** Longest a turn may run, from its first model call, in milliseconds. */
  readonly wallClockMs: number
  /** How many identical calls (same tool, same arguments) make the model be told; one more ends the turn. */
  readonly repeatLimit: number
}

/** Defaults sized for an agent loop that loads a few plugins and calls a handful of tools. */
export const DEFAULT_LIMITS: Limits = {
  maxModelCalls: 25,
  maxToolCalls: 50,
  maxTokens: 200_000,
  wallClockMs: 300_000,
  repeatLimit: 3
}

/** Which bound ended a turn. */
export type Reason = "max-model-calls" | "max-tool-calls" | "max-tokens" | "wall-clock" | "repetition"

/** A turn ran into one of its bounds and was ended (`reason` names the bound, `limit` is its value). */
export class TurnBoundExceeded extends Schema.TaggedError<TurnBoundExceeded>()("TurnBoundExceeded", {
  reason: Schema.Literal("max-model-calls", "max-tool-calls", "max-tokens", "wall-clock", "repetition"),
  limit: Schema.Number,
  message: Schema.String
}) {}

/** What a turn has spent so far. */
export interface Tally {
  readonly startedAt: number
  readonly modelCalls: number
  readonly toolCalls: number
  readonly tokens: number
  /** Identical calls so far, by canonical key (`callKey`). */
  readonly repeats: ReadonlyMap<string, number>
}

/** The verdict on a step: go on (with the new tally), tell the model instead of running, or stop. */
export type Verdict =
  | { readonly _tag: "Proceed"; readonly tally: Tally }
  | { readonly _tag: "Tell"; readonly tally: Tally; readonly message: string }
  | { readonly _tag: "Stop"; readonly error: TurnBoundExceeded }

/** The tally of a turn that starts at `now`. */
export const start = (now: number): Tally => ({
  startedAt: now,
  modelCalls: 0,
  toolCalls: 0,
  tokens: 0,
  repeats: new Map()
})

const stop = (reason: Reason, limit: number, message: string): Verdict => ({
  _tag: "Stop",
  error: new TurnBoundExceeded({ reason, limit, message })
})

const overTime = (limits: Limits, tally: Tally, now: number): Verdict | undefined =>
  now - tally.startedAt > limits.wallClockMs
    ? stop("wall-clock", limits.wallClockMs, `The turn ran longer than ${limits.wallClockMs} ms.`)
    : undefined

/** Milliseconds the turn has left at `now` (0 when it has none). */
export const remainingMs = (limits: Limits, tally: Tally, now: number): number =>
  Math.max(0, tally.startedAt + limits.wallClockMs - now)

/** Before a model call: stop when the turn is out of time, model calls or tokens. */
export const beforeModelCall = (limits: Limits, tally: Tally, now: number): Verdict =>
  overTime(limits, tally, now) ??
  (tally.modelCalls >= limits.maxModelCalls
    ? stop(
        "max-model-calls",
        limits.maxModelCalls,
        `The turn made ${limits.maxModelCalls} model calls, its most.`
      )
    : tally.tokens >= limits.maxTokens
      ? stop(
          "max-tokens",
          limits.maxTokens,
          `The turn used ${tally.tokens} tokens, its most is ${limits.maxTokens}.`
        )
      : { _tag: "Proceed", tally: { ...tally, modelCalls: tally.modelCalls + 1 } })

/** Usage a provider reported for one call; either count may be absent. */
export interface Usage {
  readonly inputTokens?: number | undefined
  readonly outputTokens?: number | undefined
}

/**
 * The tokens one model call cost: the larger of the provider's usage report and `counted` (the
 * token counter's count of what was sent, tool schemas included, and of the answer). Counting
 * every call means a provider that under-reports its usage (or reports none) cannot carry a turn
 * past `maxTokens` (docs/architecture.md "Turn bounds").
 */
export const tokensOf = (usage: Usage | undefined, counted: number): number => {
  const reported = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0)
  const valid = usage !== undefined && Number.isFinite(reported) && reported > 0
  const own = Number.isFinite(counted) ? Math.max(0, counted) : 0
  return valid ? Math.max(reported, own) : own
}

/** After a model call: adds its tokens (a later model call is refused once over `maxTokens`). */
export const afterModelCall = (tally: Tally, tokens: number): Tally => ({
  ...tally,
  tokens: tally.tokens + Math.max(0, tokens)
})

/** The canonical key of a call: its tool and its arguments as JSON with sorted keys. */
export const callKey = (tool: string, args: unknown): string => `${tool}\u0000${canonical(args, 0)}`

const canonical = (value: unknown, depth: number): string => {
  if (depth > 32) return '"…"'
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v, depth + 1)).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v, depth + 1)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** What the model is told in place of a repeated call's result. */
export const repeatMessage = (tool: string, times: number): string =>
  `You have called ${tool} with these same arguments ${times} times in this turn; it was not run again, ` +
  "its result would not change. Answer with what you have, or try something else: calling it again ends the turn."

/**
 * Before a tool call: stop when the turn is out of time or tool calls, or when the model goes on
 * repeating a call it was told about; tell the model when this call is the `repeatLimit`-th
 * identical one.
 */
export const beforeToolCall = (
  limits: Limits,
  tally: Tally,
  tool: string,
  args: unknown,
  now: number
): Verdict => {
  const late = overTime(limits, tally, now)
  if (late !== undefined) return late
  if (tally.toolCalls >= limits.maxToolCalls)
    return stop(
      "max-tool-calls",
      limits.maxToolCalls,
      `The turn made ${limits.maxToolCalls} tool calls, its most.`
    )
  const key = callKey(tool, args)
  const times = (tally.repeats.get(key) ?? 0) + 1
  if (times > limits.repeatLimit)
    return stop(
      "repetition",
      limits.repeatLimit,
      `The model called ${tool} with the same arguments ${times} times in the turn, after it was told not to.`
    )
  const repeats = new Map(tally.repeats).set(key, times)
  const next: Tally = { ...tally, toolCalls: tally.toolCalls + 1, repeats }
  return times === limits.repeatLimit
    ? { _tag: "Tell", tally: next, message: repeatMessage(tool, times) }
    : { _tag: "Proceed", tally: next }
}

/**
 * Limits with defaults for those not given, checked: each a positive integer, the repeat limit at
 * least 2 (throws a RangeError naming the first that is not).
 */
export const make = (limits: Partial<Limits> = {}): Limits => {
  const all = {
    ...DEFAULT_LIMITS,
    ...Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined))
  }
  for (const [name, value] of Object.entries(all)) {
    // A repeat limit of 1 would refuse every first call.
    const least = name === "repeatLimit" ? 2 : 1
    if (!Number.isInteger(value) || (value as number) < least)
      throw new RangeError(`Turn bound ${name} must be an integer of at least ${least}, got ${value}.`)
  }
  return all as Limits
}
