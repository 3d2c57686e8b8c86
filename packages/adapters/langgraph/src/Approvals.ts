/**
 * The tool step's approval gate (issue 40, docs/waiting.md): a batch of calls that holds a call
 * core's `Approval` rule says needs approval stops before any of its calls runs, with
 * `WaitNeeded`; the turn saves the thread as it is (the model's answer with its calls
 * unanswered) and ends waiting. A turn that resumes the wait (`ApprovalOption.resume`) runs the
 * same batch again: the call that waited runs when approved, and otherwise is answered with core's
 * refusal ("not approved" / "no answer"). The answer serves that one batch, the turn's first tool
 * step: a later call with the same arguments waits again.
 *
 * One approval per batch: when several calls of a batch need approval, the wait asks about the
 * first; on resume, the others are not run and the model is told to call them again, so each
 * asks on its own. No call that needs approval ever runs without its own answer.
 */
import { Approval, ProgramWait, Wait } from "@plugboard/core"

/** What the host tells the agent about approvals for one turn. */
export interface ApprovalOption {
  /** The operator's list of tools that need approval (`APPROVAL_TOOLS`), beside the definitions'. */
  readonly operator: Approval.OperatorList
  /**
   * The wait this turn resumes: what it asked and how it was answered. It answers the call of the
   * thread's waiting batch with that plugin, tool and arguments (the wait's record holds no call
   * id; the user approved exactly that call).
   */
  readonly resume?: { readonly request: Wait.RunWaitRequest; readonly answer: Wait.WaitAnswer } | undefined
  /**
   * Whether a load of a plugin the user has not connected waits for them to connect (a `connect`
   * wait: the turn can wait), rather than answering the model with the link.
   */
  readonly connect?: boolean | undefined
  /**
   * Asks the user a question on behalf of a call in flight (an MCP elicitation), as an `input`
   * wait that stays on the live call: the host emits the `waiting` frame and resolves with the
   * answer. Given to the call as `RuntimeContext.toolCall.ask`; absent, tools cannot ask.
   */
  readonly ask?:
    | ((asked: {
        readonly plugin: string
        readonly tool: string
        readonly args: Record<string, unknown>
        readonly question: Wait.InputQuestion
        readonly signal: AbortSignal
      }) => Promise<Wait.InputAnswer>)
    | undefined
}

/**
 * What a stopped batch asks its user, with the model's call id it is for: an approval, or a
 * connect (a load of a plugin the user has not connected, `Connect.waitOf`).
 */
export class WaitNeeded extends Error {
  override readonly name = "WaitNeeded"
  constructor(
    readonly callId: string,
    readonly request: Wait.RunWaitRequest
  ) {
    super(
      request._tag === "approval"
        ? `the call '${request.tool}' of '${request.plugin}' waits for its user's approval`
        : `the load of '${request.plugin}' waits for its user to connect their account`
    )
  }
}

/** What the other calls of a resumed batch that need approval are told. */
export const ASK_AGAIN =
  "Not run: this call needs the user's approval, and only one call is approved at a time. Call it again to ask."

/** A call as the gate sees it: its id, name and arguments, and the tool it would run (when it would run one). */
export interface GatedCall {
  readonly call: { readonly id: string; readonly name: string; readonly args: Record<string, unknown> }
  readonly approval?: Approval.ToolRef | undefined
}

/** What to ask the user before `gated` runs, or undefined when it runs without asking. */
export const requestFor = (
  operator: Approval.OperatorList,
  gated: GatedCall
): typeof Wait.ApprovalRequest.Type | undefined => {
  const { call, approval } = gated
  if (approval === undefined || !Approval.needsApproval(approval, operator)) return undefined
  return {
    _tag: "approval",
    plugin: approval.plugin,
    tool: call.name,
    args: call.args,
    reason: Approval.reasonOf(approval, operator)
  }
}

/** What the gate decided for a call of the batch: run as planned, or answer with `content`. */
export type GateDecision = { readonly _tag: "run" } | { readonly _tag: "answer"; readonly content: string }

/**
 * The gate for one batch: a decision per call, in order, or `WaitNeeded` thrown for the
 * batch's first call that needs approval when the turn resumes none of them.
 */
export const gate = (
  option: ApprovalOption | undefined,
  calls: ReadonlyArray<GatedCall>
): ReadonlyArray<GateDecision> => {
  const run: GateDecision = { _tag: "run" }
  if (option === undefined) return calls.map(() => run)
  const needs = calls.map(
    (c) => c.approval !== undefined && Approval.needsApproval(c.approval, option.operator)
  )
  const first = needs.indexOf(true)
  const resumed = option.resume
  // The call the wait was about is answered as the user answered it, even if the rule changed
  // since (an operator's list edited across a restart): a denied call never runs. A program's
  // wait is answered inside its program (`CodeRun.ts`), not here.
  const asked =
    resumed?.request._tag === "approval" && resumed.request.program === undefined
      ? resumed.request
      : undefined
  const at =
    asked === undefined
      ? -1
      : calls.findIndex(
          (c) =>
            c.approval !== undefined &&
            c.approval.plugin === asked.plugin &&
            ProgramWait.sameCall({ tool: c.call.name, args: c.call.args }, asked)
        )
  if (at < 0 && first < 0) return calls.map(() => run)
  if (resumed === undefined || at < 0) {
    const call = calls[first]!
    throw new WaitNeeded(call.call.id, requestFor(option.operator, call)!)
  }
  const refusal = Wait.refusalText(resumed.answer)
  return calls.map((_, i): GateDecision => {
    if (i === at) return refusal === undefined ? run : { _tag: "answer", content: refusal }
    return needs[i] ? { _tag: "answer", content: ASK_AGAIN } : run
  })
}
