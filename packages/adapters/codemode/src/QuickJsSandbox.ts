/**
 * Code mode's sandbox on QuickJS compiled to WebAssembly (`quickjs-emscripten`): an
 * implementation of core's `CodeSandbox` port with nothing native to build. The program runs in a
 * fresh QuickJS runtime of its own, where the only functions beyond the language's builtins are
 * `tools.<namespace>.<name>(args)` and `console.log` / `info` / `warn` / `error`: no timers, no
 * modules, no `require`, no `process`, no network and no filesystem (docs/code-mode.md#the-sandbox).
 *
 * ```ts
 * const sandbox = yield* QuickJsSandbox.make()
 * const { value } = yield* sandbox.run({ code: "return 6 * 7", tools: [], call, bounds })
 * ```
 */
import { CodeSandbox } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { drive } from "./internal/driver.js"
import { compile, version } from "./internal/engine.js"

/**
 * The VM's stack by default, in bytes: enough for a recursion about 170 calls deep. QuickJS checks
 * its stack against this; the host's own stack is what the interpreter's C frames really run on,
 * and above about 40 KiB a deeply nested expression overflows the host's before QuickJS notices
 * (measured on Node 24 with its default 984 KiB stack).
 */
export const DEFAULT_MAX_STACK_BYTES = 32 * 1024

/** Options of `make`. */
export interface QuickJsSandboxOptions {
  /** The VM's stack in bytes (default `DEFAULT_MAX_STACK_BYTES`); raise it only with care (above). */
  readonly maxStackBytes?: number
}

const positiveWhole = (n: unknown): boolean => typeof n === "number" && Number.isSafeInteger(n) && n > 0

const checkRequest = (request: CodeSandbox.RunRequest): void => {
  for (const key of ["cpuMs", "memoryBytes", "outputChars", "toolCalls", "wallClockMs"] as const)
    if (!positiveWhole(request.bounds[key]))
      throw new RangeError(
        `CodeSandbox bounds.${key} must be a positive whole number, got ${request.bounds[key]}`
      )
  if (typeof request.code !== "string") throw new TypeError("CodeSandbox code must be a string")
}

/**
 * A QuickJS sandbox. Starts compiling the WebAssembly module (once per process) so that the first
 * run does not wait for it; each run then gets an instance and a memory of its own. If the module
 * cannot load, every run fails with `unavailable` (and the next run tries loading again).
 */
export const make = (options: QuickJsSandboxOptions = {}): Effect.Effect<CodeSandbox.CodeSandboxService> =>
  Effect.sync(() => {
    const maxStackBytes = options.maxStackBytes ?? DEFAULT_MAX_STACK_BYTES
    if (!positiveWhole(maxStackBytes)) throw new RangeError(`maxStackBytes must be a positive whole number`)
    compile().catch(() => undefined)
    const service: CodeSandbox.CodeSandboxService = {
      name: `quickjs-emscripten ${version}`,
      run: (request) =>
        Effect.sync(() => checkRequest(request)).pipe(
          Effect.zipRight(Effect.promise((signal) => drive(request, { maxStackBytes }, signal))),
          Effect.flatMap((outcome) =>
            outcome.ok
              ? Effect.succeed(outcome.result)
              : Effect.fail(new CodeSandbox.CodeSandboxError(outcome.stop))
          )
        )
    }
    return service
  })

/** The `CodeSandbox` port on QuickJS, with the default options. */
export const layer: Layer.Layer<CodeSandbox.CodeSandbox> = Layer.effect(CodeSandbox.CodeSandbox, make())
