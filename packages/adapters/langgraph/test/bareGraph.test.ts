/**
 * The agent benchmark compares plugboard's agent with `bareGraph`: this checks the comparison is
 * like for like — the same script takes the same steps, binds the same tools on every model
 * call and leaves the same conversation.
 */
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, LoadedPlugins, Offer } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { createMainAgent, runTurn } from "../src/index.js"
import { bareGraph } from "./bareGraph.js"
import { creditsPlugin, makeCounters, memoryPlugin, weatherPlugin } from "./fixtures.js"

describe("bareGraph (the benchmark's baseline)", () => {
  it("takes the same steps as the agent and binds the same tools on each model call", async () => {
    // Catalog tools only (as in the benchmark): no sub-agents, which are per-request tools.
    const c = makeCounters()
    const catalog = Catalog.unsafeMake([weatherPlugin(c), memoryPlugin(c), creditsPlugin(c)])
    const script = () =>
      ScriptedChatModel.script([
        { tool: "load_capability", args: { names: ["weather"] } },
        { tool: "get_current_weather", args: { city: "Berlin" } },
        "Sunny."
      ])
    const definitions = (loaded: ReadonlyArray<string>) =>
      Offer.offer(catalog, LoadedPlugins.union([], loaded)).map((t) => ({
        type: "function" as const,
        function: { name: t.name, description: t.description, parameters: t.parameters }
      }))

    const agentModel = script()
    const agent = await createMainAgent({
      catalog,
      model: agentModel,
      checkpointer: new MemorySaver(),
      request: { did: "did:key:a", sessionId: "s" }
    })
    const turn = await runTurn(agent, { message: "Weather in Berlin?" })

    const bareModel = script()
    const graph = bareGraph(
      bareModel,
      { before: definitions([]), after: definitions(["weather"]) },
      new MemorySaver()
    )
    const out = await graph.invoke(
      { messages: [{ role: "user", content: "Weather in Berlin?" }] },
      { configurable: { thread_id: "s" }, durability: "exit" }
    )

    expect(out.messages.map((m) => m.getType())).toEqual(turn.state.messages.map((m) => m.getType()))
    expect(bareModel.calls.map((c) => c.offeredTools)).toEqual(agentModel.calls.map((c) => c.offeredTools))
    expect(String(out.messages.at(-1)!.content)).toBe(turn.answer)
  })
})
