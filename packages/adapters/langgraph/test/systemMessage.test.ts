/**
 * The system message of each model call (`ModelNode.ts`): core's composed prompt for the thread's
 * loaded plugins, one object per text across calls and requests (it is only read), another for
 * another text.
 */
import { SystemMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Access, Catalog, LoadedPlugins, SystemPrompt } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { createMainAgent, runTurn } from "../src/index.js"
import { makeCounters, testPlugins, weatherPlugin } from "./fixtures.js"

const basePrompt = "You are a test assistant."

describe("the system message of a model call (issue 37)", () => {
  it("is the composed prompt of the call's loaded plugins, the same object for the same text", async () => {
    // Weather with a prompt section: loading it changes the system prompt (the section joins it).
    const counters = makeCounters()
    const guided = { ...weatherPlugin(counters), prompt: "Give temperatures in Celsius." }
    const catalog = Catalog.unsafeMake(testPlugins(counters).map((p) => (p.name === "weather" ? guided : p)))
    const models: Array<ScriptedChatModel> = []
    for (const session of ["a", "b"]) {
      const model = ScriptedChatModel.script([
        { tool: "load_capability", args: { names: ["weather"] } },
        { tool: "get_current_weather", args: { city: "Paris" } },
        "Sunny."
      ])
      models.push(model)
      const agent = await createMainAgent({
        catalog,
        model,
        checkpointer: new MemorySaver(),
        basePrompt,
        request: { did: "did:key:alice", sessionId: session }
      })
      await runTurn(agent, { message: "Weather in Paris?" })
    }
    const view = Access.view(catalog, undefined)
    const prompt = (loaded: ReadonlyArray<string>) =>
      SystemPrompt.compose({ basePrompt, catalog, loadedPlugins: LoadedPlugins.fromUnknown(loaded), view })
    const systems = models.map((m) => m.calls.map((c) => c.messages[0]!))
    expect(prompt(["weather"])).not.toBe(prompt([]))
    expect(prompt(["weather"])).toContain("Give temperatures in Celsius.")
    for (const calls of systems) {
      expect(calls).toHaveLength(3)
      for (const s of calls) expect(s).toBeInstanceOf(SystemMessage)
      expect(calls.map((s) => s.content)).toEqual([prompt([]), prompt(["weather"]), prompt(["weather"])])
      // One object per text: the same exactly when the prompts are the same.
      for (const x of calls) for (const y of calls) expect(x === y).toBe(x.content === y.content)
    }
    // The second request's calls were given the first's objects.
    expect(systems[1]).toEqual(systems[0])
    for (let i = 0; i < 3; i++) expect(systems[1]![i]).toBe(systems[0]![i])
  })

  it("another prompt's text gets its own message", async () => {
    const catalog = Catalog.unsafeMake(testPlugins(makeCounters()))
    const first = async (prompt: string) => {
      const model = ScriptedChatModel.script(["Hello."])
      const agent = await createMainAgent({
        catalog,
        model,
        checkpointer: new MemorySaver(),
        basePrompt: prompt,
        request: { did: "did:key:alice", sessionId: prompt }
      })
      await runTurn(agent, { message: "Hi" })
      return model.calls[0]!.messages[0]!
    }
    const a = await first(basePrompt)
    const b = await first("Another prompt.")
    expect(b).not.toBe(a)
    expect(String(b.content).startsWith("Another prompt.")).toBe(true)
    expect(String(a.content).startsWith(basePrompt)).toBe(true)
  })
})
