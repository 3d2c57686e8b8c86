/**
 * How a code-mode program waits for its user (issue 40, docs/waiting.md#programs-that-wait).
 *
 * A program's call to a tool that needs approval stops the program: the call is asked about as a
 * direct call is, and the wait keeps the program's journal, the answer each earlier call of the
 * program gave it. A sandbox's state cannot outlive a restart, so the resumed turn runs the same
 * program again from its start and replays it: each call that matches the journal's next entry
 * (same tool, same arguments) gets the recorded answer without running again; the call the wait
 * was about then runs if approved (or gets core's refusal); every later call runs live, and one
 * more that needs approval waits again with the longer journal. So no call runs twice and none
 * that needs approval runs without its own answer.
 *
 * A program that makes other calls when run again (it used `Math.random` or the time in its
 * arguments) has diverged: it is stopped at that call, which does not run, and the model is told.
 */
import { Schema } from "effect"

/** What a call gave the program: a value, or the error the program saw thrown. */
export const CallAnswer = Schema.Union(
  Schema.Struct({ ok: Schema.Literal(true), value: Schema.Unknown }),
  Schema.Struct({ ok: Schema.Literal(false), error: Schema.String })
)

/** One call a program made, and what it was answered. */
export const JournalEntry = Schema.Struct({
  tool: Schema.String,
  args: Schema.Unknown,
  answer: CallAnswer
})
/** One call a program made, and what it was answered. */
export type JournalEntry = typeof JournalEntry.Type

/** A waiting program's calls before the one it waits for, in order. */
export const Journal = Schema.Struct({ calls: Schema.Array(JournalEntry) })
/** A waiting program's calls before the one it waits for, in order. */
export type Journal = typeof Journal.Type

/** A call as replay compares it: the tool's name and its arguments. */
export interface Call {
  readonly tool: string
  readonly args: unknown
}

/** JSON with object keys sorted, so that two argument objects with the same content compare equal. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        )
      : v
  ) ?? "undefined"

/** Whether two calls are the same call: the same tool with the same arguments. */
export const sameCall = (a: Call, b: Call): boolean =>
  a.tool === b.tool && canonical(a.args) === canonical(b.args)

/** Where a replay stands: how many journal entries were matched, and whether the waited call came. */
export interface Cursor {
  readonly journal: Journal
  /** The call the wait was about, which comes right after the journal. */
  readonly waited: Call
  readonly at: number
  readonly waitedCame: boolean
}

/** A replay of `journal` that ends with the call `waited` (the wait's own tool and arguments). */
export const replay = (journal: Journal, waited: Call): Cursor => ({
  journal,
  waited,
  at: 0,
  waitedCame: false
})

/** What the program's next call is, on replay. */
export type Step =
  /** Answered from the journal: it does not run again. */
  | { readonly _tag: "replayed"; readonly answer: typeof CallAnswer.Type }
  /** The call the wait was about: it runs or is refused as its user answered. */
  | { readonly _tag: "waited" }
  /** Past the replay: the call runs as any call does. */
  | { readonly _tag: "live" }
  /** Not the call the first run made here: the program is stopped, nothing more runs. */
  | { readonly _tag: "diverged"; readonly message: string }

const describeCall = (call: Call): string => {
  const args = canonical(call.args)
  return `'${call.tool}' with ${args.length > 200 ? `${args.slice(0, 200)}…` : args}`
}

/** What the model is told when a program did not make the same calls when it was run again. */
export const divergedText = (position: number, expected: Call, got: Call | undefined): string =>
  `The program stopped: it was run again after its user answered, and its call ${position} ` +
  `${got === undefined ? "never came" : `was ${describeCall(got)}`} where the first run called ` +
  `${describeCall(expected)}; so nothing more ran. A program that waits for approval must make the ` +
  "same calls in the same order when it is run again: no random values or times in its arguments."

/** The step for the program's next call `call`, and the cursor after it. */
export const next = (cursor: Cursor, call: Call): { readonly step: Step; readonly cursor: Cursor } => {
  if (cursor.waitedCame) return { step: { _tag: "live" }, cursor }
  const position = cursor.at + 1
  const entry = cursor.journal.calls[cursor.at]
  if (entry !== undefined) {
    return sameCall(entry, call)
      ? { step: { _tag: "replayed", answer: entry.answer }, cursor: { ...cursor, at: position } }
      : { step: { _tag: "diverged", message: divergedText(position, entry, call) }, cursor }
  }
  return sameCall(cursor.waited, call)
    ? { step: { _tag: "waited" }, cursor: { ...cursor, waitedCame: true } }
    : { step: { _tag: "diverged", message: divergedText(position, cursor.waited, call) }, cursor }
}

/** Why a program that ended diverged (it never made the call its user answered), or undefined. */
export const unfinished = (cursor: Cursor): string | undefined => {
  if (cursor.waitedCame) return undefined
  const entry = cursor.journal.calls[cursor.at]
  return divergedText(cursor.at + 1, entry ?? cursor.waited, undefined)
}

/** What a program's call is told when it needs approval but the program runs beside other calls. */
export const NOT_ALONE =
  "Not run: this call needs the user's approval, and a program waits for it only when it is the only call of its step. Run the program alone, or call the tool directly."

/** What a program's call is told when the program's earlier answers are too large to keep while it waits. */
export const TOO_LARGE = (maxChars: number): string =>
  `Not run: this call needs the user's approval, but what the program's earlier calls returned is over ${maxChars} characters, too much to keep while it waits. Call the tool directly.`
