/**
 * A user who has not connected an account (core's `Connect`, docs/oauth.md#using-it-from-code), on the
 * AI SDK door: the turn's `pending` makes `list_capabilities` list the plugin with `needsConnect`
 * and its link, and `load_capability` refuse it with the link, so the model can hand it to the
 * user; its tools are never offered. Once the user has connected (nothing pending), it loads.
 */
import { createPlugboard, type ToolEndEvent } from "@plugboard/ai-sdk"
import { Offer } from "@plugboard/core"
import { generateText, stepCountIs } from "ai"
import { describe, expect, it } from "vitest"
import { makeExamplePlugins } from "../../../../examples/catalog/index.js"
import { scriptedModel, toolResultsSent } from "./fixtures.js"

const plugboard = await createPlugboard({ plugins: makeExamplePlugins({ now: () => new Date(0) }) })
const names = (tools: ReadonlyArray<{ name: string }>) => tools.map((t) => t.name)
const atConnect = names(Offer.offer(plugboard.catalog, []))
const URL = "https://oracle.example.com/oauth/start?ticket=for-alice"
const pending = new Map([
  ["weather", { reason: "MCP server 'weather' signs each user in with OAuth; connect first.", url: URL }]
])

const turnOf = async (pendingNow: typeof pending | undefined) => {
  const { model, sent } = scriptedModel([
    { calls: [["list_capabilities", { query: "weather in a city" }]] },
    { calls: [["load_capability", { names: ["weather"] }]] },
    { calls: [["get_current_weather", { city: "Berlin" }]] },
    { text: "Done." }
  ])
  const ended: Array<ToolEndEvent> = []
  const turn = plugboard.turn({
    user: { did: "did:key:alice" },
    ...(pendingNow === undefined ? {} : { pending: pendingNow }),
    onToolEnd: (e) => ended.push(e)
  })
  await generateText({
    model,
    system: turn.system,
    prompt: "What's the weather in Berlin?",
    tools: turn.tools,
    prepareStep: turn.prepareStep,
    repairToolCall: turn.repairToolCall,
    stopWhen: stepCountIs(6)
  })
  return { sent, ended, turn }
}

describe("needs-connect through the AI SDK adapter", () => {
  it("lists the plugin with its link, refuses its load with the link, and never offers its tools", async () => {
    const { sent, ended, turn } = await turnOf(pending)
    const [listed] = toolResultsSent(sent[1]!)
    expect(listed!.toolName).toBe("list_capabilities")
    const weather = (JSON.parse(listed!.text) as { plugins: Array<Record<string, unknown>> }).plugins.find(
      (p) => p.name === "weather"
    )
    expect(weather).toMatchObject({ loaded: false, needsConnect: { url: URL } })
    const loadAnswer = toolResultsSent(sent[2]!).at(-1)!
    expect(loadAnswer.toolName).toBe("load_capability")
    expect(loadAnswer.text).toContain("needs-connect")
    expect(loadAnswer.text).toContain(URL)
    // Nothing was loaded: every step is offered the same tools, and the weather call is refused.
    for (const request of sent) expect(names(request.tools)).toEqual(atConnect)
    expect(turn.loadedPlugins).toEqual([])
    expect(ended.map((e) => [e.toolName, e.outcome])).toEqual([
      ["list_capabilities", "meta"],
      ["load_capability", "meta_error"],
      ["get_current_weather", "refused"]
    ])
  })

  it("with nothing pending (the user connected), the same turn loads and calls it", async () => {
    const { ended, turn } = await turnOf(undefined)
    expect(turn.loadedPlugins).toEqual(["weather"])
    expect(ended.map((e) => [e.toolName, e.outcome])).toEqual([
      ["list_capabilities", "meta"],
      ["load_capability", "meta"],
      ["get_current_weather", "ok"]
    ])
  })
})
