/**
 * The QuickJS WebAssembly module: compiled once per process (memoised), instantiated once per run
 * with a memory of its own. Instantiating a compiled module takes about 4 ms; what it buys:
 *
 * - a real memory bound. QuickJS's own limit (`setMemoryLimit`) counts what it allocates through
 *   `malloc_usable_size`, which this build lacks: every block then counts 8 bytes whatever its
 *   size, so 50 ArrayBuffers of 1 MB pass a 16 MB limit (measured). The run's WebAssembly memory
 *   has a maximum instead, and an allocation past it fails inside the VM (an out-of-memory error);
 * - the memory goes back: a WebAssembly memory never shrinks, so one shared instance would keep
 *   the high-water mark of the greediest program for the life of the process;
 * - faults stay in their run: a host-level error escaping the WebAssembly code (V8's own "Maximum
 *   call stack size exceeded" when the interpreter's C recursion outruns the host's stack) unwinds
 *   C frames that never ran their epilogues; that instance is dropped, and no other run used it.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSWASMModule,
  RELEASE_SYNC
} from "quickjs-emscripten"

// The compiler's lib has no WebAssembly namespace (the repository targets ES2023 without DOM);
// this is the little of it used here.
interface WebAssemblyApi {
  readonly compile: (bytes: Uint8Array) => Promise<object>
  readonly Memory: new (descriptor: { initial: number; maximum: number }) => object
}
const wasm = (globalThis as unknown as { readonly WebAssembly: WebAssemblyApi }).WebAssembly

const requireHere = createRequire(import.meta.url)

/** The installed `quickjs-emscripten`'s version, for `CodeSandboxService.name`. */
export const version: string = (() => {
  try {
    const manifest = requireHere("quickjs-emscripten/package.json") as { version?: unknown }
    return typeof manifest.version === "string" ? manifest.version : "unknown"
  } catch {
    return "unknown"
  }
})()

const PAGE = 64 * 1024
/**
 * The memory the module declares it needs to start (Emscripten's `INITIAL_MEMORY`, 16 MiB: static
 * data, the C stack and a first heap). A smaller memory fails to link.
 */
const INITIAL_PAGES = 256
/** WebAssembly's 32-bit address space, the most a memory can grow to (4 GiB). */
const MAX_PAGES = 65_536

let compiled: Promise<object> | undefined

const silent = (): void => {}

/**
 * The release build's WebAssembly module, compiled on first use and memoised. A failed compile is
 * forgotten (the next run tries again: a transient failure must not disable code mode for good).
 */
export const compile = (): Promise<object> => {
  if (compiled !== undefined) return compiled
  const next = Promise.resolve().then(() => {
    const fromQuickJs = createRequire(requireHere.resolve("quickjs-emscripten"))
    return wasm.compile(readFileSync(fromQuickJs.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")))
  })
  compiled = next
  next.catch(() => {
    if (compiled === next) compiled = undefined
  })
  return next
}

/**
 * A fresh instance for one run, whose heap may grow by `heapBytes` past the module's initial
 * memory (rounded up to whole 64 KiB pages).
 */
export const instantiate = async (heapBytes: number): Promise<QuickJSWASMModule> => {
  const wasmModule = await compile()
  const maximum = Math.min(MAX_PAGES, INITIAL_PAGES + Math.ceil(heapBytes / PAGE))
  return newQuickJSWASMModuleFromVariant(
    newVariant(RELEASE_SYNC, {
      wasmModule: wasmModule as never,
      wasmMemory: new wasm.Memory({ initial: INITIAL_PAGES, maximum }) as never,
      // Emscripten writes the C code's messages to the host's console: QuickJS asserts, when its
      // runtime is freed, that nothing leaked, and after an allocation failed mid-operation (a
      // memory bomb) it may have. The run has ended by then and the instance is dropped anyway.
      emscriptenModule: { print: silent, printErr: silent } as never
    })
  )
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
