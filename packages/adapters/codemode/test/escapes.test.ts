/**
 * The escape battery (issue 39, docs/code-mode.md#limits): hostile programs, each run in the real
 * QuickJS sandbox, and each refused or bounded with the host unharmed. After every one, the host's
 * `globalThis` has the keys it had, `Object.prototype` and the other builtin prototypes are
 * untouched, the host's own `JSON` and `Promise.prototype.then` are the same functions, and a
 * normal program still runs on the same sandbox and gets the right answer.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  BOUNDS,
  expectHostUnharmed,
  failure,
  type HostSnapshot,
  type Ran,
  result,
  run,
  snapshot,
  theSandbox
} from "./helpers.js"

/** The globals a program may see: QuickJS's language builtins, and the bridge's two. */
const LANGUAGE_GLOBALS = [
  "AggregateError",
  "Array",
  "ArrayBuffer",
  "BigInt",
  "BigInt64Array",
  "BigUint64Array",
  "Boolean",
  "DataView",
  "Date",
  "Error",
  "EvalError",
  "FinalizationRegistry",
  "Float16Array",
  "Float32Array",
  "Float64Array",
  "Function",
  "Infinity",
  "Int16Array",
  "Int32Array",
  "Int8Array",
  "InternalError",
  "Iterator",
  "JSON",
  "Map",
  "Math",
  "NaN",
  "Number",
  "Object",
  "Promise",
  "Proxy",
  "RangeError",
  "ReferenceError",
  "Reflect",
  "RegExp",
  "Set",
  "SharedArrayBuffer",
  "String",
  "Symbol",
  "SyntaxError",
  "TypeError",
  "URIError",
  "Uint16Array",
  "Uint32Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "WeakMap",
  "WeakRef",
  "WeakSet",
  "console",
  "decodeURI",
  "decodeURIComponent",
  "encodeURI",
  "encodeURIComponent",
  "escape",
  "eval",
  "globalThis",
  "isFinite",
  "isNaN",
  "parseFloat",
  "parseInt",
  "tools",
  "undefined",
  "unescape"
]

const reasonOf = (ran: Ran): string => failure(ran).reason

// The memory bombs get time enough that memory, not the cpu bound, is what stops them.
const MEMORY = { ...BOUNDS, cpuMs: 10_000 }

let before: HostSnapshot

beforeAll(async () => {
  await theSandbox()
})

beforeEach(() => {
  before = snapshot()
})

afterEach(async () => {
  await expectHostUnharmed(before)
})

describe("the host's world is out of reach", () => {
  it("no fetch, XMLHttpRequest or WebSocket (or any network object)", async () => {
    const r = await run(
      "return [typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof navigator, typeof Request, typeof EventSource]"
    )
    expect(result(r).value).toEqual(Array(6).fill("undefined"))
    const call = await run('await fetch("http://127.0.0.1:1/")')
    expect(reasonOf(call)).toBe("thrown")
    expect(failure(call).message).toMatch(/ReferenceError: 'fetch' is not defined/)
  })

  it("no require", async () => {
    const r = await run('return require("fs").readFileSync("/etc/passwd", "utf8")')
    expect(reasonOf(r)).toBe("thrown")
    expect(failure(r).message).toMatch(/ReferenceError: 'require' is not defined/)
  })

  it("a dynamic import() of a module fails", async () => {
    for (const specifier of ["fs", "node:child_process", "./x.js", "data:text/javascript,export default 1"]) {
      const r = await run(`const m = await import(${JSON.stringify(specifier)}); return Object.keys(m)`)
      expect(reasonOf(r)).toBe("thrown")
      expect(failure(r).message).toMatch(/could not load module/)
    }
  })

  it("a static import does not parse", async () => {
    const r = await run('import { readFileSync } from "node:fs"\nreturn readFileSync("/etc/passwd", "utf8")')
    expect(reasonOf(r)).toBe("syntax")
    expect(failure(r).message).toMatch(/cannot import/)
  })

  it("no process, so no process.exit", async () => {
    expect(
      result(await run("return [typeof process, typeof Buffer, typeof module, typeof exports]")).value
    ).toEqual(Array(4).fill("undefined"))
    const r = await run("process.exit(1)")
    expect(reasonOf(r)).toBe("thrown")
    expect(failure(r).message).toMatch(/'process' is not defined/)
  })

  it("walking globalThis finds only the language's builtins, tools and console", async () => {
    const r = await run(`
      const names = Object.getOwnPropertyNames(globalThis).sort()
      const symbols = Object.getOwnPropertySymbols(globalThis).map(String)
      const hidden = []
      for (const name of names) {
        const d = Object.getOwnPropertyDescriptor(globalThis, name)
        if (d.get || d.set) hidden.push(name)
      }
      return { names, symbols, hidden, proto: Object.getPrototypeOf(globalThis) === Object.prototype }`)
    const { names, symbols, hidden, proto } = result(r).value as {
      names: string[]
      symbols: string[]
      hidden: string[]
      proto: boolean
    }
    expect(names.filter((n) => !LANGUAGE_GLOBALS.includes(n))).toEqual([])
    expect(names).not.toContain("setTimeout")
    expect(names).not.toContain("hostCall")
    expect(names).not.toContain("hostLog")
    expect(names).not.toContain("std")
    expect(names).not.toContain("os")
    expect({ symbols, hidden, proto }).toEqual({
      symbols: ["Symbol(Symbol.toStringTag)"],
      hidden: [],
      proto: true
    })
  })

  it('Function("return this")() and eval reach the VM\'s own global only', async () => {
    const r = await run(`
      const g = Function("return this")()
      const viaEval = eval("this")
      const indirect = (0, eval)("globalThis")
      return [g === globalThis, viaEval === globalThis, indirect === globalThis,
              typeof g.process, eval("typeof require + typeof process"), typeof indirect.Buffer]`)
    expect(result(r).value).toEqual([true, true, true, "undefined", "undefinedundefined", "undefined"])
  })

  it("constructor.constructor from a tool function builds only VM functions", async () => {
    const r = await run(`
      const F = tools.w.echo.constructor.constructor
      const g = F("return this")()
      return [F === Function, g === globalThis, F("return typeof process + typeof require")(),
              Object.getPrototypeOf(tools.w.echo) === Function.prototype]`)
    expect(result(r).value).toEqual([true, true, "undefinedundefined", true])
  })

  it("constructor.constructor from a resolved value builds only VM functions", async () => {
    const r = await run(`
      const v = await tools.w.echo({ a: 1 })
      const F = v.constructor.constructor
      return [v.constructor === Object, F === Function,
              F("return [typeof process, typeof require, typeof Buffer, Object.keys(this).length]")()]`)
    expect(result(r).value).toEqual([true, true, ["undefined", "undefined", "undefined", 0]])
  })

  it("the bridge's host functions are not reachable from a tool function", async () => {
    const r = await run(`
      const f = tools.w.echo
      const read = (get) => { try { return get() } catch (e) { return "refused: " + e.name } }
      return [read(() => typeof f.caller), read(() => typeof f.arguments), Object.getOwnPropertyNames(f).sort(),
              Object.isFrozen(f), Object.isFrozen(tools), Object.isFrozen(tools.w), Object.getPrototypeOf(tools)]`)
    const [caller, args, own, ...rest] = result(r).value as unknown[]
    expect(caller).toMatch(/refused|undefined/)
    expect(args).toMatch(/refused|undefined/)
    expect(own).toEqual(["length", "name", "prototype"])
    expect(rest).toEqual([true, true, true, null])
  })
})

describe("tampering with the bridge changes nothing the host receives", () => {
  it("Object.prototype.toJSON: the host gets plain JSON data, the next run is clean", async () => {
    const r = await run(`
      Object.prototype.toJSON = function () { return { hijacked: true } }
      await tools.w.echo({ a: 1 })
      return "sent"`)
    // The program's own hook shapes its own arguments; what arrives is still only data.
    expect(r.calls).toEqual([{ tool: "w.echo", args: { hijacked: true } }])
    expect(Object.getPrototypeOf(r.calls[0]!.args)).toBe(Object.prototype)
    expect(Object.hasOwn(Object.prototype, "toJSON")).toBe(false)
    // A string has no toJSON to look up: the result is the program's own.
    expect(result(r).value).toBe("sent")
  })

  it("redefining JSON.stringify and JSON.parse does not change the bridge's", async () => {
    const r = await run(`
      JSON.stringify = () => '{"evil":1}'
      JSON.parse = () => "evil"
      const answer = await tools.w.echo({ a: 1 })
      return answer.echo.a`)
    expect(r.calls).toEqual([{ tool: "w.echo", args: { a: 1 } }])
    // The result is written by the bridge's own JSON.stringify, not the program's.
    expect(result(r).value).toBe(1)
  })

  it("overwriting tools.w.echo, tools.w or tools does nothing (and throws in strict code)", async () => {
    const sloppy = await run(`
      tools.w.echo = () => "mine"
      tools.w = {}
      tools = null
      delete tools.w
      return [typeof tools.w.echo, (await tools.w.echo({ b: 2 })).echo.b]`)
    expect(result(sloppy).value).toEqual(["function", 2])
    expect(sloppy.calls).toEqual([{ tool: "w.echo", args: { b: 2 } }])
    const strict = await run('"use strict"\ntools.w.echo = () => "mine"')
    expect(reasonOf(strict)).toBe("thrown")
    expect(failure(strict).message).toMatch(/TypeError/)
  })

  it("poisoning Promise.prototype.then changes only what the program sees", async () => {
    const r = await run(`
      const then = Promise.prototype.then
      Promise.prototype.then = function (ok, ko) { return then.call(this, (v) => ok({ tampered: v }), ko) }
      const awaited = await tools.w.echo({ x: 1 })
      const chained = await tools.w.echo({ x: 2 }).then((v) => v)
      return { awaited, chained }`)
    expect(r.calls).toEqual([
      { tool: "w.echo", args: { x: 1 } },
      { tool: "w.echo", args: { x: 2 } }
    ])
    // await uses the engine's own resolution; an explicit .then is the program's poisoned one.
    expect(result(r).value).toEqual({
      awaited: { echo: { x: 1 } },
      chained: { tampered: { echo: { x: 2 } } }
    })
  })

  it("a then getter on Object.prototype that spins is stopped by the cpu bound", async () => {
    const r = await run(`
      Object.defineProperty(Object.prototype, "then", { get() { for (;;) {} } })
      await tools.w.echo({})`)
    expect(reasonOf(r)).toBe("cpu-time")
  })

  it("Array.prototype.join redefined does not change the logs", async () => {
    const r = await run('Array.prototype.join = () => "evil"; console.log("a", 1, { b: 2 }); return 1')
    expect(result(r).logs).toEqual(['a 1 {"b":2}'])
  })
})

describe("arguments the bridge cannot send are refused in the VM", () => {
  it("a getter that throws", async () => {
    const r = await run('await tools.w.echo({ get x() { throw new Error("boom") } })')
    expect(failure(r)).toMatchObject({ reason: "thrown" })
    expect(failure(r).message).toMatch(/tools\.w\.echo: its arguments are not JSON \(boom\)/)
    expect(r.calls).toEqual([])
  })

  it("a cycle", async () => {
    const r = await run("const a = {}; a.a = a; await tools.w.echo(a)")
    expect(failure(r).message).toMatch(/not JSON \(circular reference\)/)
    expect(r.calls).toEqual([])
  })

  it("a BigInt, a function, a symbol", async () => {
    for (const arg of ["10n", "() => 1", "Symbol('s')"]) {
      const r = await run(`await tools.w.echo(${arg})`)
      expect(failure(r).message).toMatch(/its arguments are not JSON/)
      expect(r.calls).toEqual([])
    }
  })

  it("a proxy whose traps throw", async () => {
    const r = await run('await tools.w.echo(new Proxy({}, { ownKeys() { throw new Error("trap") } }))')
    expect(failure(r).message).toMatch(/not JSON \(trap\)/)
    expect(r.calls).toEqual([])
  })
})

describe("what a program spends is bounded", () => {
  it("an endless loop", async () => {
    const r = await run("for (;;) {}")
    expect(failure(r)).toMatchObject({ reason: "cpu-time" })
    expect(failure(r).message).toBe(`The program computed for more than ${BOUNDS.cpuMs} ms (cpu bound).`)
  })

  it("while (true) {} inside a tool's .then", async () => {
    const r = await run("await tools.w.echo({}).then(() => { while (true) {} })")
    expect(reasonOf(r)).toBe("cpu-time")
    expect(r.calls).toHaveLength(1)
  })

  it("a memory bomb: array growth", async () => {
    const r = await run("const a = []; for (;;) a.push({ i: a.length, s: 'x' + a.length })", {
      bounds: MEMORY
    })
    expect(failure(r)).toMatchObject({ reason: "memory" })
    expect(failure(r).message).toContain(String(BOUNDS.memoryBytes))
  })

  it("a memory bomb: string doubling", async () => {
    const r = await run("let s = 'x'; for (;;) { s = s + s; s.charCodeAt(s.length - 1) }", { bounds: MEMORY })
    // QuickJS's ropes make doubling cheap until the engine's string limit, or the memory bound.
    expect(["memory", "thrown"]).toContain(reasonOf(r))
    expect(failure(r).message).toMatch(/memory|string too long/)
  })

  it("a memory bomb: typed arrays", async () => {
    const r = await run("const a = []; for (;;) a.push(new Float64Array(100000))", { bounds: MEMORY })
    expect(reasonOf(r)).toBe("memory")
  })

  it("deep recursion is a clear stack overflow, not a host crash", async () => {
    const r = await run("const f = (n) => f(n + 1) + 1; return f(0)")
    expect(failure(r)).toMatchObject({ reason: "thrown" })
    expect(failure(r).message).toMatch(/stack overflow/)
    const caught = await run("const f = (n) => f(n + 1); try { f(0) } catch (e) { return e.message }")
    expect(result(caught).value).toBe("stack overflow")
  })

  it("deeply nested code handed to eval or Function: the parser's stack overflows in the VM", async () => {
    for (const code of [
      'eval("[".repeat(100000) + "]".repeat(100000))',
      'eval("(".repeat(100000) + "1" + ")".repeat(100000))',
      'Function("return " + "!".repeat(100000) + "1")()',
      'JSON.parse("[".repeat(100000))',
      "let a = []; for (let i = 0; i < 100000; i++) a = [a]; return JSON.stringify(a).length"
    ]) {
      const r = await run(code)
      expect(reasonOf(r)).toBe("thrown")
      expect(failure(r).message).toMatch(/stack overflow/)
    }
  })

  it("a huge return value", async () => {
    const r = await run("return 'x'.repeat(1e6)")
    expect(failure(r)).toMatchObject({ reason: "output" })
    expect(failure(r).message).toContain(String(BOUNDS.outputChars))
  })

  it("a huge log flood", async () => {
    const r = await run("for (;;) console.log('flood '.repeat(100))")
    expect(failure(r)).toMatchObject({ reason: "output" })
    expect(failure(r).message).toBe(
      `The program logged more than ${BOUNDS.outputChars} characters (output bound).`
    )
  })

  it("no setTimeout, setInterval or queueMicrotask; a flood of promise jobs is bounded", async () => {
    for (const timer of [
      "setTimeout",
      "setInterval",
      "queueMicrotask",
      "setImmediate",
      "requestAnimationFrame"
    ]) {
      const r = await run(`${timer}(() => {}, 0)`)
      expect(failure(r).message).toMatch(new RegExp(`'${timer}' is not defined`))
    }
    const jobs = await run(
      "const spin = () => { Promise.resolve().then(spin) }; spin(); await new Promise(() => {})"
    )
    expect(reasonOf(jobs)).toBe("cpu-time")
    // Each job returning the next one's promise chains them all: the chain runs the heap out and
    // QuickJS rejects a link with the failure, which nothing observes; the program then waits on
    // nothing, and the run ends there.
    const chained = await run(
      "const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {})"
    )
    expect(["cpu-time", "memory", "wall-clock"]).toContain(reasonOf(chained))
    const awaits = await run("for (;;) await null")
    expect(reasonOf(awaits)).toBe("cpu-time")
  })

  it("no Atomics (so no Atomics.wait); a SharedArrayBuffer is only memory", async () => {
    expect(result(await run("return [typeof Atomics, new SharedArrayBuffer(8).byteLength]")).value).toEqual([
      "undefined",
      8
    ])
    const r = await run("Atomics.wait(new Int32Array(new SharedArrayBuffer(16)), 0, 0)")
    expect(failure(r).message).toMatch(/'Atomics' is not defined/)
  })

  it("a promise that never settles", async () => {
    const r = await run("await new Promise(() => {})")
    expect(reasonOf(r)).toBe("wall-clock")
  })

  it("a tool that never answers", async () => {
    const r = await run("await tools.w.never({})", { bounds: { ...BOUNDS, wallClockMs: 200 } })
    expect(failure(r)).toMatchObject({ reason: "wall-clock" })
    expect(failure(r).message).toContain("200 ms")
    expect(r.calls).toEqual([{ tool: "w.never", args: {} }])
  })

  it("spamming tool calls past the bound, awaited or not: the host sees exactly the bound", async () => {
    const awaited = await run("for (let i = 0; ; i++) await tools.w.echo(i)")
    expect(failure(awaited)).toMatchObject({ reason: "tool-calls" })
    expect(awaited.calls.map((c) => c.args)).toEqual([0, 1, 2, 3, 4])
    // Fired without awaiting: the run ends in the slice that made them, before any is handed over.
    const fired = await run("for (let i = 0; i < 10000; i++) tools.w.echo(i); await new Promise(() => {})")
    expect(reasonOf(fired)).toBe("tool-calls")
    expect(fired.calls.length).toBeLessThanOrEqual(BOUNDS.toolCalls)
  })
})

describe("the program cannot pick whose session it acts in", () => {
  it("{ session: 'other' } is just an argument: the host's call context is its own", async () => {
    // A host builds `call` for one turn: its user and session are in the closure, not in the
    // program's reach. The program only ever gives (tool, args).
    const context = { did: "did:key:z6MkAlice", sessionId: "session-1" }
    const seen: Array<{ context: typeof context; tool: string; args: unknown; arity: number }> = []
    const s = await theSandbox()
    const { Effect } = await import("effect")
    const out = await Effect.runPromise(
      s.run({
        code: 'return await tools.mail.send({ session: "other", did: "did:key:z6MkMallory", to: "bob" })',
        tools: [{ namespace: "mail", name: "send" }],
        bounds: BOUNDS,
        call: (...params) => {
          const [tool, args] = params
          seen.push({ context, tool: `${tool.namespace}.${tool.name}`, args, arity: params.length })
          return Promise.resolve({ ok: true, value: { sentAs: context.did } })
        }
      })
    )
    expect(seen).toEqual([
      {
        context: { did: "did:key:z6MkAlice", sessionId: "session-1" },
        tool: "mail.send",
        args: { session: "other", did: "did:key:z6MkMallory", to: "bob" },
        arity: 2
      }
    ])
    expect(out.value).toEqual({ sentAs: "did:key:z6MkAlice" })
  })
})
