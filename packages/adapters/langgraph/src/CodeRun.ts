/**
 * Code mode in the agent loop (docs/code-mode.md): a `run_code` call's program runs in the host's
 * sandbox (core's `CodeSandbox` port), and every tool call it makes is one more call of the same
 * tool step: the turn's bounds count it (`guardToolCall`), core's gate decides it against the
 * step's offer (`ToolCall.planProgramCall`), and the tool step performs it as a direct call, with
 * its events nested under the `run_code` call's. What the model reads is only what the program
 * returns (`CodeMode.resultText`), or what core says of its failure (`CodeMode.failure`).
 *
 * A turn bound reached inside a program ends the turn exactly as it does outside one: the program
 * is stopped and the bound's error is thrown from the tool step once the sandbox has returned.
 *
 * A call that needs its user's approval stops the program to wait, with the journal of what its
 * earlier calls answered, and the resumed turn replays it (core's `ProgramWait`,
 * docs/waiting.md#programs-that-wait).
 */
import { CodeMode, type CodeSandbox, describe, ProgramWait, ToolCall, Wait, WaitStore } from "@plugboard/core"
import { Effect, Either } from "effect"
import type { AgentRuntime } from "./Runtime.js"
import type { Performed, Planned } from "./ToolNode.js"
import { guardToolCall } from "./TurnGuard.js"

/** Code mode as the host turns it on: the sandbox programs run in, and their bounds. */
export interface CodeModeOption {
  readonly sandbox: CodeSandbox.CodeSandboxService
  /** What one program may spend (core's `CodeMode.DEFAULT_BOUNDS` when absent). */
  readonly bounds?: CodeSandbox.Bounds | undefined
}

/** What a program came to, as the `run_code` call is answered, or the approval it stopped to wait for. */
export type ProgramAnswer =
  | { readonly text: string; readonly outcome: "ok" | "tool_error"; readonly waits?: undefined }
  | { readonly waits: typeof Wait.ApprovalRequest.Type }

/** What a call the program made came to: performed, or stopped before it ran to ask its user. */
export type ProgramCallResult = Performed | { readonly waits: typeof Wait.ApprovalRequest.Type }

/** What the tool step lends a program: how one of its calls is performed, and the turn's signal. */
export interface ProgramHost {
  /** The `run_code` call's event, under which the program's calls are reported. */
  readonly parentEventId: string
  readonly signal: AbortSignal
  /**
   * Performs a call the gate decided, as the tool step performs a direct one; or, unless
   * `approved` (the user approved this very call), answers what to ask when it needs approval.
   */
  readonly call: (
    call: Planned["call"],
    decided: ToolCall.Plan,
    approved: boolean
  ) => Promise<ProgramCallResult>
  /** How the program may wait for its user (`ProgramWait`); absent, the host has no waits. */
  readonly waits?:
    | {
        /** Whether the program is the only call of its step: only then may it wait. */
        readonly alone: boolean
        /** The program's wait this turn resumes: its request (with the journal) and its answer. */
        readonly resume?:
          | { readonly request: typeof Wait.ApprovalRequest.Type; readonly answer: Wait.WaitAnswer }
          | undefined
      }
    | undefined
}

/** Runs one program of the step `step` (see the module doc). */
export const runProgram = async (
  rt: AgentRuntime,
  step: ToolCall.Step,
  code: string,
  host: ProgramHost
): Promise<ProgramAnswer> => {
  const codeMode = rt.codeMode
  // The gate offers run_code only with code mode on; a runtime without it cannot get here.
  if (codeMode === undefined)
    return { text: ToolCall.noHandler(CodeMode.RUN_CODE).content, outcome: "tool_error" }
  const bounds = codeMode.bounds ?? CodeMode.DEFAULT_BOUNDS
  const tools = CodeMode.reachable(step.catalog, step.offered, step.view)
  const stop = new AbortController()
  const onAbort = () => stop.abort()
  if (host.signal.aborted) stop.abort()
  else host.signal.addEventListener("abort", onAbort, { once: true })
  let ended: unknown
  let waits: typeof Wait.ApprovalRequest.Type | undefined
  let diverged: string | undefined
  let calls = 0
  // What each call answered the program, kept for a wait (docs/waiting.md#programs-that-wait).
  const journal: Array<ProgramWait.JournalEntry> = []
  const resumed = host.waits?.resume
  let cursor =
    resumed?.request.program === undefined
      ? undefined
      : ProgramWait.replay(resumed.request.program, resumed.request)
  const answered = (tool: string, args: unknown, answer: CodeSandbox.CallAnswer): CodeSandbox.CallAnswer => {
    journal.push({ tool, args, answer })
    return answer
  }
  const halt = (error: string): CodeSandbox.CallAnswer => {
    stop.abort()
    return { ok: false, error }
  }
  const call = async (ref: CodeSandbox.ToolRef, args: unknown): Promise<CodeSandbox.CallAnswer> => {
    let approved = false
    if (cursor !== undefined) {
      const replayed = ProgramWait.next(cursor, { tool: ref.name, args })
      cursor = replayed.cursor
      const { step: at } = replayed
      if (at._tag === "replayed") return answered(ref.name, args, at.answer)
      if (at._tag === "diverged") {
        diverged = at.message
        return halt(at.message)
      }
      if (at._tag === "waited") {
        const refusal = Wait.refusalText(resumed!.answer)
        if (refusal !== undefined) return answered(ref.name, args, { ok: false, error: refusal })
        approved = true
      }
    }
    calls += 1
    const nested = {
      id: `${host.parentEventId}/${calls}`,
      name: ref.name,
      args: (typeof args === "object" && args !== null ? args : {}) as Record<string, unknown>
    }
    try {
      const told = guardToolCall(rt, ref.name, args)
      if (told !== undefined) return answered(ref.name, args, { ok: false, error: told })
      const performed = await host.call(nested, ToolCall.planProgramCall(step, ref, args), approved)
      if ("waits" in performed) return waitFor(ref.name, args, performed.waits)
      return answered(
        ref.name,
        args,
        ToolCall.isSuccess(performed.outcome)
          ? { ok: true, value: CodeMode.callValue(performed.output) }
          : { ok: false, error: performed.output }
      )
    } catch (error) {
      // A turn bound: the program stops, and the tool step throws it as for a direct call.
      ended = error
      return halt(describe(error))
    }
  }
  /** The call needs approval: the program stops to wait, when it may; else the call is refused. */
  const waitFor = (
    tool: string,
    args: unknown,
    asked: typeof Wait.ApprovalRequest.Type
  ): CodeSandbox.CallAnswer => {
    if (host.waits?.alone !== true) return answered(tool, args, { ok: false, error: ProgramWait.NOT_ALONE })
    const request = { ...asked, program: { calls: [...journal] } }
    if (JSON.stringify(request).length > WaitStore.MAX_JSON_LENGTH)
      return answered(tool, args, { ok: false, error: ProgramWait.TOO_LARGE(WaitStore.MAX_JSON_LENGTH) })
    waits = request
    return halt("waiting for the user's approval")
  }
  try {
    const result = await Effect.runPromise(
      Effect.either(codeMode.sandbox.run({ code, tools, call, bounds, signal: stop.signal }))
    )
    if (ended !== undefined) throw ended
    if (waits !== undefined) return { waits }
    const unfinished = diverged ?? (cursor === undefined ? undefined : ProgramWait.unfinished(cursor))
    if (unfinished !== undefined) return { text: unfinished, outcome: "tool_error" }
    return Either.isRight(result)
      ? { text: CodeMode.resultText(result.right), outcome: "ok" }
      : { text: CodeMode.failure(result.left, bounds), outcome: "tool_error" }
  } finally {
    host.signal.removeEventListener("abort", onAbort)
  }
}
