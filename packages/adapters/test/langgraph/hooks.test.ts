/**
 * Per-request sub-agents (`getRequestSubAgents`), the boot cache of hooks, and the agent's
 * construction errors.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, definePlugin, type RuntimeContext } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { createMainAgent, prepareCatalog, runTurn } from "../../src/langgraph/index.js"
import { ScriptedChatModel } from "../../src/models/index.js"
import { recordingLogger } from "./fixtures.js"
import { agentFor } from "./harness.js"

describe("per-request sub-agents", () => {
  it("become tools for the request; a failed init is logged and skipped, the rest of the turn goes on", async () => {
    const inits: Array<RuntimeContext> = []
    const plugin = definePlugin({
      name: "research",
      manifest: {
        title: "Research",
        summary: "Delegated research.",
        whenToUse: ["research"],
        visibility: "on-demand"
      },
      getRequestSubAgents: (request) => [
        {
          name: "web_researcher",
          description: `Researches the web for ${request.userDid}.`,
          init: (ctx) => {
            inits.push(ctx)
          },
          run: (task, ctx) => `findings on ${task} for ${ctx.user.did}`
        },
        {
          name: "paper_reader",
          description: "Reads papers.",
          init: () => Promise.reject(new Error("no library access")),
          run: () => "never"
        }
      ]
    })
    const { lines, logger } = recordingLogger()
    const model = ScriptedChatModel.script([
      [{ tool: "web_researcher", args: { task: "too early" } }],
      [{ tool: "load_capability", args: { names: ["research"] } }],
      [
        { tool: "web_researcher", args: { task: "solar panels" } },
        { tool: "paper_reader", args: { task: "x" } }
      ],
      "Here is what I found."
    ])
    const agent = await agentFor({
      plugins: [plugin],
      model,
      saver: new MemorySaver(),
      sessionId: "s",
      logger
    })
    const turn = await runTurn(agent, { message: "research solar panels" })
    expect(turn.answer).toBe("Here is what I found.")
    // An on-demand plugin's sub-agent is offered only once the plugin is loaded.
    expect(model.calls[0]!.offeredTools).not.toContain("web_researcher")
    expect(model.calls[2]!.offeredTools).toContain("web_researcher")
    expect(model.calls[2]!.offeredTools).not.toContain("paper_reader")
    const tools = turn.state.messages.filter((m) => m.getType() === "tool").map((m) => String(m.content))
    expect(tools[0]).toContain("no tool named 'web_researcher'")
    expect(tools[2]).toBe("findings on solar panels for did:key:alice")
    expect(tools[3]).toContain("paper_reader")
    expect(inits).toHaveLength(1)
    expect(inits[0]!.session.id).toBe("s")
    expect(lines.find((l) => l.message.includes("sub-agent init failed"))?.fields).toMatchObject({
      plugin: "research",
      subAgent: "paper_reader",
      error: "no library access"
    })
  })
})

describe("boot cache and construction", () => {
  it("reads boot-time hooks once per catalog, however many requests", async () => {
    let reads = 0
    const plugin = definePlugin({
      name: "counted",
      manifest: { title: "Counted", summary: "Counts reads.", whenToUse: ["x"], visibility: "always" },
      getMiddlewares: () => {
        reads++
        return []
      },
      getSubAgents: () => {
        reads++
        return []
      }
    })
    const catalog = Catalog.unsafeMake([plugin])
    prepareCatalog(catalog)
    expect(reads).toBe(2)
    for (let i = 0; i < 3; i++) {
      const agent = await agentFor({
        plugins: [plugin],
        catalog,
        model: ScriptedChatModel.script(["ok"]),
        saver: new MemorySaver(),
        sessionId: `s${i}`
      })
      await runTurn(agent, { message: "hi" })
    }
    expect(reads).toBe(2)
  })

  it("refuses a chat model that cannot bind tools, naming it", async () => {
    class NoTools extends BaseChatModel {
      _llmType() {
        return "no-tools"
      }
      async _generate(): Promise<ChatResult> {
        return { generations: [{ text: "", message: new AIMessage("") }] }
      }
    }
    await expect(
      createMainAgent({
        catalog: Catalog.unsafeMake([]),
        model: new NoTools({}),
        checkpointer: new MemorySaver(),
        request: { did: "did:key:a", sessionId: "s" }
      })
    ).rejects.toThrow(/'no-tools' cannot bind tools/)
  })
})
