/**
 * One run, from source to result. A fresh runtime and context per run (nothing survives from one
 * program to the next), always disposed. The program is compiled as the body of an async function
 * and called; then the driver loops until that call's promise settles: it runs the VM's pending
 * jobs, hands the tool calls the program made to the host, and when nothing is left to run, waits
 * for the next answer (or the wall clock, or the abort) and resolves the program's promise with
 * it. The synchronous build of QuickJS suffices: the program's awaits are VM promises the host
 * settles between slices, so the VM never has to suspend inside a host call (no asyncify).
 *
 * Everything the host hands the VM is JSON text the VM parses with its own (pristine) parser, and
 * everything it takes back is JSON text the host parses: no host object, and no handle to one,
 * ever crosses.
 */
import type { CodeSandbox } from "@plugboard/core"
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten"
import { BODY_LINE_OFFSET, type Bridge, install } from "./bridge.js"
import { instantiate, isHostFault } from "./engine.js"
import { Meter, messages, type Stop } from "./meter.js"
import { toJavaScript } from "./typescript.js"

/** What a run came to. */
export type Outcome =
  | { readonly ok: true; readonly result: CodeSandbox.RunResult }
  | { readonly ok: false; readonly stop: Stop }

/** Settings of the engine the bounds do not cover. */
export interface DriverOptions {
  /** The VM's stack, in bytes (see `QuickJsSandbox.DEFAULT_MAX_STACK_BYTES`). */
  readonly maxStackBytes: number
}

/** The resolving functions of the VM promise one tool call awaits (the host's own copies). */
interface Settle {
  readonly resolve: QuickJSHandle
  readonly reject: QuickJSHandle
}

interface Answer {
  readonly settle: Settle
  readonly answer: CodeSandbox.CallAnswer
}

const failed = (stop: Stop): Outcome => ({ ok: false, stop })

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const OUT_OF_MEMORY = "InternalError: out of memory"
const UNREADABLE = "the program threw a value that could not be read"
const HEADROOM_BYTES = 1024 * 1024
const STACK_OVERFLOW = "InternalError: stack overflow"

/** Runs `request` in an instance of its own; `cancel` is the caller's interruption (an abort). */
export const drive = async (
  request: CodeSandbox.RunRequest,
  options: DriverOptions,
  cancel: AbortSignal
): Promise<Outcome> => {
  const signals = request.signal === undefined ? [cancel] : [request.signal, cancel]
  const meter = new Meter(request.bounds, signals)
  let engine: QuickJSWASMModule
  try {
    // Also what makes every VM entry below start from a shallow host stack (a microtask).
    engine = await instantiate(request.bounds.memoryBytes)
  } catch (error) {
    return failed({
      reason: "unavailable",
      message: `The QuickJS sandbox could not start: ${errorText(error)}.`
    })
  }
  if (meter.check()) return failed(meter.stopped!)
  const source = toJavaScript(request.code)
  let run: Run | undefined
  try {
    run = new Run(engine, request, meter, signals, options)
    return await run.execute(source)
  } catch (error) {
    // A fault of the host or of the WebAssembly machine: the instance is no longer trusted
    // (engine.ts); it is left as it is, for the garbage collector.
    if (isHostFault(error)) {
      run?.abandon()
      return failed(
        error instanceof RangeError
          ? {
              reason: "thrown",
              message:
                "RangeError: the program nests or recurses too deeply (the engine's stack overflowed the host's)."
            }
          : { reason: "unavailable", message: `The QuickJS sandbox failed: ${errorText(error)}.` }
      )
    }
    // Otherwise a VM error the bridge did not expect (the bootstrap interrupted by a bound).
    if (meter.check()) return failed(meter.stopped!)
    return failed({ reason: "unavailable", message: `The QuickJS sandbox failed: ${errorText(error)}.` })
  } finally {
    run?.dispose()
  }
}

/** The state of one run; `execute` once, then `dispose`. */
class Run {
  private readonly runtime: QuickJSRuntime
  private readonly context: QuickJSContext
  private readonly bridge: Bridge
  private readonly signals: ReadonlyArray<AbortSignal>
  private readonly owned: Array<QuickJSHandle> = []
  private readonly settles = new Set<Settle>()
  private readonly queued: Array<{ tool: CodeSandbox.ToolRef; args: unknown; settle: Settle }> = []
  private readonly answers: Array<Answer> = []
  private readonly logs: Array<string> = []
  private outstanding = 0
  private wake: (() => void) | undefined
  private done = false
  private abandoned = false

  constructor(
    engine: QuickJSWASMModule,
    private readonly request: CodeSandbox.RunRequest,
    private readonly meter: Meter,
    signals: ReadonlyArray<AbortSignal>,
    options: DriverOptions
  ) {
    this.signals = signals
    this.runtime = engine.newRuntime()
    try {
      this.runtime.setMaxStackSize(options.maxStackBytes)
      this.runtime.setInterruptHandler(meter.interrupt)
      this.context = this.runtime.newContext()
    } catch (error) {
      this.runtime.dispose()
      throw error
    }
    try {
      this.bridge = install(this.context, request.tools, {
        call: (tool, args, resolve, reject) => this.call(tool, args, resolve, reject),
        log: (entry) => {
          if (meter.admitLog(entry)) this.logs.push(entry)
        }
      })
    } catch (error) {
      this.context.dispose()
      this.runtime.dispose()
      throw error
    }
    // After the bridge, so the bound is what the program's heap may hold on top of an empty context.
    this.runtime.setMemoryLimit(request.bounds.memoryBytes)
  }

  private own(handle: QuickJSHandle): QuickJSHandle {
    this.owned.push(handle)
    return handle
  }

  // A tool call from the VM: queued, handed to the host after the slice (the host's code never runs
  // inside the VM's stack). A call past the bound is never settled: the run stops.
  private call(
    tool: CodeSandbox.ToolRef,
    args: unknown,
    resolve: QuickJSHandle,
    reject: QuickJSHandle
  ): void {
    if (!this.meter.admitCall()) return
    const settle = { resolve: resolve.dup(), reject: reject.dup() }
    this.settles.add(settle)
    this.queued.push({ tool, args, settle })
  }

  private dispatch(): void {
    for (const { tool, args, settle } of this.queued.splice(0)) {
      this.outstanding++
      Promise.resolve()
        .then(() => this.request.call(tool, args))
        .then(
          (answer) => answer,
          (error): CodeSandbox.CallAnswer => ({ ok: false, error: errorText(error) })
        )
        .then((answer) => {
          this.outstanding--
          if (this.done) return
          this.answers.push({ settle, answer })
          this.wake?.()
        })
    }
  }

  // Settles one call's VM promise: the answer goes in as JSON text, parsed by the VM's own parser.
  private settle({ settle, answer }: Answer): void {
    const { context } = this
    let outcome: { resolve: QuickJSHandle | undefined } | { reject: QuickJSHandle }
    if (answer.ok) {
      let json: string | undefined
      try {
        json = answer.value === undefined ? undefined : JSON.stringify(answer.value)
      } catch (error) {
        json = undefined
        outcome = {
          reject: context.newError({
            name: "Error",
            message: `the tool's answer is not JSON (${errorText(error)})`
          })
        }
      }
      outcome ??= { resolve: undefined }
      if (json !== undefined) {
        const text = context.newString(json)
        const parsed = this.meter.slice(() =>
          context.callFunction(this.bridge.parse, context.undefined, text)
        )
        text.dispose()
        outcome = parsed.error === undefined ? { resolve: parsed.value } : { reject: parsed.error }
      }
    } else {
      outcome = { reject: context.newError({ name: "Error", message: answer.error }) }
    }
    const [fn, value] =
      "reject" in outcome ? [settle.reject, outcome.reject] : [settle.resolve, outcome.resolve]
    // A resolving function only throws when the VM is interrupted (resolving with a thenable reads
    // its `then`, which may be the program's getter): the stop is seen by the driver's next check.
    const r = this.meter.slice(() => context.callFunction(fn, context.undefined, value ?? context.undefined))
    if (r.error !== undefined) r.error.dispose()
    else r.value.dispose()
    value?.dispose()
    this.release(settle)
  }

  private release(settle: Settle): void {
    settle.resolve.dispose()
    settle.reject.dispose()
    this.settles.delete(settle)
  }

  private waitForWork(): Promise<void> {
    return new Promise((resolve) => {
      const { signals } = this
      const finish = () => {
        clearTimeout(timer)
        for (const s of signals) s.removeEventListener("abort", finish)
        this.wake = undefined
        resolve()
      }
      const timer = setTimeout(finish, this.meter.wallLeft() + 1)
      for (const s of signals) s.addEventListener("abort", finish, { once: true })
      this.wake = finish
      if (this.answers.length > 0 || signals.some((s) => s.aborted)) finish()
    })
  }

  /** Runs the program to its outcome. Throws only on a host fault (see `drive`). */
  async execute(source: string): Promise<Outcome> {
    const { context, meter, bridge } = this
    const text = this.own(context.newString(source))
    const compiled = meter.slice(() => context.callFunction(bridge.compile, context.undefined, text))
    if (compiled.error !== undefined) {
      const error = this.own(compiled.error)
      if (meter.check()) return failed(meter.stopped!)
      const { description, stop } = this.failure(error)
      if (!description.startsWith("SyntaxError")) return failed(stop)
      const located = context.callFunction(bridge.lineOf, context.undefined, error)
      const line = located.error === undefined ? context.getNumber(this.own(located.value)) : -1
      located.error?.dispose()
      // The constructor's closing line is past the program's last: report the last line then.
      const at = Math.min(line - BODY_LINE_OFFSET, source.split("\n").length)
      const where = Number.isFinite(line) && at >= 1 ? ` (line ${at})` : ""
      const hint = /(^|[;\n])\s*(import|export)\s/.test(source)
        ? " There are no modules here: the program cannot import, only call tools."
        : ""
      return failed({ reason: "syntax", message: `${description}${where}.${hint}` })
    }
    const program = this.own(compiled.value)
    const called = meter.slice(() => context.callFunction(program, context.undefined))
    if (called.error !== undefined) {
      const error = this.own(called.error)
      return meter.check() ? failed(meter.stopped!) : failed(this.failure(error).stop)
    }
    const main = this.own(called.value)

    for (;;) {
      const jobs = meter.slice(() => this.runtime.executePendingJobs(-1))
      // A job only fails past its own handlers when the VM is interrupted or out of memory (a
      // reaction's exceptions reject its promise instead): the latter ends the run too.
      if (jobs.error !== undefined) {
        const error = this.own(jobs.error)
        if (!meter.check()) {
          const { stop } = this.failure(error)
          if (stop.reason === "memory") meter.stop(stop)
        }
      }
      if (meter.check()) return failed(meter.stopped!)
      this.dispatch()
      const state = context.getPromiseState(main)
      if (state.type === "fulfilled") {
        if (state.notAPromise !== true) this.own(state.value)
        return this.result(state.value)
      }
      if (state.type === "rejected") {
        const error = this.own(state.error)
        const { stop } = this.failure(error)
        return meter.check() ? failed(meter.stopped!) : failed(stop)
      }
      if (this.answers.length > 0) {
        for (const answer of this.answers.splice(0)) this.settle(answer)
        continue
      }
      if (this.runtime.hasPendingJob()) continue
      if (this.outstanding === 0 && this.queued.length === 0)
        return failed({ reason: "wall-clock", message: messages.stalled(this.request.bounds.wallClockMs) })
      await this.waitForWork()
      if (meter.check()) return failed(meter.stopped!)
    }
  }

  // The program's value as JSON: written by the VM (its toJSON methods and getters are the
  // program's own code, so this runs as a slice too), measured, then read.
  private result(returned: QuickJSHandle): Outcome {
    const { context, meter, bridge } = this
    const encoded = meter.slice(() => context.callFunction(bridge.encode, context.undefined, returned))
    if (meter.check()) {
      ;(encoded.error ?? encoded.value).dispose()
      return failed(meter.stopped!)
    }
    if (encoded.error !== undefined) {
      const { description, stop } = this.failure(this.own(encoded.error))
      return failed(
        stop.reason === "thrown"
          ? { reason: "thrown", message: `The program's result is not JSON: ${description}` }
          : stop
      )
    }
    const json = this.own(encoded.value)
    let value: unknown
    if (context.typeof(json) === "string") {
      const length = context.getNumber(this.own(context.getProp(json, "length")))
      const max = this.request.bounds.outputChars
      if (length > max) return failed({ reason: "output", message: messages.result(length, max) })
      value = JSON.parse(context.getString(json))
    }
    return { ok: true, result: { value, logs: [...this.logs], toolCalls: meter.toolCalls } }
  }

  // "Name: message" of a thrown value, read by the VM (the value may be a proxy or have getters).
  private describe(error: QuickJSHandle): string {
    const { context } = this
    const max = this.own(context.newNumber(Math.max(200, Math.min(this.request.bounds.outputChars, 4_000))))
    const r = this.meter.slice(() =>
      context.callFunction(this.bridge.describe, context.undefined, error, max)
    )
    if (r.error !== undefined) {
      r.error.dispose()
      return UNREADABLE
    }
    return context.getString(this.own(r.value))
  }

  // What a thrown value says and the stop it means. Read with some memory headroom: when an
  // allocation fails, what is still reachable holds the heap full, and reading allocates too.
  // When even the error object cannot be allocated QuickJS throws null instead, so a bare null is
  // taken for a memory stop too (a program throwing null itself is the price of that).
  private failure(error: QuickJSHandle): { readonly description: string; readonly stop: Stop } {
    const limit = this.request.bounds.memoryBytes
    this.runtime.setMemoryLimit(limit + HEADROOM_BYTES)
    const description = this.describe(error)
    this.runtime.setMemoryLimit(limit)
    if (description === OUT_OF_MEMORY || description === "null")
      return { description, stop: { reason: "memory", message: messages.memory(limit) } }
    if (description === STACK_OVERFLOW)
      return {
        description,
        stop: { reason: "thrown", message: `${description} (the program recursed or nested too deeply)` }
      }
    return { description, stop: { reason: "thrown", message: description } }
  }

  /** Leaves the VM as it is: after a host fault, touching it again could fault again. */
  abandon(): void {
    this.abandoned = true
  }

  /** Frees every handle, the context and the runtime (unless abandoned). */
  dispose(): void {
    this.done = true
    this.wake = undefined
    if (this.abandoned) return
    try {
      this.answers.length = 0
      for (const settle of [...this.settles]) this.release(settle)
      for (const h of this.owned.splice(0).reverse()) if (h.alive) h.dispose()
      this.bridge.dispose()
      this.context.dispose()
      this.runtime.dispose()
    } catch {
      // The instance is the run's own and goes with it; nothing else shares what failed to free.
    }
  }
}
