/** How `plugboard chat` prints a stream's events. */
import { describe, expect, it } from "vitest"
import { eventPrinter, printEvent } from "../src/cli/Sse.js"

const at = "2026-11-22T00:00:00.000Z"

describe("the chat client's printer", () => {
  it("prints a provider's long, multi-line reasoning on one clipped line", () => {
    const content = `First thought.\n\n  Second thought, indented.\n${"word ".repeat(200)}`
    const line = printEvent({ _tag: "reasoning", content, timestamp: at })
    expect(line.split("\n")).toHaveLength(2)
    expect(line.startsWith("… First thought. Second thought, indented. word word")).toBe(true)
    expect(line.trimEnd().endsWith("…")).toBe(true)
    expect(line.length).toBeLessThan(320)
    expect(printEvent({ _tag: "reasoning", content: "Short.", timestamp: at })).toBe("… Short.\n")
  })

  it("runs answer chunks on as one paragraph and puts every other event on its own line", () => {
    const print = eventPrinter()
    const out = [
      print({ _tag: "reasoning", content: "Loading weather.", timestamp: at }),
      print({ _tag: "message", content: "It is ", timestamp: at }),
      print({ _tag: "message", content: "sunny.", timestamp: at }),
      print({ _tag: "done" })
    ].join("")
    expect(out).toContain("… Loading weather.\n")
    expect(out).toContain("It is sunny.")
    expect(out.trimEnd().endsWith("← done")).toBe(true)
  })
})
