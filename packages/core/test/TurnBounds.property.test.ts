import { TurnBounds } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

/** One step an agent loop asks about, at a time offset from the turn's start. */
type Step =
  | { readonly kind: "model"; readonly at: number; readonly tokens: number }
  | { readonly kind: "tool"; readonly at: number; readonly tool: string; readonly args: unknown }

const limitsArb = fc.record({
  maxModelCalls: fc.integer({ min: 1, max: 8 }),
  maxToolCalls: fc.integer({ min: 1, max: 12 }),
  maxTokens: fc.integer({ min: 1, max: 5_000 }),
  wallClockMs: fc.integer({ min: 1, max: 10_000 }),
  repeatLimit: fc.integer({ min: 2, max: 5 })
})

// Few tools and few argument values, so that repeats happen often.
const argsArb = fc.oneof(
  fc.constant({}),
  fc.record({ city: fc.constantFrom("Berlin", "Paris") }),
  fc.record({ city: fc.constantFrom("Berlin", "Paris"), days: fc.integer({ min: 1, max: 2 }) })
)
const stepsArb = fc
  .array(
    fc.oneof(
      fc.record({ kind: fc.constant("model" as const), gap: fc.nat(2_000), tokens: fc.nat(1_500) }),
      fc.record({
        kind: fc.constant("tool" as const),
        gap: fc.nat(2_000),
        tool: fc.constantFrom("get_weather", "search"),
        args: argsArb
      })
    ),
    { maxLength: 40 }
  )
  .map((raw) => {
    let at = 0
    return raw.map((s): Step => {
      at += s.gap
      return s.kind === "model"
        ? { kind: "model", at, tokens: s.tokens }
        : { kind: "tool", at, tool: s.tool, args: s.args }
    })
  })

/** Runs `steps` until a stop, as an agent loop obeying the verdicts would. */
const play = (limits: TurnBounds.Limits, steps: ReadonlyArray<Step>) => {
  const T0 = 1_000_000
  let tally = TurnBounds.start(T0)
  const ran: Array<Step> = []
  const told: Array<Step & { kind: "tool" }> = []
  for (const step of steps) {
    const verdict =
      step.kind === "model"
        ? TurnBounds.beforeModelCall(limits, tally, T0 + step.at)
        : TurnBounds.beforeToolCall(limits, tally, step.tool, step.args, T0 + step.at)
    if (verdict._tag === "Stop") return { ran, told, stopped: verdict.error, stoppedAt: step, tally }
    tally = verdict.tally
    if (verdict._tag === "Tell") told.push(step as Step & { kind: "tool" })
    else {
      ran.push(step)
      if (step.kind === "model") tally = TurnBounds.afterModelCall(tally, step.tokens)
    }
  }
  return { ran, told, stopped: undefined, stoppedAt: undefined, tally }
}

const key = (s: Step & { kind: "tool" }) => TurnBounds.callKey(s.tool, s.args)

describe("TurnBounds (properties)", () => {
  it("no turn exceeds its model calls, tool calls or wall clock; tokens are over only by the last call", () => {
    fc.assert(
      fc.property(limitsArb, stepsArb, (limits, steps) => {
        const { ran, told, tally } = play(limits, steps)
        const models = ran.filter((s) => s.kind === "model")
        expect(models.length).toBeLessThanOrEqual(limits.maxModelCalls)
        expect(ran.filter((s) => s.kind === "tool").length + told.length).toBeLessThanOrEqual(
          limits.maxToolCalls
        )
        for (const s of [...ran, ...told]) expect(s.at).toBeLessThanOrEqual(limits.wallClockMs)
        // Every model call but the last started under the token bound.
        const before = models.slice(0, -1).reduce((sum, s) => sum + (s.kind === "model" ? s.tokens : 0), 0)
        expect(before).toBeLessThan(limits.maxTokens)
        expect(tally.tokens).toBe(models.reduce((sum, s) => sum + (s.kind === "model" ? s.tokens : 0), 0))
      })
    )
  })

  it("an identical call runs at most repeatLimit - 1 times; the next is told; only one after that stops the turn", () => {
    fc.assert(
      fc.property(limitsArb, stepsArb, (limits, steps) => {
        const { ran, told, stopped, stoppedAt } = play(limits, steps)
        const runs = new Map<string, number>()
        for (const s of ran) if (s.kind === "tool") runs.set(key(s), (runs.get(key(s)) ?? 0) + 1)
        for (const n of runs.values()) expect(n).toBeLessThanOrEqual(limits.repeatLimit - 1)
        // Each call is told once, and only after it ran repeatLimit - 1 times.
        const toldKeys = told.map(key)
        expect(new Set(toldKeys).size).toBe(toldKeys.length)
        for (const k of toldKeys) expect(runs.get(k)).toBe(limits.repeatLimit - 1)
        if (stopped?.reason === "repetition") {
          expect(stoppedAt?.kind).toBe("tool")
          expect(toldKeys).toContain(key(stoppedAt as Step & { kind: "tool" }))
        }
      })
    )
  })

  it("a turn stops only at a bound it reached, and the error names that bound's value", () => {
    fc.assert(
      fc.property(limitsArb, stepsArb, (limits, steps) => {
        const { stopped, stoppedAt, tally } = play(limits, steps)
        if (stopped === undefined || stoppedAt === undefined) return
        expect(stopped).toBeInstanceOf(TurnBounds.TurnBoundExceeded)
        switch (stopped.reason) {
          case "wall-clock":
            expect(stoppedAt.at).toBeGreaterThan(limits.wallClockMs)
            expect(stopped.limit).toBe(limits.wallClockMs)
            break
          case "max-model-calls":
            expect(stoppedAt.kind).toBe("model")
            expect(tally.modelCalls).toBe(limits.maxModelCalls)
            break
          case "max-tokens":
            expect(tally.tokens).toBeGreaterThanOrEqual(limits.maxTokens)
            expect(stopped.limit).toBe(limits.maxTokens)
            break
          case "max-tool-calls":
            expect(tally.toolCalls).toBe(limits.maxToolCalls)
            break
          case "repetition":
            expect(stopped.limit).toBe(limits.repeatLimit)
        }
      })
    )
  })

  it("the call key ignores the order of argument keys and undefined fields, and tells values apart", () => {
    const objectArb = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), {
      maxKeys: 5
    })
    fc.assert(
      fc.property(fc.string(), objectArb, (tool, args) => {
        const reversed = Object.fromEntries(Object.entries(args).reverse())
        expect(TurnBounds.callKey(tool, reversed)).toBe(TurnBounds.callKey(tool, args))
        expect(TurnBounds.callKey(tool, { ...args, "\u0001extra": undefined })).toBe(
          TurnBounds.callKey(tool, args)
        )
        expect(TurnBounds.callKey(`${tool}x`, args)).not.toBe(TurnBounds.callKey(tool, args))
      })
    )
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b))
        const sortedA = TurnBounds.callKey("t", a)
        const sortedB = TurnBounds.callKey("t", b)
        // Different values differ unless they are the same object with keys in another order.
        if (sortedA === sortedB) expect(JSON.parse(sortedA.slice(2))).toEqual(JSON.parse(sortedB.slice(2)))
      })
    )
  })

  it("tokens are the larger of the usage report and the counter's count, so under-reporting cannot pass the bound", () => {
    fc.assert(
      fc.property(
        fc.option(
          fc.record({
            inputTokens: fc.option(fc.nat(10_000), { nil: undefined }),
            outputTokens: fc.option(fc.nat(10_000), { nil: undefined })
          }),
          { nil: undefined }
        ),
        fc.nat(10_000),
        (usage, counted) => {
          const tokens = TurnBounds.tokensOf(usage, counted)
          const reported = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0)
          expect(tokens).toBe(Math.max(reported, counted))
          expect(tokens).toBeGreaterThanOrEqual(counted)
        }
      )
    )
  })
})

describe("TurnBounds.make", () => {
  it("fills defaults and refuses what is not a positive integer, or a repeat limit under 2", () => {
    expect(TurnBounds.make()).toEqual(TurnBounds.DEFAULT_LIMITS)
    expect(TurnBounds.make({ maxToolCalls: 3 }).maxToolCalls).toBe(3)
    expect(() => TurnBounds.make({ maxTokens: 0 })).toThrow(
      /maxTokens must be an integer of at least 1, got 0/
    )
    expect(() => TurnBounds.make({ wallClockMs: 1.5 })).toThrow(RangeError)
    expect(() => TurnBounds.make({ repeatLimit: 1 })).toThrow(/repeatLimit must be an integer of at least 2/)
  })
})
