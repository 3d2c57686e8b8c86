/**
 * The replay of a program that waited (docs/waiting.md#programs-that-wait): the same calls get the
 * journal's answers in order, the waited call comes right after them, every later call is live,
 * and any other call stops the program before it runs.
 */
import { ProgramWait, Wait } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const json = fc.jsonValue({ maxDepth: 2 })
const call = fc.record({ tool: fc.constantFrom("balance", "pay", "quote"), args: json })
const answer = fc.oneof(
  fc.record({ ok: fc.constant(true as const), value: json }),
  fc.record({ ok: fc.constant(false as const), error: fc.string() })
)
const entry = fc.record({ tool: call.map((c) => c.tool), args: json, answer })
const journal = fc.array(entry, { maxLength: 6 }).map((calls) => ({ calls }))

/** Replays `calls` on a cursor, returning each step. */
const run = (cursor: ProgramWait.Cursor, calls: ReadonlyArray<ProgramWait.Call>) => {
  const steps: Array<ProgramWait.Step> = []
  let at = cursor
  for (const c of calls) {
    const n = ProgramWait.next(at, c)
    steps.push(n.step)
    at = n.cursor
    if (n.step._tag === "diverged") break
  }
  return { steps, cursor: at }
}

describe("ProgramWait replay", () => {
  it("answers the journal's calls from it, in order, then the waited call, then live calls", () => {
    fc.assert(
      fc.property(journal, call, fc.array(call, { maxLength: 4 }), (j, waited, later) => {
        const { steps, cursor } = run(ProgramWait.replay(j, waited), [...j.calls, waited, ...later])
        expect(steps.slice(0, j.calls.length)).toEqual(
          j.calls.map((e) => ({ _tag: "replayed", answer: e.answer }))
        )
        expect(steps[j.calls.length]).toEqual({ _tag: "waited" })
        expect(steps.slice(j.calls.length + 1).every((s) => s._tag === "live")).toBe(true)
        expect(ProgramWait.unfinished(cursor)).toBeUndefined()
      })
    )
  })

  it("stops at the first call that is not the first run's, and nothing after it is answered", () => {
    fc.assert(
      fc.property(journal, call, call, fc.nat(6), (j, waited, other, where) => {
        const expected = [...j.calls, waited]
        const at = Math.min(where, expected.length - 1)
        fc.pre(!ProgramWait.sameCall(expected[at]!, other))
        const calls = [...expected.slice(0, at), other, ...expected.slice(at + 1)]
        const { steps } = run(ProgramWait.replay(j, waited), calls)
        expect(steps).toHaveLength(at + 1)
        const last = steps[at]!
        expect(last._tag).toBe("diverged")
        expect(last._tag === "diverged" && last.message).toContain(`call ${at + 1}`)
      })
    )
  })

  it("a program that ends before the waited call has diverged", () => {
    fc.assert(
      fc.property(journal, call, fc.nat(6), (j, waited, made) => {
        const { cursor } = run(ProgramWait.replay(j, waited), j.calls.slice(0, made))
        expect(ProgramWait.unfinished(cursor)).toContain("never came")
      })
    )
  })

  it("compares arguments by content, whatever the order of their keys", () => {
    expect(
      ProgramWait.sameCall(
        { tool: "pay", args: { a: 1, b: [{ x: 1, y: 2 }] } },
        {
          tool: "pay",
          args: { b: [{ y: 2, x: 1 }], a: 1 }
        }
      )
    ).toBe(true)
    expect(ProgramWait.sameCall({ tool: "pay", args: { a: 1 } }, { tool: "pay", args: { a: 2 } })).toBe(false)
    expect(ProgramWait.sameCall({ tool: "pay", args: {} }, { tool: "quote", args: {} })).toBe(false)
  })

  it("an approval request keeps its journal through the wait store's schema; a malformed journal is refused", () => {
    fc.assert(
      fc.property(journal, (j) => {
        const request = {
          _tag: "approval" as const,
          plugin: "payments",
          tool: "pay",
          args: {},
          reason: "r",
          program: j
        }
        const decoded = Schema.decodeUnknownEither(Wait.WaitRequest)(JSON.parse(JSON.stringify(request)))
        expect(Either.isRight(decoded)).toBe(true)
      })
    )
    const bad = {
      _tag: "approval",
      plugin: "p",
      tool: "t",
      args: {},
      reason: "r",
      program: { calls: [{ tool: 1 }] }
    }
    expect(Either.isLeft(Schema.decodeUnknownEither(Wait.WaitRequest)(bad))).toBe(true)
  })
})
