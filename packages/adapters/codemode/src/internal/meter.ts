/**
 * What a run has spent against its bounds, and why it was stopped. CPU time is counted in slices:
 * the driver opens a slice each time it enters the VM and closes it when the VM returns, so time
 * spent awaiting a tool never counts, and QuickJS's interrupt handler (called every few thousand
 * instructions while the VM runs) compares the slices so far plus the open one against the bound.
 *
 * A stop is decided once (the first reason wins) and then enforced: the interrupt handler keeps
 * interrupting (QuickJS's interrupt is not catchable by the program), and the driver checks
 * `stopped` after every slice and every wait.
 */
import type { CodeSandbox } from "@plugboard/core"

/** Why and how a run was stopped: the `CodeSandboxError` it ends with. */
export interface Stop {
  readonly reason: CodeSandbox.SandboxReason
  readonly message: string
}

/** The messages of the bounds, each naming the bound and its value. */
export const messages = {
  cpu: (ms: number) => `The program computed for more than ${ms} ms (cpu bound).`,
  wall: (ms: number) =>
    `The program ran for more than ${ms} ms, waiting on tools included (wall-clock bound).`,
  stalled: (ms: number) =>
    `The program waits on a promise that nothing will settle (no tool call is pending), so it would run past ${ms} ms (wall-clock bound).`,
  memory: (bytes: number) => `The program used more than ${bytes} bytes of memory (memory bound).`,
  result: (length: number, max: number) =>
    `The program's result is ${length} characters of JSON, more than ${max} (output bound).`,
  logs: (max: number) => `The program logged more than ${max} characters (output bound).`,
  toolCalls: (max: number) => `The program called tools more than ${max} times (tool-calls bound).`,
  aborted: () => "The program was aborted: the turn was stopped."
} as const

const now = (): number => performance.now()

/** A run's clock, counters and stop decision. */
export class Meter {
  private cpuUsed = 0
  private sliceStart: number | undefined
  private readonly deadline: number
  private logChars = 0
  /** Tool calls passed to the host. */
  toolCalls = 0
  /** Set once, by the first bound crossed (or the abort). */
  stopped: Stop | undefined

  constructor(
    private readonly bounds: CodeSandbox.Bounds,
    private readonly signals: ReadonlyArray<AbortSignal>
  ) {
    this.deadline = now() + bounds.wallClockMs
  }

  /** Decides the stop, unless one is decided already. */
  stop(stop: Stop): void {
    this.stopped ??= stop
  }

  /** Milliseconds left before the wall-clock bound (0 when past it). */
  wallLeft(): number {
    return Math.max(0, this.deadline - now())
  }

  /** Checks the bounds that time and the outside world can cross; true when the run must stop. */
  check(): boolean {
    if (this.stopped !== undefined) return true
    if (this.signals.some((s) => s.aborted)) this.stop({ reason: "aborted", message: messages.aborted() })
    else if (this.cpuSpent() > this.bounds.cpuMs)
      this.stop({ reason: "cpu-time", message: messages.cpu(this.bounds.cpuMs) })
    else if (now() > this.deadline)
      this.stop({ reason: "wall-clock", message: messages.wall(this.bounds.wallClockMs) })
    return this.stopped !== undefined
  }

  /** QuickJS's interrupt handler: true interrupts the VM. */
  readonly interrupt = (): boolean => this.check()

  /** Runs `f` as one VM slice (its time counts as CPU time). */
  slice<A>(f: () => A): A {
    this.sliceStart = now()
    try {
      return f()
    } finally {
      this.cpuUsed += now() - this.sliceStart
      this.sliceStart = undefined
    }
  }

  private cpuSpent(): number {
    return this.cpuUsed + (this.sliceStart === undefined ? 0 : now() - this.sliceStart)
  }

  /** Counts one tool call; false (and the run stopped) when it is one past the bound. */
  admitCall(): boolean {
    if (this.stopped !== undefined) return false
    if (this.toolCalls >= this.bounds.toolCalls) {
      this.stop({ reason: "tool-calls", message: messages.toolCalls(this.bounds.toolCalls) })
      return false
    }
    this.toolCalls++
    return true
  }

  /** Counts one log entry; false (and the run stopped) when the logs pass the output bound. */
  admitLog(entry: string): boolean {
    if (this.stopped !== undefined) return false
    this.logChars += entry.length
    if (this.logChars > this.bounds.outputChars) {
      this.stop({ reason: "output", message: messages.logs(this.bounds.outputChars) })
      return false
    }
    return true
  }
}
