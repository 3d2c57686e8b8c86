/**
 * The conformance suite of the `CodeSandbox` port: QuickJS in `@plugboard/codemode`, and any
 * sandbox after it. At the top level of a test file:
 *
 * ```ts
 * CodeSandboxConformance.run("quickjs", () => QuickJsSandbox.make())
 * ```
 *
 * What it checks (docs/code-mode.md#the-sandbox): a program is the body of an async function and
 * its `return` comes back as JSON round-trips it; its logs come back in order, one string each;
 * its tool calls reach the host with their arguments, in order, and the answers come back (a
 * refused call rejects, the program may catch it, uncaught it ends the run `thrown`); only the
 * listed tools exist; each bound ends the run with its own reason; a program that does not parse
 * is `syntax`; TypeScript is accepted. Waiting is done with gates the host opens, never with
 * sleeps: a tool that never answers is a promise nobody settles.
 */
import type { CodeSandbox as Port } from "@plugboard/core"
import { Deferred, Effect, Exit, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** Builds the sandbox under test (the scope closes it). */
export type CodeSandboxFactory = () => Effect.Effect<Port.CodeSandboxService, unknown, Scope.Scope>

/** Options of the suite. */
export interface CodeSandboxConformanceOptions {
  /** fast-check runs of each property (default 25). */
  readonly numRuns?: number
}

/** Bounds loose enough that no test but a bound's own meets one. */
export const generousBounds: Port.Bounds = {
  cpuMs: 5_000,
  memoryBytes: 64 * 1024 * 1024,
  outputChars: 100_000,
  toolCalls: 100,
  wallClockMs: 20_000
}

/** What the test host saw: every call, in order. */
export interface Recorded {
  readonly calls: Array<{ readonly tool: string; readonly args: unknown }>
}

type Answerer = (tool: Port.ToolRef, args: unknown) => Promise<Port.CallAnswer> | Port.CallAnswer

const WEATHER: ReadonlyArray<Port.ToolRef> = [
  { namespace: "weather", name: "forecast" },
  { namespace: "weather", name: "cities" },
  { namespace: "mail", name: "send" }
]

/** A request whose `call` records every call and answers with `answer` (an echo by default). */
export const request = (
  code: string,
  overrides: Partial<Omit<Port.RunRequest, "code" | "call">> & { readonly answer?: Answerer } = {}
): { readonly request: Port.RunRequest; readonly recorded: Recorded } => {
  const recorded: Recorded = { calls: [] }
  const answer: Answerer =
    overrides.answer ?? ((_tool, args) => ({ ok: true, value: { echo: args ?? null } }))
  const { answer: _, ...rest } = overrides
  return {
    recorded,
    request: {
      code,
      tools: WEATHER,
      bounds: generousBounds,
      ...rest,
      call: async (tool, args) => {
        recorded.calls.push({ tool: `${tool.namespace}.${tool.name}`, args })
        return answer(tool, args)
      }
    }
  }
}

const failureOf = <A>(exit: Exit.Exit<A, Port.CodeSandboxError>): Port.CodeSandboxError | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

/** Registers the CodeSandbox conformance suite under `name` (vitest `describe`/`it`). */
export const run = (
  name: string,
  factory: CodeSandboxFactory,
  options: CodeSandboxConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 25
  const withSandbox = <A>(body: (s: Port.CodeSandboxService) => Effect.Effect<A, unknown>): Promise<A> =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(factory(), body)) as Effect.Effect<A, unknown>)
  const test = (title: string, body: (s: Port.CodeSandboxService) => Effect.Effect<void, unknown>) =>
    it(title, () => withSandbox(body))
  const fails = (s: Port.CodeSandboxService, r: Port.RunRequest) =>
    Effect.map(Effect.exit(s.run(r)), (exit) => {
      const error = failureOf(exit)
      if (error === undefined) throw new Error(`expected a CodeSandboxError, got ${JSON.stringify(exit)}`)
      return error
    })

  describe(`CodeSandbox conformance: ${name}`, () => {
    test("names its engine", (s) => Effect.sync(() => expect(s.name).toMatch(/\S/)))

    test("a program is the body of an async function; its return comes back as JSON", (s) =>
      Effect.gen(function* () {
        for (const [code, value] of [
          ["return 6 * 7", 42],
          ["return 'héllo'", "héllo"],
          ["return null", null],
          ["return [1, { a: true, b: [null, 'x'] }]", [1, { a: true, b: [null, "x"] }]],
          ["const x = await Promise.resolve(3); return x + 1", 4],
          ["return { when: new Date(0), gone: undefined, f() {} }", { when: "1970-01-01T00:00:00.000Z" }]
        ] as const) {
          const result = yield* s.run(request(code).request)
          expect(result.value).toEqual(value)
        }
        const nothing = yield* s.run(request("const x = 1").request)
        expect(nothing).toEqual({ value: undefined, logs: [], toolCalls: 0 })
      }))

    test("logs come back in order, one string per call: strings as they are, other values as JSON", (s) =>
      Effect.gen(function* () {
        const code = `
          console.log("first")
          console.info(2)
          console.warn({ x: 1 })
          console.error([1, "a"])
          console.log("a", 1, null)
          return "done"`
        const result = yield* s.run(request(code).request)
        expect(result.logs).toEqual(["first", "2", '{"x":1}', '[1,"a"]', "a 1 null"])
        expect(result.value).toBe("done")
      }))

    test("tools are called with their arguments, and their answers come back", (s) =>
      Effect.gen(function* () {
        const { request: r, recorded } = request(
          `const a = await tools.weather.forecast({ city: "Paris", days: [1, 2] })
           const b = await tools.mail.send()
           return [a, b]`,
          {
            answer: (tool, args) => ({ ok: true, value: tool.name === "send" ? undefined : { sunny: args } })
          }
        )
        const result = yield* s.run(r)
        expect(recorded.calls).toEqual([
          { tool: "weather.forecast", args: { city: "Paris", days: [1, 2] } },
          { tool: "mail.send", args: undefined }
        ])
        expect(result.value).toEqual([{ sunny: { city: "Paris", days: [1, 2] } }, null])
        expect(result.toolCalls).toBe(2)
      }))

    test("calls in flight at once all reach the host; each answer goes to its own call", (s) =>
      Effect.gen(function* () {
        const gates = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
        const { request: r, recorded } = request(
          "return await Promise.all([tools.weather.forecast(0), tools.weather.forecast(1)])",
          {
            answer: async (_tool, args) => {
              const i = args as number
              // The second call is answered first: the first waits for it.
              if (i === 0) await Effect.runPromise(Deferred.await(gates[1]!))
              await Effect.runPromise(Deferred.succeed(gates[i]!, undefined))
              return { ok: true, value: `answer ${i}` }
            }
          }
        )
        const result = yield* s.run(r)
        expect(result.value).toEqual(["answer 0", "answer 1"])
        expect(recorded.calls.map((c) => c.args)).toEqual([0, 1])
      }))

    test("a refused call rejects: the program may catch it; uncaught it ends the run thrown", (s) =>
      Effect.gen(function* () {
        const refuse: Answerer = () => ({ ok: false, error: "city not found" })
        const caught = yield* s.run(
          request(
            `try { await tools.weather.forecast({ city: "Atlantis" }) } catch (e) { return "caught: " + e.message }`,
            { answer: refuse }
          ).request
        )
        expect(caught.value).toBe("caught: city not found")
        const uncaught = yield* fails(
          s,
          request("await tools.weather.forecast({})", { answer: refuse }).request
        )
        expect(uncaught.reason).toBe("thrown")
        expect(uncaught.message).toContain("city not found")
      }))

    test("a program that throws ends thrown, with the error's message", (s) =>
      Effect.gen(function* () {
        const error = yield* fails(s, request('throw new Error("no such city")').request)
        expect(error.reason).toBe("thrown")
        expect(error.message).toContain("no such city")
      }))

    test("only the listed tools exist", (s) =>
      Effect.gen(function* () {
        const listed = yield* s.run(
          request(
            `return [typeof tools.weather.forecast, typeof tools.weather.other, typeof tools.nope,
                     Object.keys(tools).sort(), Object.keys(tools.weather).sort()]`
          ).request
        )
        expect(listed.value).toEqual([
          "function",
          "undefined",
          "undefined",
          ["mail", "weather"],
          ["cities", "forecast"]
        ])
        const { request: r, recorded } = request("return await tools.weather.other({})")
        expect((yield* fails(s, r)).reason).toBe("thrown")
        expect(recorded.calls).toEqual([])
      }))

    test("a value that JSON cannot carry is refused with thrown; arguments that are not JSON too", (s) =>
      Effect.gen(function* () {
        for (const code of ["return () => 1", "const a = {}; a.self = a; return a", "return 10n"]) {
          const error = yield* fails(s, request(code).request)
          expect(error.reason).toBe("thrown")
          expect(error.message).toMatch(/JSON|circular|BigInt|serializ/i)
        }
        const { request: r, recorded } = request("const a = {}; a.self = a; await tools.weather.forecast(a)")
        expect((yield* fails(s, r)).reason).toBe("thrown")
        expect(recorded.calls).toEqual([])
      }))

    test("a program that does not parse is syntax; TypeScript is accepted", (s) =>
      Effect.gen(function* () {
        for (const code of ["return (", "const = 1", "return {{"])
          expect((yield* fails(s, request(code).request)).reason).toBe("syntax")
        const typed = yield* s.run(
          request(`
            interface Forecast { readonly city: string; readonly days: number }
            type Answer = { echo: Forecast }
            const ask = async (f: Forecast): Promise<Answer> => (await tools.weather.forecast(f)) as Answer
            const got: Answer = await ask({ city: "Oslo", days: 3 })
            return got.echo.city satisfies string`).request
        )
        expect(typed.value).toBe("Oslo")
      }))

    test("cpu-time: an endless loop is stopped", (s) =>
      Effect.gen(function* () {
        const error = yield* fails(
          s,
          request("while (true) {}", { bounds: { ...generousBounds, cpuMs: 200 } }).request
        )
        expect(error.reason).toBe("cpu-time")
        expect(error.message).toContain("200")
      }))

    test("cpu-time counts computing only: a slow tool does not use it up", (s) =>
      Effect.gen(function* () {
        const result = yield* s.run(
          request("const a = await tools.weather.forecast(1); return a", {
            bounds: { ...generousBounds, cpuMs: 100 },
            // Deliberately late (not a synchronisation): the answer comes after more than cpuMs.
            answer: () =>
              Effect.runPromise(Effect.as(Effect.sleep("300 millis"), { ok: true, value: "late" } as const))
          }).request
        )
        expect(result.value).toBe("late")
      }))

    test("memory: an allocation bomb is stopped", (s) =>
      Effect.gen(function* () {
        const bounds = { ...generousBounds, memoryBytes: 16 * 1024 * 1024 }
        const error = yield* fails(
          s,
          request("const a = []; for (;;) a.push([a.length, { at: a.length }])", { bounds }).request
        )
        expect(error.reason).toBe("memory")
        expect(error.message).toContain(String(bounds.memoryBytes))
      }))

    test("output: a result or logs longer than the bound are stopped", (s) =>
      Effect.gen(function* () {
        const bounds = { ...generousBounds, outputChars: 1_000 }
        const result = yield* fails(s, request('return "x".repeat(5000)', { bounds }).request)
        expect(result.reason).toBe("output")
        expect(result.message).toContain("1000")
        const logs = yield* fails(
          s,
          request('for (let i = 0; i < 100; i++) console.log("y".repeat(50))', { bounds }).request
        )
        expect(logs.reason).toBe("output")
        const fits = yield* s.run(
          request('console.log("y".repeat(400)); return "x".repeat(900)', { bounds }).request
        )
        expect((fits.value as string).length).toBe(900)
      }))

    test("tool-calls: the call past the bound ends the run and never reaches the host", (s) =>
      Effect.gen(function* () {
        const { request: r, recorded } = request(
          "for (let i = 0; i < 10; i++) await tools.weather.forecast(i)",
          {
            bounds: { ...generousBounds, toolCalls: 3 }
          }
        )
        const error = yield* fails(s, r)
        expect(error.reason).toBe("tool-calls")
        expect(error.message).toContain("3")
        expect(recorded.calls.map((c) => c.args)).toEqual([0, 1, 2])
      }))

    test("wall-clock: a tool that never answers is stopped", (s) =>
      Effect.gen(function* () {
        const error = yield* fails(
          s,
          request("await tools.weather.forecast({})", {
            bounds: { ...generousBounds, wallClockMs: 300 },
            answer: () => new Promise<Port.CallAnswer>(() => {})
          }).request
        )
        expect(error.reason).toBe("wall-clock")
        expect(error.message).toContain("300")
      }))

    test("wall-clock: a promise that never settles is stopped", (s) =>
      Effect.gen(function* () {
        const error = yield* fails(
          s,
          request("await new Promise(() => {})", { bounds: { ...generousBounds, wallClockMs: 300 } }).request
        )
        expect(error.reason).toBe("wall-clock")
      }))

    test("aborted: the signal stops a program awaiting a tool, and one not yet started", (s) =>
      Effect.gen(function* () {
        const controller = new AbortController()
        const called = yield* Deferred.make<void>()
        const { request: r } = request("await tools.weather.forecast({}); return 'finished'", {
          signal: controller.signal,
          answer: () => {
            Effect.runSync(Deferred.succeed(called, undefined))
            return new Promise<Port.CallAnswer>(() => {})
          }
        })
        const fiber = yield* Effect.fork(fails(s, r))
        yield* Deferred.await(called)
        controller.abort()
        const error = yield* fiber.await.pipe(Effect.flatten)
        expect(error.reason).toBe("aborted")
        const before = new AbortController()
        before.abort()
        expect((yield* fails(s, request("return 1", { signal: before.signal }).request)).reason).toBe(
          "aborted"
        )
      }))

    it("any JSON value returned comes back equal (property)", () =>
      withSandbox((s) =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
              const expected = JSON.parse(JSON.stringify(value)) as unknown
              // Built by JSON.parse in the program: a literal would read "__proto__" as the prototype.
              const literal = JSON.stringify(JSON.stringify(value))
              const returned = await Effect.runPromise(
                s.run(request(`return JSON.parse(${literal})`).request)
              )
              expect(returned.value).toEqual(expected)
              const echoed = await Effect.runPromise(
                s.run(
                  request("return await tools.weather.cities()", { answer: () => ({ ok: true, value }) })
                    .request
                )
              )
              expect(echoed.value).toEqual(expected)
            }),
            { numRuns }
          )
        )
      ))

    it("any sequence of tool calls reaches the host in order, with its arguments (property)", () =>
      withSandbox((s) =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.tuple(fc.constantFrom(...WEATHER), fc.jsonValue({ maxDepth: 3 })), {
                maxLength: 8
              }),
              async (sequence) => {
                const calls = sequence.map(([tool, args]) => [tool.namespace, tool.name, args] as const)
                const { request: r, recorded } = request(
                  `const out = []
                   for (const [ns, name, args] of JSON.parse(${JSON.stringify(JSON.stringify(calls))}))
                     out.push(await tools[ns][name](args))
                   return out`,
                  { answer: (tool, args) => ({ ok: true, value: [tool.name, args] }) }
                )
                const result = await Effect.runPromise(s.run(r))
                const expected = calls.map(([ns, name, args]) => ({
                  tool: `${ns}.${name}`,
                  args: JSON.parse(JSON.stringify(args)) as unknown
                }))
                expect(recorded.calls).toEqual(expected)
                expect(result.value).toEqual(expected.map((c, i) => [calls[i]![1], c.args]))
                expect(result.toolCalls).toBe(calls.length)
              }
            ),
            { numRuns }
          )
        )
      ))
  })
}
