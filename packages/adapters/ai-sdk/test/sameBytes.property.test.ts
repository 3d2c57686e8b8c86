/**
 * Same rules, same bytes: for the same thread, what the AI SDK adapter sends the model at each step
 * (tool names, descriptions and JSON Schemas, in order, and the system prompt) equals what the
 * LangGraph agent binds at each model call, over random sequences of loads: known plugins, unknown
 * and silent names, repeats, always-tier plugins (docs/ai-sdk.md#same-rules-as-the-langgraph-loop).
 */
import type { BindToolsInput } from "@langchain/core/language_models/chat_models"
import { MemorySaver } from "@langchain/langgraph"
import { createPlugboard } from "@plugboard/ai-sdk"
import { definePlugin, defineTool } from "@plugboard/core"
import { createMainAgent, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { generateText, stepCountIs } from "ai"
import { Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeExamplePlugins } from "../../../../examples/catalog/index.js"
import { scriptedModel } from "./fixtures.js"

const BASE = "You are a test assistant."
// The examples' catalog, and one on-demand plugin with a prompt section: a load changes the
// system prompt too, which both adapters must then send alike.
const withPrompt = definePlugin({
  name: "unit-style",
  manifest: {
    title: "Unit style",
    summary: "Which units answers use.",
    whenToUse: ["When converting units."]
  },
  prompt: "Prefer metric units.",
  tools: [
    defineTool({
      name: "set_unit_style",
      description: "Converts a quantity.",
      input: Schema.Struct({ value: Schema.Number, from: Schema.String, to: Schema.String }),
      handler: ({ value }) => value
    })
  ]
})
const plugins = [...makeExamplePlugins({ now: () => new Date(0) }), withPrompt]
const board = await createPlugboard({ plugins })
const names = [...board.catalog.byName.keys(), "no-such-plugin"]

/** A model call's tools as the provider receives them, whichever adapter sent them. */
type Sent = { readonly system: string; readonly tools: ReadonlyArray<readonly [string, string, string]> }

/** The scripted model of `steps`, recording the definitions bound for each call. */
const recording = (steps: Parameters<typeof ScriptedChatModel.script>[0]) => {
  const model = ScriptedChatModel.script(steps)
  const bound: Array<ReadonlyArray<BindToolsInput>> = []
  const bindTools = model.bindTools.bind(model)
  model.bindTools = (tools, kwargs) => {
    bound.push(tools)
    return bindTools(tools, kwargs)
  }
  return { model, bound }
}

const viaLangGraph = async (loads: ReadonlyArray<ReadonlyArray<string>>): Promise<Array<Sent>> => {
  const steps = [...loads.map((n) => [{ tool: "load_capability", args: { names: n } }]), "done"]
  const { model, bound } = recording(steps as never)
  const agent = await createMainAgent({
    catalog: board.catalog,
    model,
    checkpointer: new MemorySaver(),
    basePrompt: BASE,
    request: { did: "did:key:same", sessionId: "same-bytes" }
  })
  await runTurn(agent, { message: "go" })
  return bound.map((tools, i) => ({
    system: String(model.calls[i]!.messages[0]!.content),
    tools: tools.map((t) => {
      const f = (t as { function: { name: string; description: string; parameters: unknown } }).function
      return [f.name, f.description, JSON.stringify(f.parameters)] as const
    })
  }))
}

const viaAiSdk = async (loads: ReadonlyArray<ReadonlyArray<string>>): Promise<Array<Sent>> => {
  const { model, sent } = scriptedModel([
    ...loads.map((n) => ({ calls: [["load_capability", { names: n }] as const] })),
    { text: "done" }
  ])
  const turn = board.turn({ system: BASE })
  await generateText({
    model,
    system: turn.system,
    prompt: "go",
    tools: turn.tools,
    prepareStep: turn.prepareStep,
    stopWhen: stepCountIs(loads.length + 2)
  })
  return sent.map((call) => ({
    system: String(call.prompt.find((m) => m.role === "system")?.content),
    tools: call.tools.map((t) => [t.name, t.description ?? "", JSON.stringify(t.inputSchema)] as const)
  }))
}

describe("the AI SDK adapter and the LangGraph agent offer the same bytes", () => {
  it("at every model call, for random sequences of loads (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }), { maxLength: 4 }),
        async (loads) => {
          const [lg, ai] = await Promise.all([viaLangGraph(loads), viaAiSdk(loads)])
          expect(ai).toHaveLength(loads.length + 1)
          expect(ai).toEqual(lg)
        }
      ),
      { numRuns: 40 }
    )
  }, 120_000)
})
