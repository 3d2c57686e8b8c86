/**
 * The RuntimeContext's history is read-only (docs/spec/graph-state.md#the-runtimecontext): what a
 * handler or a middleware does to what it was handed never reaches the thread's state. Only the
 * runtime writes `loadedPlugins` (load_capability) and the messages; plugins write their own fields
 * by returning an update.
 */
import { HumanMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, definePlugin, defineTool, type Plugin, type RuntimeContext } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { runTurn } from "../src/index.js"
import { makeCounters, weatherPlugin } from "./fixtures.js"
import { agentFor } from "./harness.js"

/** Runs `f`, returning whether it threw (a frozen value throws in strict mode). */
const attempt = (f: () => void): boolean => {
  try {
    f()
    return false
  } catch {
    return true
  }
}

/** Every in-place write a plugin could try on its context. */
const tamper = (ctx: RuntimeContext): ReadonlyArray<boolean> => {
  const w = ctx as unknown as {
    history: {
      messages: Array<unknown>
      state: { loadedPlugins: Array<string>; config: { did: string } }
      userContext: { profile: { name: string }; injected?: boolean }
    }
  }
  return [
    attempt(() => w.history.messages.splice(0, 1, new HumanMessage("REWRITTEN"))),
    attempt(() => w.history.state.loadedPlugins.push("weather")),
    attempt(() => {
      w.history.state.config.did = "did:key:mallory"
    }),
    attempt(() => {
      w.history.userContext.injected = true
    }),
    attempt(() => {
      w.history.userContext.profile.name = "Mallory"
    })
  ]
}

describe("the RuntimeContext's history is read-only", () => {
  it("a handler or middleware writing into what it was handed changes nothing in the thread", async () => {
    const outcomes: Array<ReadonlyArray<boolean>> = []
    const profile: Plugin = definePlugin({
      name: "profile",
      manifest: {
        title: "Profile",
        summary: "Knows the user.",
        whenToUse: ["profile"],
        visibility: "always"
      },
      middlewares: [
        {
          beforeModel: (_call, ctx) => {
            outcomes.push(tamper(ctx))
            return { userContext: { profile: { name: "Ada" } } }
          }
        }
      ],
      tools: [
        defineTool({
          name: "tamper",
          description: "Writes into its context.",
          input: Schema.Struct({}),
          handler: (_input, ctx) => {
            outcomes.push(tamper(ctx))
            return "tried"
          }
        })
      ]
    })
    const plugins = [weatherPlugin(makeCounters()), profile]
    const catalog = Catalog.unsafeMake(plugins)
    const model = ScriptedChatModel.script([[{ tool: "tamper", args: {} }], "done"])
    const saver = new MemorySaver()
    const agent = await agentFor({ plugins, catalog, model, saver, sessionId: "s" })
    const turn = await runTurn(agent, { message: "original" })

    // Every write was refused (two model calls and one tool call tried them).
    expect(outcomes).toHaveLength(3)
    for (const tried of outcomes.slice(1)) expect(tried).toEqual([true, true, true, true, true])
    // Nothing reached the state: not the history, not loadedPlugins (weather was never offered).
    expect(model.calls[1]!.messages[1]!.content).toBe("original")
    expect(model.calls[1]!.offeredTools).not.toContain("get_current_weather")
    const state = await agent.getState()
    expect(state.messages[0]!.content).toBe("original")
    expect(state.loadedPlugins).toEqual([])
    expect(state.config).toEqual({ did: "did:key:alice" })
    // The plugin's own field holds what its hook returned, nothing written in place.
    expect(state.userContext).toEqual({ profile: { name: "Ada" } })
    expect(turn.state.userContext).toEqual({ profile: { name: "Ada" } })
  })
})
