/**
 * Shared by the codemode tests: one sandbox, a recording host, and a snapshot of what the host
 * process must still look like after a hostile program ran.
 */
import type { CodeSandbox } from "@plugboard/core"
import { CodeSandboxConformance } from "@plugboard/testing"
import { Effect, Either } from "effect"
import { expect } from "vitest"
import { QuickJsSandbox } from "../src/index.js"

/** The tools every test program is handed. */
export const TOOLS: ReadonlyArray<CodeSandbox.ToolRef> = [
  { namespace: "w", name: "echo" },
  { namespace: "w", name: "never" },
  { namespace: "mail", name: "send" }
]

/** Bounds of the tests: small enough that a bound is met quickly. */
export const BOUNDS: CodeSandbox.Bounds = {
  ...CodeSandboxConformance.generousBounds,
  cpuMs: 300,
  memoryBytes: 16 * 1024 * 1024,
  outputChars: 10_000,
  toolCalls: 5,
  wallClockMs: 3_000
}

/** One call the host saw. */
export interface SeenCall {
  readonly tool: string
  readonly args: unknown
}

/** What a run came to, and what the host saw of it. */
export interface Ran {
  readonly outcome: Either.Either<CodeSandbox.RunResult, CodeSandbox.CodeSandboxError>
  readonly calls: ReadonlyArray<SeenCall>
}

let sandbox: CodeSandbox.CodeSandboxService | undefined

/** The sandbox under test (one per test file, as a host holds one). */
export const theSandbox = async (): Promise<CodeSandbox.CodeSandboxService> =>
  (sandbox ??= await Effect.runPromise(QuickJsSandbox.make()))

/**
 * Runs `code` with a host that records each call and answers `w.echo` with `{ echo: args }`;
 * `w.never` never answers.
 */
export const run = async (
  code: string,
  overrides: Partial<Pick<CodeSandbox.RunRequest, "bounds" | "signal" | "tools">> = {}
): Promise<Ran> => {
  const calls: Array<SeenCall> = []
  const request: CodeSandbox.RunRequest = {
    code,
    tools: TOOLS,
    bounds: BOUNDS,
    ...overrides,
    call: (tool, args) => {
      calls.push({ tool: `${tool.namespace}.${tool.name}`, args })
      if (tool.name === "never") return new Promise(() => {})
      return Promise.resolve({ ok: true, value: { echo: args ?? null } })
    }
  }
  const s = await theSandbox()
  return { outcome: await Effect.runPromise(Effect.either(s.run(request))), calls }
}

/** The run's failure (the test fails when it succeeded). */
export const failure = (ran: Ran): CodeSandbox.CodeSandboxError => {
  if (Either.isRight(ran.outcome))
    throw new Error(`expected a failure, got ${JSON.stringify(ran.outcome.right)}`)
  return ran.outcome.left
}

/** The run's result (the test fails when it failed). */
export const result = (ran: Ran): CodeSandbox.RunResult => {
  if (Either.isLeft(ran.outcome))
    throw new Error(`expected a result, got ${JSON.stringify(ran.outcome.left)}`)
  return ran.outcome.right
}

/** What of the host a program must never change. */
export interface HostSnapshot {
  readonly globals: ReadonlyArray<string>
  readonly objectPrototype: ReadonlyArray<string>
  readonly arrayPrototype: ReadonlyArray<string>
  readonly functionPrototype: ReadonlyArray<string>
  readonly promisePrototype: ReadonlyArray<string>
  readonly builtins: ReadonlyArray<unknown>
}

const keys = (o: object): ReadonlyArray<string> => Reflect.ownKeys(o).map(String).sort()

/** The host as it is now. */
export const snapshot = (): HostSnapshot => ({
  globals: keys(globalThis),
  objectPrototype: keys(Object.prototype),
  arrayPrototype: keys(Array.prototype),
  functionPrototype: keys(Function.prototype),
  promisePrototype: keys(Promise.prototype),
  builtins: [
    JSON.stringify,
    JSON.parse,
    Promise.prototype.then,
    Object.prototype.toString,
    Function.prototype.call
  ]
})

/** The host is as it was, and a normal program still runs on the same sandbox. */
export const expectHostUnharmed = async (before: HostSnapshot): Promise<void> => {
  const after = snapshot()
  expect(after.globals).toEqual(before.globals)
  expect(after.objectPrototype).toEqual(before.objectPrototype)
  expect(after.arrayPrototype).toEqual(before.arrayPrototype)
  expect(after.functionPrototype).toEqual(before.functionPrototype)
  expect(after.promisePrototype).toEqual(before.promisePrototype)
  for (const [i, b] of after.builtins.entries()) expect(b).toBe(before.builtins[i])
  const normal = await run(
    'console.log("ok"); const r = await tools.w.echo({ n: 1 }); return { r, keys: Object.keys(globalThis) }'
  )
  expect(result(normal)).toEqual({ value: { r: { echo: { n: 1 } }, keys: [] }, logs: ["ok"], toolCalls: 1 })
  expect(normal.calls).toEqual([{ tool: "w.echo", args: { n: 1 } }])
}
