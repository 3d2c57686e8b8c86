/**
 * The QuickJS WebAssembly module, loaded once per process and shared by every run (each run gets
 * its own runtime and context in it, so runs share no JavaScript state, only the module's memory
 * allocator). Instantiating the module takes a few milliseconds and its memory only grows, so one
 * instance serves all runs.
 *
 * The one exception: a host-level error escaping the WebAssembly code (V8's own "Maximum call
 * stack size exceeded" when the interpreter's C recursion outruns the host's stack, or a
 * `WebAssembly.RuntimeError`) unwinds through C frames that never ran their epilogues, so the
 * instance's stack pointer and allocator can no longer be trusted. Such an instance is `poisoned`:
 * it is dropped, the runs still on it end, and the next run loads a fresh one.
 */
import { createRequire } from "node:module"
import { DEBUG_SYNC, newQuickJSWASMModule, type QuickJSWASMModule, RELEASE_SYNC } from "quickjs-emscripten"

/** Which build of QuickJS to load: `release`, or `debug` (checks handles and leaks; slower). */
export type Variant = "release" | "debug"

/** One loaded module, and whether it may still be used. */
export interface Engine {
  readonly module: QuickJSWASMModule
  readonly variant: Variant
  /** Set when a host-level error escaped the module; see the module comment. */
  poisoned: boolean
}

/** The installed `quickjs-emscripten`'s version, for `CodeSandboxService.name`. */
export const version: string = (() => {
  try {
    const manifest = createRequire(import.meta.url)("quickjs-emscripten/package.json") as {
      version?: unknown
    }
    return typeof manifest.version === "string" ? manifest.version : "unknown"
  } catch {
    return "unknown"
  }
})()

const loading = new Map<Variant, Promise<Engine>>()

/**
 * The module of `variant`, loaded on first use and memoised. A failed load is forgotten (the next
 * run tries again: a transient failure must not disable code mode for the life of the process).
 */
export const load = (variant: Variant): Promise<Engine> => {
  const cached = loading.get(variant)
  if (cached !== undefined) return cached
  const next = newQuickJSWASMModule(variant === "debug" ? DEBUG_SYNC : RELEASE_SYNC).then(
    (module): Engine => ({ module, variant, poisoned: false })
  )
  loading.set(variant, next)
  next.catch(() => {
    if (loading.get(variant) === next) loading.delete(variant)
  })
  return next
}

/** Drops `engine` for good: later runs load a new instance (see the module comment). */
export const poison = (engine: Engine): void => {
  engine.poisoned = true
  void loading.get(engine.variant)?.then((current) => {
    if (current === engine) loading.delete(engine.variant)
  })
}

/**
 * Whether `error`, thrown by a call into the module, comes from the host or the WebAssembly
 * machine rather than from QuickJS (whose errors are returned as values, or thrown as
 * `QuickJSUnwrapError`): a stack overflow of the host, a trap, or an abort of the C code.
 */
export const isHostFault = (error: unknown): boolean =>
  error instanceof RangeError ||
  (error instanceof Error && error.constructor.name === "RuntimeError") ||
  (error instanceof Error && /abort|unreachable|memory access out of bounds/i.test(error.message))
