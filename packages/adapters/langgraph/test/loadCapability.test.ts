/**
 * `load_capability` through the tool node: core's `loadCapability` runs once per call (its
 * unknown names are scored once), and a call over core's cap is answered, not run.
 */
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, MetaTools } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { scoredNameCount } from "../../../core/src/internal/nameIndex.js"
import { runTurn } from "../src/index.js"
import { makeCounters, testPlugins } from "./fixtures.js"
import { agentFor } from "./harness.js"

describe("load_capability in the tool node", () => {
  it("runs core's loadCapability once per call: each unknown name is scored once", async () => {
    const plugins = testPlugins(makeCounters())
    const catalog = Catalog.unsafeMake(plugins)
    const names = ["wether", "memroy", "helpr", "weather"]
    // What one call of core's loadCapability scores for these names.
    const before = scoredNameCount()
    MetaTools.loadCapability(catalog, [], { names })
    const once = scoredNameCount() - before
    expect(once).toBeGreaterThan(0)

    const model = ScriptedChatModel.script([[{ tool: "load_capability", args: { names } }], "done"])
    const agent = await agentFor({ plugins, catalog, model, saver: new MemorySaver(), sessionId: "s-once" })
    const start = scoredNameCount()
    const turn = await runTurn(agent, { message: "load things" })
    expect(scoredNameCount() - start).toBe(once)
    expect(turn.state.loadedPlugins).toEqual(["weather"])
    const answer = JSON.parse(String(turn.state.messages[2]!.content))
    expect(answer.newlyLoaded).toEqual(["weather"])
    expect(answer.results.map((r: { status: string }) => r.status)).toEqual([
      "error",
      "error",
      "error",
      "loaded"
    ])
    expect(model.calls[1]!.offeredTools).toContain("get_current_weather")
  })

  it("answers a call over the name cap with core's error and loads nothing", async () => {
    const plugins = testPlugins(makeCounters())
    const names = [...Array.from({ length: 200 }, (_, i) => `${"n".repeat(1000)}-${i}`), "weather"]
    const model = ScriptedChatModel.script([[{ tool: "load_capability", args: { names } }], "done"])
    const agent = await agentFor({ plugins, model, saver: new MemorySaver(), sessionId: "s-cap" })
    const before = scoredNameCount()
    const turn = await runTurn(agent, { message: "load everything" })
    expect(scoredNameCount()).toBe(before)
    expect(turn.state.loadedPlugins).toEqual([])
    expect(JSON.parse(String(turn.state.messages[2]!.content))).toEqual({
      error:
        "load_capability: at most 32 plugin names per call, got 201; nothing was loaded. " +
        "Load only the plugins this request needs (list_capabilities with a query finds them)."
    })
    expect(model.calls[1]!.offeredTools).not.toContain("get_current_weather")
  })
})
