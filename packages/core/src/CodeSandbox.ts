/**
 * The `CodeSandbox` port: runs a program the model wrote (code mode, docs/code-mode.md) where it
 * can reach nothing but the tools it is handed. The program sees `tools.<namespace>.<name>(args)`
 * as async functions and `console.log`; no network, no filesystem, no timers, no host objects.
 * What may be called, the typed API the model is shown and what each bound's error says are
 * core's (`CodeMode`); the sandbox only runs the program and enforces the bounds it is given.
 *
 * The program is the body of an async function: `return` gives its result. Values cross the
 * boundary as JSON only (a tool's arguments out, its answer in, the result out), so nothing the
 * program does to its own objects or prototypes reaches the host, and nothing of the host's
 * reaches the program.
 */
import { Context, type Effect, Schema } from "effect"

/**
 * Why a program did not return a result:
 * - `syntax`: it does not parse (as JavaScript, or TypeScript once its types are stripped);
 * - `thrown`: it threw, or let a tool call's rejection go uncaught (the message says which);
 * - `cpu-time`: it computed longer than `Bounds.cpuMs`;
 * - `memory`: it allocated more than `Bounds.memoryBytes`;
 * - `output`: its result or its logs are longer than `Bounds.outputChars`;
 * - `tool-calls`: it called tools more than `Bounds.toolCalls` times;
 * - `wall-clock`: it ran (computing or waiting on tools) longer than `Bounds.wallClockMs`;
 * - `aborted`: the turn was aborted while it ran;
 * - `unavailable`: the sandbox itself could not start (its engine failed to load).
 */
export type SandboxReason = typeof SandboxReason.Type

/** The reasons, as a schema. */
export const SandboxReason = Schema.Literal(
  "syntax",
  "thrown",
  "cpu-time",
  "memory",
  "output",
  "tool-calls",
  "wall-clock",
  "aborted",
  "unavailable"
)

/** A program ended without a result; `message` is what the model is told (`CodeMode.failed`). */
export class CodeSandboxError extends Schema.TaggedError<CodeSandboxError>()("CodeSandboxError", {
  reason: SandboxReason,
  message: Schema.String
}) {}

/** What one program may spend. Every bound is a positive whole number. */
export interface Bounds {
  /** Time spent computing in the sandbox (waiting on a tool does not count), in milliseconds. */
  readonly cpuMs: number
  /** Memory the program's heap may hold, in bytes. */
  readonly memoryBytes: number
  /** Characters of the result (as JSON) and of the logs, each. */
  readonly outputChars: number
  /** Tool calls the program may make. */
  readonly toolCalls: number
  /** Time from the start to the result, waiting on tools included, in milliseconds. */
  readonly wallClockMs: number
}

/** A function the program may call: `tools[namespace][name](args)`. */
export interface ToolRef {
  readonly namespace: string
  readonly name: string
}

/**
 * What a tool call from the program came to. `ok: false` rejects the program's promise with an
 * `Error` whose message is `error` (the program may catch it, as it would a failed fetch).
 */
export type CallAnswer =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: string }

/** One program to run. */
export interface RunRequest {
  /** The program: JavaScript or TypeScript, the body of an async function. */
  readonly code: string
  /** The functions the program sees under `tools`; nothing else is there. */
  readonly tools: ReadonlyArray<ToolRef>
  /**
   * Runs one call of the program (the host's gate: `CodeMode` decides, the door runs). Called with
   * the arguments as the program passed them, decoded from JSON. Never rejects.
   */
  readonly call: (tool: ToolRef, args: unknown) => Promise<CallAnswer>
  readonly bounds: Bounds
  /** Aborts the program (the turn was stopped): it ends with `aborted`. */
  readonly signal?: AbortSignal | undefined
}

/** A program's result. */
export interface RunResult {
  /** What it returned, as JSON round-trips it (`undefined` when it returned nothing). */
  readonly value: unknown
  /** What it wrote with `console.log` (and `.info`, `.warn`, `.error`), one entry per call. */
  readonly logs: ReadonlyArray<string>
  /** How many tool calls it made. */
  readonly toolCalls: number
}

/** A sandbox. */
export interface CodeSandboxService {
  /** Names the engine in reports, e.g. `quickjs-emscripten 0.32`. */
  readonly name: string
  readonly run: (request: RunRequest) => Effect.Effect<RunResult, CodeSandboxError>
}

/** The port. */
export class CodeSandbox extends Context.Tag("@plugboard/core/CodeSandbox")<
  CodeSandbox,
  CodeSandboxService
>() {}
