/**
 * The offer of a door whose client keeps the tool list (the MCP gateway) and the third meta-tool,
 * `call_tool`: the list only grows, in core's order; `call_tool` runs exactly what a direct call
 * would run, refused by the same gate; a load there carries the schemas its model needs.
 */
import {
  CallTool,
  LoadedPlugins,
  MetaTools,
  makeRuntimeContext,
  Offer,
  ToolCall,
  ToolOutput
} from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { smallCatalog } from "./fixtures.js"

const catalog = smallCatalog()
const names = (tools: ReadonlyArray<Offer.OfferedTool>) => tools.map((t) => t.name)
const pluginNames = [...catalog.entries.map((e) => e.name), "nope"]
const toolNames = [...catalog.toolsByName.keys()]

describe("CallTool.offer", () => {
  it("is core's offer with call_tool third: meta-tools, always-tier by plugin, loaded in load order", () => {
    expect(names(CallTool.offer(catalog, []))).toEqual([
      "list_capabilities",
      "load_capability",
      "call_tool",
      "remember",
      "add_note"
    ])
    const offered = CallTool.offer(catalog, ["maps", "weather"])
    expect(names(offered)).toEqual([
      "list_capabilities",
      "load_capability",
      "call_tool",
      ...names(Offer.offer(catalog, ["maps", "weather"])).slice(2)
    ])
    expect(offered[2]).toBe(CallTool.definition)
    expect(CallTool.offersCallTool(offered)).toBe(true)
    expect(CallTool.offersCallTool(Offer.offer(catalog, []))).toBe(false)
  })

  it("only grows, appending in core's order and never reordering, over any sequence of loads (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.constantFrom(...pluginNames), { maxLength: 4 }), { maxLength: 8 }),
        (loads) => {
          let loaded = LoadedPlugins.empty
          let listed = CallTool.offer(catalog, loaded)
          for (const load of loads) {
            loaded = LoadedPlugins.add(loaded, load)
            const next = CallTool.offer(catalog, loaded)
            // The list a client already holds is a prefix of the next one, tool for tool.
            expect(names(next.slice(0, listed.length))).toEqual(names(listed))
            expect(next.length).toBeGreaterThanOrEqual(listed.length)
            // And the whole list is core's offer with call_tool after the two meta-tools.
            const core = names(Offer.offer(catalog, loaded))
            expect(names(next)).toEqual([...core.slice(0, 2), MetaTools.CALL_TOOL, ...core.slice(2)])
            listed = next
          }
        }
      )
    )
  })
})

describe("call_tool through ToolCall.plan", () => {
  const step = (loaded: LoadedPlugins.LoadedPlugins) => ({
    catalog,
    offered: CallTool.offer(catalog, loaded),
    loaded
  })

  it("runs an offered tool with the arguments it passes on", () => {
    const decided = ToolCall.plan(step(["weather"]), {
      name: "call_tool",
      args: { name: "get_weather", arguments: { q: "Berlin" } }
    })
    expect(decided).toMatchObject({
      _tag: "Run",
      tool: { name: "get_weather", plugin: "weather" },
      args: { q: "Berlin" }
    })
  })

  it("refuses a tool of a plugin not loaded with core's message, as a direct call is", () => {
    const decided = ToolCall.plan(step([]), { name: "call_tool", args: { name: "get_weather" } })
    expect(decided).toMatchObject({
      _tag: "Answer",
      plugin: "weather",
      answer: { outcome: "refused", content: Offer.notLoadedMessage("get_weather", "weather") }
    })
  })

  it("runs exactly what a direct call would run, whatever is loaded and called (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...pluginNames), { maxLength: 5 }),
        fc.oneof(fc.constantFrom(...toolNames), fc.string({ maxLength: 20 })),
        (load, name) => {
          const s = step(LoadedPlugins.fromUnknown(load))
          const direct = ToolCall.plan(s, { name, args: {} })
          const through = ToolCall.plan(s, { name: "call_tool", args: { name, arguments: {} } })
          if (direct._tag === "Run") {
            expect(through).toMatchObject({ _tag: "Run", tool: direct.tool })
          } else if (
            name.trim() !== "" &&
            name.trim() === name &&
            !MetaTools.META_TOOL_NAMES.includes(name)
          ) {
            expect(through._tag).toBe("Answer")
            expect(through._tag === "Answer" && through.answer.content).toBe(
              direct._tag === "Answer" && direct.answer.content
            )
          } else {
            expect(through._tag).toBe("Answer")
          }
        }
      )
    )
  })

  it("answers bad input with an error and runs nothing; never runs a meta-tool or itself", () => {
    const s = step(["weather"])
    const answer = (args: unknown) => {
      const decided = ToolCall.plan(s, { name: "call_tool", args })
      expect(decided._tag).toBe("Answer")
      return decided._tag === "Answer" ? decided.answer : undefined
    }
    expect(answer({})).toEqual({
      content: JSON.stringify({
        error: `call_tool: 'name' must be the name of a tool (a string). Call it as {"name": "<tool>", "arguments": {...}}.`
      }),
      outcome: "meta_error"
    })
    expect(answer({ name: "get_weather", arguments: [1] })?.content).toContain(
      "'arguments' must be an object, got an array"
    )
    expect(answer("not json")?.content).toContain("call_tool expects an object of arguments, got string")
    for (const meta of MetaTools.META_TOOL_NAMES) {
      expect(answer({ name: meta })?.content).toContain(`call_tool runs plugin tools; call ${meta} directly.`)
    }
    // Arguments given as a JSON string, as models sometimes send them, are read.
    expect(
      ToolCall.plan(s, { name: "call_tool", args: JSON.stringify({ name: "get_weather", arguments: "{}" }) })
    ).toMatchObject({ _tag: "Run", args: {} })
  })

  it("a load in a door with call_tool carries each tool's input schema, its prompt, and how to call it", () => {
    const decided = ToolCall.plan(step([]), { name: "load_capability", args: { names: ["maps", "nope"] } })
    expect(decided._tag).toBe("Answer")
    const answer = decided._tag === "Answer" ? decided.answer : undefined
    expect(answer?.outcome).toBe("meta_error")
    const json = JSON.parse(answer!.content)
    expect(Object.keys(json)).toEqual(["newlyLoaded", "results", "note"])
    expect(json.results[0]).toMatchObject({
      name: "maps",
      status: "loaded",
      tools: [{ name: "route", description: "[Maps] Plan a route by car.", inputSchema: {} }],
      prompt: "Prefer walking."
    })
    expect(json.note).toContain("call it through call_tool")
    // Without call_tool in the offer, the answer is core's usual one.
    const plain = ToolCall.plan(
      { catalog, offered: Offer.offer(catalog, []), loaded: [] },
      { name: "load_capability", args: { names: ["maps"] } }
    )
    expect(plain._tag === "Answer" && JSON.parse(plain.answer.content).note).toBeUndefined()
  })
})

describe("ToolCall in a door without turns", () => {
  const input = Schema.Struct({ city: Schema.String })

  it("answers every invalid call with the error and never blocks the tool", () => {
    for (let i = 0; i < 4; i++) {
      const decoded = ToolCall.decodeArguments("get_weather", input, {}, undefined)
      expect(Either.isLeft(decoded) && decoded.left.outcome).toBe("invalid_input")
      expect(Either.isLeft(decoded) && decoded.left.content).toMatch(
        /^Invalid arguments for tool 'get_weather':\n[\s\S]*\nFix the arguments and call 'get_weather' again\.$/
      )
    }
    expect(ToolCall.decodeArguments("get_weather", input, { city: "Rome" }, undefined)).toEqual(
      Either.right({ city: "Rome" })
    )
  })

  it("execute runs the handler and keeps its blocks, resource links included", async () => {
    const output = ToolOutput.make({
      content: [
        { type: "text", text: "see", annotations: { priority: 1 } },
        { type: "resource_link", uri: "file:///a.txt", name: "a", mimeType: "text/plain" }
      ],
      structured: { n: 1 }
    })
    const context = makeRuntimeContext({
      state: { messages: [], config: { did: "did:key:x" }, client: "portal", loadedPlugins: [] } as never,
      sessionId: "s",
      did: "did:key:x"
    })
    const executed = await ToolCall.execute("t", input, () => output, { city: "x" }, undefined, context)
    expect(executed.output).toBe(output)
    expect(executed.answer).toEqual({
      content: 'see\n\n[resource link "a": file:///a.txt (text/plain)]\n\n{"n":1}',
      outcome: "ok"
    })
  })
})

describe("CallTool.listedSchema", () => {
  it("keeps an object schema as it is, and puts type object at the root of any other", () => {
    const object = { type: "object", properties: {} }
    expect(CallTool.listedSchema(object)).toBe(object)
    const union = { anyOf: [{ type: "object" }, { type: "array" }] }
    expect(CallTool.listedSchema(union)).toEqual({ anyOf: union.anyOf, type: "object" })
    expect(CallTool.listedSchema(union)).toBe(CallTool.listedSchema(union))
  })
})
