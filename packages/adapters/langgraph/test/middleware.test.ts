/**
 * Plugin middleware around each model call: catalog order, what each hook sees, `onError`
 * propagating by default and `{ recover }` turning the error into the answer.
 */
import { AIMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, definePlugin, type Plugin, type PluginMiddleware } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { runTurn } from "../src/index.js"
import { makeCounters, testPlugins } from "./fixtures.js"
import { agentFor } from "./harness.js"

/** A silent plugin whose middleware records each hook into `log`. */
const recorder = (
  name: string,
  log: Array<string>,
  extra: Partial<PluginMiddleware> = {},
  dependsOn?: ReadonlyArray<string>
): Plugin =>
  definePlugin({
    name,
    manifest: { title: name, summary: `${name} middleware`, whenToUse: [], visibility: "silent" },
    ...(dependsOn === undefined ? {} : { dependsOn }),
    middlewares: [
      {
        beforeModel: (call) => {
          log.push(`${name}.before(${call.tools.length} tools)`)
        },
        afterModel: (result) => {
          log.push(`${name}.after(${(result.message as AIMessage).content})`)
        },
        onError: (error) => {
          log.push(`${name}.onError(${(error as Error).message})`)
          return undefined
        },
        ...extra
      }
    ]
  })

describe("plugin middleware", () => {
  it("runs beforeModel and afterModel around every model call, in catalog (dependency) order", async () => {
    const log: Array<string> = []
    // 'zeta' is registered first but depends on 'alpha': the catalog orders alpha first.
    const plugins = [recorder("zeta", log, {}, ["alpha"]), recorder("alpha", log)]
    const catalog = Catalog.unsafeMake(plugins)
    expect(catalog.entries.map((e) => e.name)).toEqual(["alpha", "zeta"])
    const model = ScriptedChatModel.script([[{ tool: "list_capabilities", args: {} }], "fine"])
    await runTurn(await agentFor({ plugins, catalog, model, saver: new MemorySaver(), sessionId: "s" }), {
      message: "hi"
    })
    expect(log).toEqual([
      "alpha.before(2 tools)",
      "zeta.before(2 tools)",
      "alpha.after()",
      "zeta.after()",
      "alpha.before(2 tools)",
      "zeta.before(2 tools)",
      "alpha.after(fine)",
      "zeta.after(fine)"
    ])
  })

  it("gives beforeModel the composed prompt and exactly the offered tools", async () => {
    const counters = makeCounters()
    const seen: Array<{ system: string; tools: Array<string> }> = []
    const spy = definePlugin({
      name: "spy",
      manifest: { title: "Spy", summary: "Watches calls.", whenToUse: [], visibility: "silent" },
      middlewares: [
        {
          beforeModel: (call) => {
            seen.push({ system: call.system, tools: call.tools.map((t) => t.name) })
          }
        }
      ]
    })
    const plugins = testPlugins(counters, [spy])
    const model = ScriptedChatModel.script(["ok"])
    await runTurn(await agentFor({ plugins, model, saver: new MemorySaver(), sessionId: "s" }), {
      message: "hi"
    })
    expect(seen[0]!.tools).toEqual(model.calls[0]!.offeredTools)
    expect(seen[0]!.system).toContain("## Available Capabilities")
    expect(seen[0]!.system).toContain("- memory: Durable memory across conversations.")
    expect(seen[0]!.system).not.toContain("weather")
    expect(String(model.calls[0]!.messages[0]!.content)).toBe(seen[0]!.system)
  })

  it("propagates a model error to the caller by default, after every onError saw it in order", async () => {
    const log: Array<string> = []
    const plugins = [recorder("alpha", log), recorder("beta", log)]
    const model = ScriptedChatModel.script([new Error("rate limited by provider")])
    const saver = new MemorySaver()
    const agent = await agentFor({ plugins, model, saver, sessionId: "s" })
    await expect(runTurn(agent, { message: "hi" })).rejects.toThrow("rate limited by provider")
    expect(log).toEqual([
      "alpha.before(2 tools)",
      "beta.before(2 tools)",
      "alpha.onError(rate limited by provider)",
      "beta.onError(rate limited by provider)"
    ])
    // The user's message is not lost: the input was checkpointed before the model failed.
    const state = await agent.getState()
    expect(state.messages.map((m) => m.content)).toEqual(["hi"])
  })

  it("turns the error into the first { recover } answer; later onError hooks and afterModel do not run", async () => {
    const log: Array<string> = []
    const plugins = [
      recorder("alpha", log),
      recorder("beta", log, {
        onError: (error) => {
          log.push(`beta.onError(${(error as Error).message})`)
          return { recover: "The assistant is busy, try again in a minute." }
        }
      }),
      recorder("gamma", log)
    ]
    const model = ScriptedChatModel.script([new Error("overloaded")])
    const turn = await runTurn(await agentFor({ plugins, model, saver: new MemorySaver(), sessionId: "s" }), {
      message: "hi"
    })
    expect(turn.answer).toBe("The assistant is busy, try again in a minute.")
    expect(log).toEqual([
      "alpha.before(2 tools)",
      "beta.before(2 tools)",
      "gamma.before(2 tools)",
      "alpha.onError(overloaded)",
      "beta.onError(overloaded)"
    ])
    expect(turn.state.messages.at(-1)!.getType()).toBe("ai")
  })

  it("passes over { recover: undefined } and { recover: null }: only an answer recovers", async () => {
    const log: Array<string> = []
    const plugins = [
      recorder("alpha", log, {
        onError: (error) => {
          log.push(`alpha.onError(${(error as Error).message})`)
          return { recover: undefined }
        }
      }),
      recorder("beta", log, {
        onError: (error) => {
          log.push(`beta.onError(${(error as Error).message})`)
          return { recover: null }
        }
      })
    ]
    const model = ScriptedChatModel.script([new Error("overloaded")])
    const agent = await agentFor({ plugins, model, saver: new MemorySaver(), sessionId: "s" })
    await expect(runTurn(agent, { message: "hi" })).rejects.toThrow("overloaded")
    expect(log.filter((l) => l.includes("onError"))).toEqual([
      "alpha.onError(overloaded)",
      "beta.onError(overloaded)"
    ])
  })

  it("accepts a message as the recovery", async () => {
    const plugins = [
      recorder("alpha", [], {
        onError: () => ({ recover: new AIMessage({ content: "fallback", id: "fixed-id" }) })
      })
    ]
    const model = ScriptedChatModel.script([new Error("boom")])
    const turn = await runTurn(await agentFor({ plugins, model, saver: new MemorySaver(), sessionId: "s" }), {
      message: "hi"
    })
    expect(turn.answer).toBe("fallback")
    expect(turn.message.id).toBe("fixed-id")
  })
})

describe("plugin middleware writing the state it owns (docs/spec/graph-state.md)", () => {
  /** A Memory-like plugin: enriches userContext before each call, records what it saw. */
  const memory = (seen: Array<unknown>): Plugin =>
    definePlugin({
      name: "memory",
      manifest: { title: "Memory", summary: "Remembers the user.", whenToUse: [], visibility: "silent" },
      middlewares: [
        {
          beforeModel: (_call, context) => {
            seen.push(context.history.userContext)
            const turns = Number((context.history.userContext as { calls?: number }).calls ?? 0)
            return { userContext: { name: "Ada", calls: turns + 1 } }
          }
        }
      ]
    })
  const entity: Plugin = definePlugin({
    name: "indexer",
    dependsOn: ["memory"],
    manifest: { title: "Indexer", summary: "Tracks the entity.", whenToUse: [], visibility: "silent" },
    middlewares: [
      {
        beforeModel: () => ({ userContext: { lang: "en" }, spaceId: "space-1" }),
        afterModel: (result) => ({ currentEntityDid: `did:ixo:${(result.message as AIMessage).content}` })
      }
    ]
  })

  it("merges the updates by the fields' reducers, checkpoints them and shows them on the next turn", async () => {
    const seen: Array<unknown> = []
    const plugins = [memory(seen), entity]
    const saver = new MemorySaver()
    const first = await runTurn(
      await agentFor({ plugins, model: ScriptedChatModel.script(["one"]), saver, sessionId: "s" }),
      { message: "hi" }
    )
    expect(first.state.userContext).toEqual({ name: "Ada", calls: 1, lang: "en" })
    expect(first.state.spaceId).toBe("space-1")
    expect(first.state.currentEntityDid).toBe("did:ixo:one")
    const second = await runTurn(
      await agentFor({ plugins, model: ScriptedChatModel.script(["two"]), saver, sessionId: "s" }),
      { message: "again" }
    )
    // The second turn's hook saw the first turn's writes, read back from the checkpoint.
    expect(seen).toEqual([{}, { name: "Ada", calls: 1, lang: "en" }])
    expect(second.state.userContext).toEqual({ name: "Ada", calls: 2, lang: "en" })
    expect(second.state.currentEntityDid).toBe("did:ixo:two")
    expect(second.state.loadedPlugins).toEqual([])
  })

  it("fails the turn with a message naming the plugin when it writes a field it does not own", async () => {
    const rogue: Plugin = definePlugin({
      name: "rogue",
      manifest: { title: "Rogue", summary: "Loads everything.", whenToUse: [], visibility: "silent" },
      middlewares: [{ afterModel: () => ({ loadedPlugins: ["everything"] }) as never }]
    })
    const agent = await agentFor({
      plugins: [rogue],
      model: ScriptedChatModel.script(["hi"]),
      saver: new MemorySaver(),
      sessionId: "s"
    })
    await expect(runTurn(agent, { message: "hi" })).rejects.toThrow(
      "Plugin 'rogue' afterModel returned a state update for 'loadedPlugins', which plugins cannot write"
    )
  })
})
