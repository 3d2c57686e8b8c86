/**
 * Questions a tool asks the gateway's client while it runs (an upstream MCP server's elicitation,
 * `RuntimeContext.toolCall.ask`), through the SDK's multi-round-trip seam
 * (docs/mcp-gateway.md#questions): the call's answer is then `input_required`, carrying the
 * question as an embedded `elicitation/create` and an opaque `requestState` naming it; the client
 * answers by sending the same `tools/call` again with its `inputResponses`, and that round goes on
 * with the call where it waited. On 2026-07-28 the client does the rounds (the SDK v2 client
 * fulfils them through its `elicitation/create` handler); on a 2025 session the SDK's shim does
 * them on the server, as `elicitation/create` requests to the client. One code path, both eras.
 *
 * The call runs on between rounds (the tool is waiting for its answer), so it is kept here, by
 * `requestState`, not in the request: a round over HTTP is a request of its own, on an instance
 * of its own. A question nobody answers within `ttlMs` is answered `timed-out` (the tool hears a
 * decline and ends). The state is a random id: whoever holds it answers the question, and the
 * gateway serves one operator (docs/mcp-gateway.md#limits).
 */
import { randomUUID } from "node:crypto"
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type ServerContext
} from "@modelcontextprotocol/server"
import type { Wait } from "@plugboard/core"
import type { CallResult } from "./answers.js"

/** The key of the one embedded request of a round. */
export const ANSWER_KEY = "answer"
/** How long a question waits for the client's next round (10 minutes, as the SDK's shim waits). */
export const QUESTION_TTL_MS = 10 * 60 * 1000

/**
 * Whether the client said it answers elicitation: on the request's envelope (2026-07-28), else at
 * `initialize` (`initialized`, the server's record of it). A client that did not is never asked.
 */
export const clientElicits = (ctx: ServerContext, initialized: ClientCapabilities | undefined): boolean => {
  const envelope = ctx.mcpReq.envelope as Readonly<Record<string, unknown>> | undefined
  const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined
  return (declared ?? initialized)?.elicitation !== undefined
}

/** What a running call did next. */
type Step =
  | { readonly kind: "done"; readonly result: CallResult }
  | { readonly kind: "failed"; readonly error: unknown }
  | {
      readonly kind: "asked"
      readonly question: Wait.InputQuestion
      readonly answer: (answer: Wait.InputAnswer) => void
    }

/** How a call that may ask runs: with the function that asks, and the signal that ends it. */
export type AskingRun = (
  ask: (question: Wait.InputQuestion) => Promise<Wait.InputAnswer>,
  signal: AbortSignal
) => Promise<CallResult>

/** A call that may ask: its steps, taken one at a time by the rounds of the request. */
class AskingCall {
  private readonly steps: Array<Step> = []
  private waiter: ((step: Step) => void) | undefined
  readonly controller = new AbortController()

  constructor(run: AskingRun) {
    run(
      (question) => new Promise((answer) => this.push({ kind: "asked", question, answer })),
      this.controller.signal
    ).then(
      (result) => this.push({ kind: "done", result }),
      (error: unknown) => this.push({ kind: "failed", error })
    )
  }

  private push(step: Step): void {
    const waiter = this.waiter
    if (waiter === undefined) {
      this.steps.push(step)
      return
    }
    this.waiter = undefined
    waiter(step)
  }

  next(): Promise<Step> {
    const step = this.steps.shift()
    return step !== undefined
      ? Promise.resolve(step)
      : new Promise((resolve) => {
          this.waiter = resolve
        })
  }
}

interface Waiting {
  readonly call: AskingCall
  readonly answer: (answer: Wait.InputAnswer) => void
  readonly timer: NodeJS.Timeout
}

/** The calls of a gateway waiting for their client's next round, by `requestState`. */
export class Questions {
  private readonly waiting = new Map<string, Waiting>()

  constructor(private readonly ttlMs: number = QUESTION_TTL_MS) {}

  /** Runs a call that may ask: its result, or the `input_required` that puts its question. */
  start(run: AskingRun, ctx: ServerContext): Promise<CallResult | InputRequiredResult> {
    return this.round(new AskingCall(run), ctx)
  }

  /**
   * A round that answers the question `state` names: the answer goes to its call, and the round
   * goes on with it; `undefined` when no call waits on `state` (answered, expired, or never asked).
   */
  resume(state: string, ctx: ServerContext): Promise<CallResult | InputRequiredResult> | undefined {
    const waiting = this.waiting.get(state)
    if (waiting === undefined) return undefined
    this.waiting.delete(state)
    clearTimeout(waiting.timer)
    const response = inputResponse(ctx.mcpReq.inputResponses, ANSWER_KEY)
    waiting.answer(
      response.kind === "elicit" && response.action === "accept"
        ? { _tag: "values", values: response.content ?? {} }
        : { _tag: "declined" }
    )
    return this.round(waiting.call, ctx)
  }

  /** Answers every waiting question `timed-out`: their calls end. */
  close(): void {
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer)
      waiting.answer({ _tag: "timed-out" })
    }
    this.waiting.clear()
  }

  private async round(call: AskingCall, ctx: ServerContext): Promise<CallResult | InputRequiredResult> {
    // The client's cancellation of a round ends the call.
    const signal = ctx.mcpReq.signal
    const abort = () => call.controller.abort(signal.reason)
    signal.addEventListener("abort", abort, { once: true })
    try {
      const step = await call.next()
      if (step.kind === "done") return step.result
      if (step.kind === "failed") throw step.error
      const id = randomUUID()
      const timer = setTimeout(() => {
        if (this.waiting.delete(id)) step.answer({ _tag: "timed-out" })
      }, this.ttlMs)
      timer.unref()
      this.waiting.set(id, { call, answer: step.answer, timer })
      return inputRequired({
        inputRequests: {
          [ANSWER_KEY]: inputRequired.elicit({
            message: step.question.message,
            requestedSchema: step.question.schema as Parameters<
              typeof inputRequired.elicit
            >[0]["requestedSchema"]
          })
        },
        requestState: id
      })
    } finally {
      signal.removeEventListener("abort", abort)
    }
  }
}
