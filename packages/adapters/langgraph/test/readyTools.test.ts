/**
 * The dynamic tools a step may offer (`AgentRuntime.ready`, `Runtime.ts`): the request scope is
 * asked once per set of loaded plugins in a request, a step whose thread loaded nothing since an
 * earlier one's gets that answer, and each step is offered what asking at every step offered
 * (issue 37).
 */
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, type LoadedPlugins } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { createMainAgent, makeRequestScope, type RequestScope, runTurn } from "../src/index.js"
import { makeCounters, testPlugins } from "./fixtures.js"

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }

describe("the dynamic tools of each step (issue 37)", () => {
  it("asks the scope once per set of loaded plugins; every call is offered what it was before", async () => {
    const counters = makeCounters()
    const catalog = Catalog.unsafeMake(testPlugins(counters))
    const scope = await makeRequestScope({
      catalog,
      request: { userDid: "did:key:alice", sessionId: "s1", shared: {} },
      logger: silent
    })
    const asked: Array<ReadonlyArray<string>> = []
    const answers: Array<ReadonlyArray<string>> = []
    const counting: RequestScope = {
      ...scope,
      init: async (context, loaded: LoadedPlugins.LoadedPlugins, view) => {
        asked.push([...loaded])
        const tools = await scope.init(context, loaded, view)
        answers.push(tools.map((t) => t.offered.name))
        return tools
      }
    }
    const model = ScriptedChatModel.script([
      { tool: "summarizer", args: { task: "a long text" } },
      { tool: "load_capability", args: { names: ["weather"] } },
      { tool: "get_current_weather", args: { city: "Paris" } },
      "Sunny, and summarised."
    ])
    const agent = await createMainAgent({
      catalog,
      model,
      checkpointer: new MemorySaver(),
      scope: counting,
      request: { did: "did:key:alice", sessionId: "s1" }
    })
    const result = await runTurn(agent, { message: "Summarise, then the weather in Paris?" })
    expect(result.answer).toBe("Sunny, and summarised.")
    // Four model calls and three tool steps; the loaded plugins were [] then [weather]: the
    // runtime asked once for each (the tool step's load asks once more for what it loaded).
    expect(asked).toEqual([[], ["weather"], ["weather"]])
    expect(new Set(answers.map((a) => a.join(",")))).toEqual(new Set(["summarizer"]))
    // The summarizer initialised once, the failing translator was tried once and never offered.
    expect(counters.calls["summarizer.init"]).toBe(1)
    expect(counters.calls["translator.init"]).toBe(1)
    expect(counters.calls.summarizer).toBe(1)
    for (const call of model.calls) {
      expect(call.offeredTools).toContain("summarizer")
      expect(call.offeredTools).not.toContain("translator")
    }
    expect(model.calls.map((c) => c.offeredTools.includes("get_current_weather"))).toEqual([
      false,
      false,
      true,
      true
    ])
  })
})
