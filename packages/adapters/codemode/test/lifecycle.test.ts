/**
 * What a run leaves behind: nothing. Each run has its own runtime, context and WebAssembly memory,
 * all dropped when it ends, so no state passes from one program to the next, runs at once do not
 * see each other, and many runs do not grow the host's memory. An interrupted Effect stops its run.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { QuickJsSandbox } from "../src/index.js"
import { BOUNDS, result, run, TOOLS, theSandbox } from "./helpers.js"

// A full collection between measurements: without one, V8 frees dropped instances whenever it
// likes and the numbers say nothing. `--expose-gc` set at run time takes effect in a new context.
setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

// V8 releases a dropped WebAssembly memory after a collection and a turn of the event loop or two.
const hostMemory = async (): Promise<number> => {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const m = process.memoryUsage()
  return m.heapUsed + m.external + m.arrayBuffers
}

describe("QuickJsSandbox lifecycle", () => {
  it("names its engine and version", async () => {
    expect((await theSandbox()).name).toMatch(/^quickjs-emscripten \d+\.\d+\.\d+$/)
  })

  it("nothing passes from one run to the next", async () => {
    const first = await run(
      "globalThis.leftover = 1; Object.prototype.polluted = true; Array.prototype.push = null; return 1"
    )
    expect(result(first).value).toBe(1)
    const second = await run('return [typeof leftover, "polluted" in {}, typeof [].push]')
    expect(result(second).value).toEqual(["undefined", false, "function"])
  })

  it("runs at once keep to themselves", async () => {
    const programs = Array.from(
      { length: 8 },
      (_, i) => `globalThis.mine = ${i}; await tools.w.echo(${i}); await null; return [mine, globalThis.mine]`
    )
    const ran = await Promise.all(programs.map((code) => run(code)))
    expect(ran.map((r) => result(r).value)).toEqual(programs.map((_, i) => [i, i]))
  })

  it("many runs, each allocating megabytes, do not grow the host's memory", async () => {
    const program =
      "const a = []; for (let i = 0; i < 20000; i++) a.push({ i, s: 'x'.repeat(50) + i }); return a.length"
    for (let i = 0; i < 10; i++) result(await run(program))
    const before = await hostMemory()
    for (let i = 0; i < 150; i++) expect(result(await run(program)).value).toBe(20000)
    const grown = (await hostMemory()) - before
    // 150 runs of ~3 MB each: kept, they would hold 450 MB and more (16 MiB of instance memory each).
    expect(grown).toBeLessThan(64 * 1024 * 1024)
  }, 120_000)

  it("a failed run leaves nothing behind either (a memory bomb, then a normal run)", async () => {
    const before = await hostMemory()
    for (let i = 0; i < 20; i++) {
      const bomb = await run("const a = []; for (;;) a.push(new Float64Array(100000))", {
        bounds: { ...BOUNDS, cpuMs: 10_000 }
      })
      expect(bomb.outcome._tag).toBe("Left")
    }
    expect((await hostMemory()) - before).toBeLessThan(64 * 1024 * 1024)
    expect(result(await run("return 1")).value).toBe(1)
  }, 120_000)

  it("interrupting the run's Effect stops the program while it awaits a tool", async () => {
    const sandbox = await Effect.runPromise(QuickJsSandbox.make())
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        const called = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(
          sandbox.run({
            code: "await tools.w.never({}); for (;;) {}",
            tools: TOOLS,
            bounds: BOUNDS,
            call: () => {
              Effect.runSync(Deferred.succeed(called, undefined))
              return new Promise(() => {})
            }
          })
        )
        yield* Deferred.await(called)
        return yield* Fiber.interrupt(fiber)
      })
    )
    expect(Exit.isInterrupted(outcome)).toBe(true)
    expect(result(await run("return 2")).value).toBe(2)
  })

  it("a bound that is not a positive whole number is the caller's bug", async () => {
    const sandbox = await theSandbox()
    const exit = await Effect.runPromiseExit(
      sandbox.run({
        code: "return 1",
        tools: [],
        bounds: { ...BOUNDS, cpuMs: 0 },
        call: async () => ({ ok: true, value: 1 })
      })
    )
    expect(Exit.isFailure(exit) && exit.cause._tag === "Die" && exit.cause.defect).toBeInstanceOf(RangeError)
  })
})
