import { LoadedPlugins, makeRuntimeContext, Offer, ToolCall, ToolOutput } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { smallCatalog } from "./fixtures.js"

const catalog = smallCatalog()
const toolNames = [...catalog.toolsByName.keys()]
const pluginNames = catalog.entries.map((e) => e.name)

describe("ToolCall.plan", () => {
  it("never runs a tool the step did not offer, whatever was loaded and whatever was called (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...pluginNames, "nope"), { maxLength: 6 }),
        fc.oneof(fc.constantFrom(...toolNames, "list_capabilities", "load_capability"), fc.string()),
        (loaded, name) => {
          const offered = Offer.offer(catalog, LoadedPlugins.fromUnknown(loaded))
          const decided = ToolCall.plan({ catalog, offered, loaded }, { name, args: {} })
          const wasOffered = offered.some((t) => t.name === name)
          if (decided._tag === "Run") {
            expect(wasOffered).toBe(true)
            expect(decided.tool.kind).not.toBe("meta")
          } else if (!wasOffered) {
            // Nothing not offered runs, and no program is planned that was not offered either.
            expect(decided._tag).toBe("Answer")
            if (decided._tag === "Answer") expect(decided.answer.outcome).toBe("refused")
          }
        }
      )
    )
  })

  it("answers a tool of a plugin not loaded with core's message naming the plugin", () => {
    const offered = Offer.offer(catalog, [])
    const decided = ToolCall.plan({ catalog, offered, loaded: [] }, { name: "get_weather", args: {} })
    expect(decided).toMatchObject({
      _tag: "Answer",
      plugin: "weather",
      answer: { content: Offer.notLoadedMessage("get_weather", "weather"), outcome: "refused" }
    })
  })

  it("loads within one step see each other, and a listing after them reports them loaded", () => {
    const step = { catalog, offered: Offer.offer(catalog, []), loaded: [] }
    const calls = [
      { name: "load_capability", args: { names: ["weather"] } },
      { name: "load_capability", args: { names: ["weather", "maps"] } },
      { name: "list_capabilities", args: {} }
    ]
    const loads = ToolCall.applyLoads(step, calls)
    expect(loads.newlyLoaded).toEqual(["weather", "maps"])
    const plans = calls.map((c, i) =>
      ToolCall.plan(step, c, { load: loads.byCall.get(i), loadedAfter: loads.loaded })
    )
    const texts = plans.map((p) => (p._tag === "Answer" ? JSON.parse(p.answer.content) : undefined))
    expect(texts[0].newlyLoaded).toEqual(["weather"])
    expect(texts[1].newlyLoaded).toEqual(["maps"])
    const listed = texts[2].plugins as Array<{ name: string; loaded: boolean }>
    expect(listed.find((p) => p.name === "maps")?.loaded).toBe(true)
  })
})

describe("ToolCall.decodeArguments and countFailure: one retry", () => {
  const input = Schema.Struct({ city: Schema.String })

  it("invalid, invalid again, then blocked; a valid call resets the count", () => {
    let count = 0
    const call = (args: unknown) => {
      const r = ToolCall.decodeArguments("get_weather", input, args, count)
      count = ToolCall.countFailure(count, Either.isLeft(r) ? r.left.outcome : "ok")
      return Either.isLeft(r) ? r.left.outcome : "ok"
    }
    expect([call({}), call({ city: 1 }), call({ city: "Rome" })]).toEqual([
      "invalid_input",
      "invalid_input_final",
      "blocked_after_invalid_input"
    ])
    count = 0
    expect([call({}), call({ city: "Rome" }), call({}), call({})]).toEqual([
      "invalid_input",
      "ok",
      "invalid_input",
      "invalid_input_final"
    ])
  })
})

describe("ToolCall.result", () => {
  it("keeps a ToolOutput's blocks and error flag; anything else is text", () => {
    const out = ToolOutput.text("boom", true)
    expect(ToolCall.result(out)).toEqual({ text: "boom", outcome: "tool_error", output: out })
    expect(ToolCall.result({ a: 1 })).toEqual({ text: '{"a":1}', outcome: "ok" })
    expect(ToolCall.result(undefined)).toEqual({ text: "", outcome: "ok" })
  })
})

describe("ToolCall.execute", () => {
  const input = Schema.Struct({ city: Schema.String })
  const context = makeRuntimeContext({
    state: { messages: [], loadedPlugins: [] } as never,
    sessionId: "s",
    did: "d"
  })

  it("runs the handler with decoded input; a throw is an answer, never a rejection", async () => {
    const ok = await ToolCall.execute("w", input, (a) => ({ at: a.city }), { city: "Rome" }, 0, context)
    expect(ok).toEqual({ answer: { content: '{"at":"Rome"}', outcome: "ok" }, output: undefined })
    const thrown = await ToolCall.execute(
      "w",
      input,
      () => {
        throw new Error("down")
      },
      { city: "Rome" },
      0,
      context
    )
    expect(thrown.answer).toEqual({ content: "Tool 'w' failed: down", outcome: "handler_error" })
    let ran = false
    const invalid = await ToolCall.execute("w", input, () => (ran = true), { town: "Rome" }, 0, context)
    expect([invalid.answer.outcome, ran]).toEqual(["invalid_input", false])
  })
})
