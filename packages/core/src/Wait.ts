/**
 * What a run that waits for its user asks, and what answers it (issue 40, docs/waiting.md).
 *
 * A turn can stop at a point where only its user can decide: a tool that needs approval before
 * it runs, a form a tool (or an MCP server's elicitation) asks to be filled, an account to
 * connect. The turn records a `WaitRequest`, checkpoints, and is released; a resume carries a
 * `WaitAnswer`. The rules of which answer fits which request, and what the model is told when
 * the user said no or never answered, live here, once, for every front door.
 */
import { Schema } from "effect"
import { Journal } from "./ProgramWait.js"

/**
 * A tool asks to run: which tool of which plugin, with which arguments, and why it waits. A call a
 * code-mode program made carries the program's journal (`ProgramWait`), which the resumed turn
 * replays; it is kept with the wait, never shown in its frame.
 */
export const ApprovalRequest = Schema.TaggedStruct("approval", {
  plugin: Schema.String,
  tool: Schema.String,
  args: Schema.Unknown,
  reason: Schema.String,
  program: Schema.optional(Journal)
})

/** A form to fill: a JSON Schema of an object, and the question it answers. */
export const InputRequest = Schema.TaggedStruct("input", {
  plugin: Schema.String,
  message: Schema.String,
  schema: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/**
 * An account to connect: the URL that starts the flow, and why the plugin needs it. A turn that
 * loads a plugin its user has not connected waits with it (`Connect.waitOf`); the host answers it
 * `connected` when the user's connection is made.
 */
export const ConnectRequest = Schema.TaggedStruct("connect", {
  plugin: Schema.String,
  url: Schema.String,
  reason: Schema.optional(Schema.String)
})

/** What a run that ends waiting asks: an approval or a connect (an `input` wait stays on its live call). */
export const RunWaitRequest = Schema.Union(ApprovalRequest, ConnectRequest)
/** What a run that ends waiting asks: an approval or a connect (an `input` wait stays on its live call). */
export type RunWaitRequest = typeof RunWaitRequest.Type

/** What a waiting run asks its user. */
export const WaitRequest = Schema.Union(ApprovalRequest, InputRequest, ConnectRequest)
/** What a waiting run asks its user. */
export type WaitRequest = typeof WaitRequest.Type

/** The user approved (`approved: true`) or denied the call. */
export const Decision = Schema.TaggedStruct("decision", {
  approved: Schema.Boolean,
  note: Schema.optional(Schema.String)
})

/** The values of the form (checked against the request's schema by the caller that has a validator). */
export const Values = Schema.TaggedStruct("values", {
  values: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/** The user declined to fill the form (an MCP elicitation's `decline`). */
export const Declined = Schema.TaggedStruct("declined", {})

/** The user's connection was made (only the host records it, from the OAuth callback). */
export const Connected = Schema.TaggedStruct("connected", {})

/** Nobody answered before the wait's deadline. Only the host records it, never a client. */
export const TimedOut = Schema.TaggedStruct("timed-out", {})

/** What answers a wait. */
export const WaitAnswer = Schema.Union(Decision, Values, Declined, Connected, TimedOut)
/** What answers a wait. */
export type WaitAnswer = typeof WaitAnswer.Type

/** The kinds of answer each kind of request takes (a timeout answers any). */
const FITS: Readonly<Record<WaitRequest["_tag"], ReadonlyArray<WaitAnswer["_tag"]>>> = {
  approval: ["decision", "timed-out"],
  input: ["values", "declined", "timed-out"],
  connect: ["connected", "timed-out"]
}

/**
 * Why `answer` cannot answer `request`, as a sentence for the client, or undefined when it fits.
 * A client never sends `timed-out` or `connected`: `fromClient` says so.
 */
export const misfit = (request: WaitRequest, answer: WaitAnswer, fromClient: boolean): string | undefined => {
  if (fromClient && answer._tag === "timed-out") return "a client cannot answer a wait with 'timed-out'"
  if (fromClient && answer._tag === "connected")
    return "a client cannot answer a wait with 'connected': the host records it when the connection is made"
  if (!FITS[request._tag].includes(answer._tag)) {
    const wanted = FITS[request._tag].filter((tag) => tag !== "timed-out")
    return `a wait for ${request._tag} is answered with ${wanted.map((t) => `'${t}'`).join(" or ")}, not '${answer._tag}'`
  }
  return undefined
}

/** What answers an input wait: the values, a decline, or the host's timeout. */
export type InputAnswer = Extract<WaitAnswer, { readonly _tag: "values" | "declined" | "timed-out" }>

/** A question a tool asks its user while it runs (an MCP elicitation): the text and a JSON Schema of an object. */
export interface InputQuestion {
  readonly message: string
  readonly schema: Readonly<Record<string, unknown>>
}

/** What the tool that waited answers the model, when the user did not let it run. */
export const NOT_APPROVED = "Not approved: the user denied this call, so the tool did not run."
/** What the tool answers when nobody answered in time. */
export const NO_ANSWER = "No answer: the user did not answer in time, so the tool did not run."

/**
 * What the model is told for an answer that does not let the tool go on, or undefined when the
 * tool runs (an approval) or gets the values (an input).
 */
export const refusalText = (answer: WaitAnswer): string | undefined => {
  if (answer._tag === "timed-out") return NO_ANSWER
  if (answer._tag === "decision" && !answer.approved)
    return answer.note === undefined || answer.note.trim() === ""
      ? NOT_APPROVED
      : `${NOT_APPROVED} The user said: ${answer.note.trim().slice(0, 500)}`
  return undefined
}
