/**
 * The embedding example runs in the test suite: two turns of one thread on the examples'
 * catalog, the offline router loading a plugin and calling its tool each turn, `loadedPlugins`
 * growing, and the silent `audit-log` middleware seeing every model call.
 */
import { describe, expect, it } from "vitest"
import { main } from "./main.js"

describe("examples/embed", () => {
  it("loads a plugin and calls its tool on each turn; loadedPlugins only grows", async () => {
    const lines: Array<string> = []
    const result = await main((line) => lines.push(line))
    const [first, second] = result.turns

    const calls = (turn: typeof first) =>
      turn!.events.flatMap((e) => (e._tag === "tool_call" && e.status === "done" ? [e.toolName] : []))
    expect(calls(first)).toEqual(["load_capability", "get_current_weather"])
    expect(first!.loadedPlugins).toEqual(["weather"])
    expect(first!.answer).toContain("Berlin")

    expect(calls(second)).toEqual(["load_capability", "convert_currency"])
    expect(second!.loadedPlugins).toEqual(["weather", "currency-converter"])
    expect(second!.answer).toContain("converted: 270")

    // Every call has its isRunning and its done, sharing one event id.
    for (const turn of result.turns) {
      const ids = turn.events.flatMap((e) => (e._tag === "tool_call" ? [`${e.eventId}:${e.status}`] : []))
      expect(ids.length % 2).toBe(0)
      for (const id of ids.filter((i) => i.endsWith(":done")))
        expect(ids).toContain(id.replace(":done", ":isRunning"))
    }
    expect(lines.some((l) => l.includes("loadedPlugins") && l.includes("currency-converter"))).toBe(true)
  })

  it("shows the silent audit-log plugin at work: one record per model call, offers growing with loads", async () => {
    const result = await main(() => {})
    expect(result.audit).toHaveLength(result.modelCalls)
    // Three model calls per turn: load, tool, answer.
    expect(result.modelCalls).toBe(6)
    const offered = result.audit.map((r) => r.offeredTools)
    // A load only appends: the offer never shrinks within the thread.
    for (let i = 1; i < offered.length; i++) expect(offered[i]!).toBeGreaterThanOrEqual(offered[i - 1]!)
    expect(offered.at(-1)!).toBeGreaterThan(offered[0]!)
    // afterModel filled in the usage the scripted model reported.
    for (const r of result.audit) expect(r.usage?.inputTokens).toBeGreaterThan(0)
  })
})
