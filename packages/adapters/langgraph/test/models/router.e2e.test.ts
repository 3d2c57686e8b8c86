/**
 * The router model driving the real agent loop (`@plugboard/langgraph`) with an
 * in-memory checkpointer: the offline demo's path, end to end.
 */
import { AIMessage, ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, Offer } from "@plugboard/core"
import { createMainAgent, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { beforeEach, describe, expect, it } from "vitest"
import { routerPlugins, weatherCalls } from "../../../models/test/fixtures.js"

const catalog = Catalog.unsafeMake(routerPlugins)

const agentFor = (model: ScriptedChatModel, saver: MemorySaver, sessionId: string) =>
  createMainAgent({
    catalog,
    model,
    checkpointer: saver,
    basePrompt: "You are a test assistant.",
    request: { did: "did:key:alice", sessionId }
  })

describe("router model through the agent loop", () => {
  beforeEach(() => {
    weatherCalls.length = 0
  })

  it("What's the weather in Berlin? → load_capability → get_current_weather {city: Berlin} → answer", async () => {
    const saver = new MemorySaver()
    const model = ScriptedChatModel.router({ catalog })
    const turn = await runTurn(await agentFor(model, saver, "s1"), {
      message: "What's the weather in Berlin?"
    })

    expect(model.calls).toHaveLength(3)
    const [first, second] = model.calls
    expect(first!.offeredTools).toEqual(Offer.offer(catalog, []).map((t) => t.name))
    expect(first!.message?.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["load_capability", { names: ["weather"] }]
    ])
    expect(second!.offeredTools).toEqual(Offer.offer(catalog, ["weather"]).map((t) => t.name))
    expect(second!.message?.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["get_current_weather", { city: "Berlin" }]
    ])
    expect(weatherCalls).toEqual([{ tool: "get_current_weather", city: "Berlin" }])
    expect(turn.answer).toBe(
      "Here is what Weather (get_current_weather) returned: city: Berlin, temperatureC: 18.5, condition: clear."
    )
    expect(turn.state.loadedPlugins).toEqual(["weather"])
    // Usage is reported on every AI message of the turn, for credits.
    const ai = turn.state.messages.filter((m): m is AIMessage => AIMessage.isInstance(m))
    expect(ai).toHaveLength(3)
    for (const m of ai) expect(m.usage_metadata?.total_tokens).toBeGreaterThan(0)
    expect(turn.state.messages.filter((m) => ToolMessage.isInstance(m))).toHaveLength(2)

    // Next turn of the same thread: weather is still loaded, so the tool is called at once.
    const again = await runTurn(await agentFor(model, saver, "s1"), {
      message: "What's the weather in Oslo?"
    })
    expect(model.calls[3]!.message?.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["get_current_weather", { city: "Oslo" }]
    ])
    expect(again.answer).toMatch(/city: Oslo/)

    // A new thread starts empty and loads again.
    const fresh = ScriptedChatModel.router({ catalog })
    await runTurn(await agentFor(fresh, saver, "s2"), { message: "What's the weather in Rome?" })
    expect(fresh.calls[0]!.message?.tool_calls?.[0]?.name).toBe("load_capability")
  })

  it("answers plainly, with no tool call, when nothing is relevant", async () => {
    const model = ScriptedChatModel.router({ catalog })
    const turn = await runTurn(await agentFor(model, new MemorySaver(), "s3"), {
      message: "Explain the offside rule in football"
    })
    expect(model.calls).toHaveLength(1)
    expect(turn.answer).toMatch(/no capability that fits/)
    expect(weatherCalls).toEqual([])
  })
})
