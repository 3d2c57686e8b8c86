/**
 * The two host globals core names: `AbortSignal` (RuntimeContext.signal, ChatModel requests)
 * and `AbortController` (RuntimeContext's default signal). Only the build
 * (`tsconfig.build.json`) sees this file. Core must compile without `@types/node` and without
 * the DOM lib: either would also admit `fetch`, `setTimeout`, `process`, `Buffer` or `document`
 * and hide I/O creeping into core, which this build exists to catch. Only the members core uses
 * are declared; the emitted `.d.ts` files refer to the globals by name, so consumers get their
 * own platform's full definitions (Node's, or the DOM lib's in browsers, Deno, Bun, workers).
 */
interface AbortSignal {
  readonly aborted: boolean
  readonly reason: unknown
}

interface AbortController {
  readonly signal: AbortSignal
  abort(reason?: unknown): void
}

declare var AbortController: {
  prototype: AbortController
  new (): AbortController
}
