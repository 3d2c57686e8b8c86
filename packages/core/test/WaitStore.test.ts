/** The in-memory WaitStore against the port's conformance suite, and the rules of `Wait`. */
import { Wait, WaitStore } from "@plugboard/core"
import { WaitStoreConformance } from "@plugboard/testing"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

WaitStoreConformance.run("memory", () => WaitStore.layerMemory)

const approval: Wait.WaitRequest = { _tag: "approval", plugin: "p", tool: "t", args: {}, reason: "r" }
const input: Wait.WaitRequest = { _tag: "input", plugin: "p", message: "m", schema: { type: "object" } }
const connect: Wait.WaitRequest = { _tag: "connect", plugin: "p", url: "https://example.com" }

describe("Wait", () => {
  it("each request takes its own kind of answer, and a timeout or a connection from the host only", () => {
    const answers: ReadonlyArray<Wait.WaitAnswer> = [
      { _tag: "decision", approved: true },
      { _tag: "values", values: {} },
      { _tag: "declined" },
      { _tag: "connected" },
      { _tag: "timed-out" }
    ]
    const fits = (request: Wait.WaitRequest, fromClient: boolean) =>
      answers.filter((a) => Wait.misfit(request, a, fromClient) === undefined).map((a) => a._tag)
    expect(fits(approval, true)).toEqual(["decision"])
    expect(fits(input, true)).toEqual(["values", "declined"])
    // The host records a connection made; a client cannot claim one.
    expect(fits(connect, true)).toEqual([])
    expect(fits(approval, false)).toEqual(["decision", "timed-out"])
    expect(fits(connect, false)).toEqual(["connected", "timed-out"])
    expect(Wait.misfit(input, { _tag: "decision", approved: true }, true)).toBe(
      "a wait for input is answered with 'values' or 'declined', not 'decision'"
    )
  })

  it("the model is told 'not approved' or 'no answer', and nothing when the tool goes on", () => {
    expect(Wait.refusalText({ _tag: "decision", approved: true })).toBeUndefined()
    expect(Wait.refusalText({ _tag: "values", values: { a: 1 } })).toBeUndefined()
    expect(Wait.refusalText({ _tag: "decision", approved: false })).toBe(Wait.NOT_APPROVED)
    expect(Wait.refusalText({ _tag: "timed-out" })).toBe(Wait.NO_ANSWER)
    expect(Wait.refusalText({ _tag: "decision", approved: false, note: "  too much " })).toBe(
      `${Wait.NOT_APPROVED} The user said: too much`
    )
  })

  it("a denial's note reaches the model bounded, whatever its length (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 5_000 }), (note) => {
        const text = Wait.refusalText({ _tag: "decision", approved: false, note })!
        expect(text.startsWith(Wait.NOT_APPROVED)).toBe(true)
        expect(text.length).toBeLessThanOrEqual(Wait.NOT_APPROVED.length + " The user said: ".length + 500)
      })
    )
  })
})
