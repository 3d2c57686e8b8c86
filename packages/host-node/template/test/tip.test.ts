/**
 * Testing a plugin without a model, a key or a network: the manifest against the runtime's rules,
 * the handler called directly, and a whole turn in which a scripted model loads the plugin and
 * calls its tool, on an in-memory checkpointer.
 */
import { Catalog, makeRuntimeContext } from "@plugboard/core"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { plugins } from "../src/index.js"
import { tip } from "../src/tip.js"

describe("the tip plugin", () => {
  it("passes the runtime's checks with no warning", () => {
    // Catalog.unsafeMake throws, listing every problem, when a manifest breaks a rule.
    const catalog = Catalog.unsafeMake(plugins)
    expect(catalog.warnings).toEqual([])
    expect(catalog.byName.get("tip")?.visibility).toBe("on-demand")
  })

  it("computes the tip and the shares", async () => {
    const ctx = makeRuntimeContext({
      state: { messages: [] } as never,
      sessionId: "s",
      did: "did:key:z6MkTest"
    })
    const result = await tip.tools[0].handler({ bill: 120, percent: 20, people: 4 }, ctx)
    expect(result).toEqual({ tip: 24, total: 144, perPerson: 36 })
  })

  it("is loaded and called within one turn", async () => {
    const model = ScriptedChatModel.script([
      { tool: "load_capability", args: { names: ["tip"] } },
      { tool: "compute_tip", args: { bill: 80, percent: 15 } },
      "A 15% tip on 80 is 12, 92 in all."
    ])
    const agent = await createMainAgent({
      catalog: Catalog.unsafeMake(plugins),
      model,
      checkpointer: new MemorySaver(),
      request: { did: "did:key:z6MkTest", sessionId: "test-thread" }
    })
    const turn = await runTurn(agent, { message: "What is a 15% tip on 80?" })

    expect(turn.answer).toBe("A 15% tip on 80 is 12, 92 in all.")
    // Offered only once loaded: the first model call did not see the tool, the second did.
    expect(model.calls[0]!.offeredTools).not.toContain("compute_tip")
    expect(model.calls[1]!.offeredTools).toContain("compute_tip")
    expect(turn.state.loadedPlugins).toEqual(["tip"])
    const result = turn.state.messages.filter((m) => m.getType() === "tool").at(-1)!
    expect(JSON.parse(String(result.content))).toEqual({ tip: 12, total: 92, perPerson: 92 })
  })
})
