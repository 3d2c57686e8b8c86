/**
 * Per-request sub-agents (`getRequestSubAgents`), the boot cache of hooks, and the agent's
 * construction errors.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, definePlugin, defineTool, type RuntimeContext } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { createMainAgent, prepareCatalog, runTurn } from "../src/index.js"
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
    // Called before its plugin is loaded: the model is told which plugin to load, as for a
    // catalog tool (core's gate knows the request's tools).
    expect(tools[0]).toContain("it belongs to plugin 'research', which is not loaded")
    expect(tools[0]).toContain(`load_capability with {"names": ["research"]}`)
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

describe("sub-agent init runs only for sub-agents the thread can be offered", () => {
  it("never for a plugin not loaded or silent; once per request for an always plugin; at the load for an on-demand one", async () => {
    const inits: Array<string> = []
    const subAgentOf = (plugin: string, name: string) => ({
      name,
      description: `The ${name} of ${plugin}.`,
      init: () => {
        inits.push(name)
      },
      run: (task: string) => `${name} did ${task}`
    })
    const plugin = (name: string, visibility: "always" | "on-demand" | "silent", sub: string) =>
      definePlugin({
        name,
        manifest: { title: name, summary: `The ${name} plugin.`, whenToUse: [name], visibility },
        getSubAgents: () => [subAgentOf(name, sub)]
      })
    const plugins = [
      plugin("planner", "always", "plan_agent"),
      plugin("research", "on-demand", "research_agent"),
      plugin("archive", "on-demand", "archive_agent"),
      plugin("audit", "silent", "audit_agent")
    ]
    const saver = new MemorySaver()
    // Turn 1: three model calls, nothing loaded: only the always plugin's sub-agent initialises, once.
    const first = ScriptedChatModel.script([
      [{ tool: "plan_agent", args: { task: "a" } }],
      [{ tool: "plan_agent", args: { task: "b" } }],
      "ok"
    ])
    await runTurn(await agentFor({ plugins, model: first, saver, sessionId: "s" }), { message: "plan" })
    expect(inits).toEqual(["plan_agent"])
    // Turn 2 (a new request): research is loaded mid-turn; its sub-agent initialises at the load,
    // is listed in the load's answer and offered on the next call; archive and audit never.
    inits.length = 0
    const second = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["research"] } }],
      [{ tool: "research_agent", args: { task: "c" } }],
      "done"
    ])
    const turn = await runTurn(await agentFor({ plugins, model: second, saver, sessionId: "s" }), {
      message: "research"
    })
    expect(inits).toEqual(["plan_agent", "research_agent"])
    expect(second.calls[0]!.offeredTools).not.toContain("research_agent")
    expect(second.calls[1]!.offeredTools).toContain("research_agent")
    const answers = turn.state.messages.filter((m) => m.getType() === "tool").map((m) => String(m.content))
    expect(JSON.parse(answers.at(-2)!).results[0].tools.map((t: { name: string }) => t.name)).toEqual([
      "research_agent"
    ])
    expect(answers.at(-1)).toBe("research_agent did c")
  })
})

describe("a load whose sub-agent fails to initialise", () => {
  it("leaves that sub-agent out of the load's answer and of the next offer; the others are listed", async () => {
    const { lines, logger } = recordingLogger()
    const research = definePlugin({
      name: "research",
      manifest: { title: "Research", summary: "Research helpers.", whenToUse: ["research"] },
      getSubAgents: () => [
        {
          name: "reader_agent",
          description: "Reads.",
          init: () => {},
          run: (task: string) => `read ${task}`
        },
        {
          name: "crawler_agent",
          description: "Crawls.",
          init: async () => {
            throw new Error("crawler offline")
          },
          run: () => "never"
        }
      ]
    })
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["research"] } }],
      "ok"
    ])
    const turn = await runTurn(
      await agentFor({ plugins: [research], model, saver: new MemorySaver(), sessionId: "s", logger }),
      { message: "research" }
    )
    const answer = JSON.parse(String(turn.state.messages.find((m) => m.getType() === "tool")!.content))
    expect(answer.newlyLoaded).toEqual(["research"])
    expect(answer.results[0].tools.map((t: { name: string }) => t.name)).toEqual(["reader_agent"])
    expect(model.calls[1]!.offeredTools).toContain("reader_agent")
    expect(model.calls[1]!.offeredTools).not.toContain("crawler_agent")
    expect(lines.find((l) => l.message.includes("sub-agent init failed"))?.fields).toMatchObject({
      subAgent: "crawler_agent",
      error: "crawler offline"
    })
  })
})

describe("per-request tools core rejects", () => {
  it("are logged and skipped; the plugin's other tools and the turn go on", async () => {
    const ok = defineTool({
      name: "mcp_search",
      description: "Search.",
      input: Schema.Struct({ q: Schema.String }),
      handler: (input) => `found ${input.q}`
    })
    const mcp = definePlugin({
      name: "mcp",
      manifest: { title: "MCP", summary: "Remote tools.", whenToUse: ["remote"], visibility: "always" },
      tools: [
        defineTool({
          name: "mcp_status",
          description: "Status.",
          input: Schema.Struct({}),
          handler: () => "up"
        })
      ],
      getRequestTools: () => [
        ok,
        { ...ok, name: "mcp_status" },
        { ...ok, name: "bad name" },
        { ...ok, name: "no_schema", input: undefined as never }
      ]
    })
    const odd = definePlugin({
      name: "odd",
      manifest: { title: "Odd", summary: "Returns junk.", whenToUse: ["never"] },
      getRequestSubAgents: () => "not a list" as never
    })
    const { lines, logger } = recordingLogger()
    const model = ScriptedChatModel.script([[{ tool: "mcp_search", args: { q: "x" } }], "done"])
    const agent = await agentFor({
      plugins: [mcp, odd],
      model,
      saver: new MemorySaver(),
      sessionId: "s",
      logger
    })
    const turn = await runTurn(agent, { message: "search" })
    expect(turn.answer).toBe("done")
    expect(model.calls[0]!.offeredTools.slice(2)).toEqual(["mcp_status", "mcp_search"])
    const tool = turn.state.messages.find((m) => m.getType() === "tool")!
    expect(tool.content).toBe("found x")
    expect(
      lines.filter((l) => l.message.includes("per-request tool rejected")).map((l) => l.fields?.error)
    ).toEqual([
      "Plugin 'mcp' per-request tool 'mcp_status' takes a name plugin 'mcp' registers at boot (tool names are one flat namespace).",
      "Plugin 'mcp' per-request tool has an invalid name 'bad name' (1-64 letters, digits, '_' or '-').",
      "Plugin 'mcp' per-request tool 'no_schema' needs an input schema (or a jsonSchema)."
    ])
    expect(lines.find((l) => l.message.includes("per-request hook failed"))?.fields).toMatchObject({
      plugin: "odd",
      error: "getRequestSubAgents() must return an array"
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
