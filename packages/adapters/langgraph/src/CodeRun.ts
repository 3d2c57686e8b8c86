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
 */
import { CodeMode, type CodeSandbox, describe, ToolCall } from "@plugboard/core"
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

/** What a program came to, as the `run_code` call is answered. */
export interface ProgramAnswer {
  readonly text: string
  readonly outcome: "ok" | "tool_error"
}

/** What the tool step lends a program: how one of its calls is performed, and the turn's signal. */
export interface ProgramHost {
  /** The `run_code` call's event, under which the program's calls are reported. */
  readonly parentEventId: string
  readonly signal: AbortSignal
  /** Performs a call the gate decided, as the tool step performs a direct one. */
  readonly call: (call: Planned["call"], decided: ToolCall.Plan) => Promise<Performed>
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
  let calls = 0
  const call = async (ref: CodeSandbox.ToolRef, args: unknown): Promise<CodeSandbox.CallAnswer> => {
    calls += 1
    const nested = {
      id: `${host.parentEventId}/${calls}`,
      name: ref.name,
      args: (typeof args === "object" && args !== null ? args : {}) as Record<string, unknown>
    }
    try {
      const told = guardToolCall(rt, ref.name, args)
      if (told !== undefined) return { ok: false, error: told }
      const performed = await host.call(nested, ToolCall.planProgramCall(step, ref, args))
      return ToolCall.isSuccess(performed.outcome)
        ? { ok: true, value: CodeMode.callValue(performed.output) }
        : { ok: false, error: performed.output }
    } catch (error) {
      // A turn bound: the program stops, and the tool step throws it as for a direct call.
      ended = error
      stop.abort()
      return { ok: false, error: describe(error) }
    }
  }
  try {
    const result = await Effect.runPromise(
      Effect.either(codeMode.sandbox.run({ code, tools, call, bounds, signal: stop.signal }))
    )
    if (ended !== undefined) throw ended
    return Either.isRight(result)
      ? { text: CodeMode.resultText(result.right), outcome: "ok" }
      : { text: CodeMode.failure(result.left, bounds), outcome: "tool_error" }
  } finally {
    host.signal.removeEventListener("abort", onAbort)
  }
}
