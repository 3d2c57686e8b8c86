/** Client-side tools in the agent loop: offered last, dispatched to the host, stored in the state. */
import { isAIMessage, ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, ClientTools, type Plugin } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { type ClientToolCall, createMainAgent, runTurn } from "../src/index.js"

const notes: Plugin = {
  name: "notes",
  manifest: {
    title: "Notes",
    summary: "Keeps notes.",
    whenToUse: ["When asked to note something."],
    visibility: "always"
  },
  tools: [
    {
      name: "add_note",
      description: "Adds a note.",
      input: Schema.Struct({ text: Schema.String }),
      handler: () => "noted"
    }
  ]
}
const catalog = Either.getOrThrow(Catalog.make([notes]))

const clientTools = Either.getOrThrow(
  ClientTools.validate(
    catalog,
    {
      tools: [
        { name: "read_selection", description: "Reads the page's selection.", schema: { type: "object" } }
      ],
      agActions: [{ name: "show_toast", description: "Shows a toast.", parameters: { type: "object" } }]
    },
    { checkSchema: () => undefined }
  )
)

const agent = (
  model: ScriptedChatModel,
  saver: MemorySaver,
  call?: (c: ClientToolCall) => Promise<unknown>
) =>
  createMainAgent({
    catalog,
    model,
    checkpointer: saver,
    request: { did: "did:key:zUser", sessionId: "s1", requestId: "r1" },
    ...(call === undefined ? {} : { clientTools: { tools: clientTools, call } })
  })

const toolMessages = (messages: ReadonlyArray<unknown>) =>
  messages.filter((m) => ToolMessage.isInstance(m)) as Array<ToolMessage>

describe("client-side tools", () => {
  it("are offered after the server's tools, run through the host, and stored in the thread", async () => {
    const model = ScriptedChatModel.script([
      [
        { tool: "read_selection", args: {} },
        { tool: "show_toast", args: { text: "hi" } }
      ],
      "Done."
    ])
    const calls: Array<ClientToolCall> = []
    const saver = new MemorySaver()
    const a = await agent(model, saver, async (c) => {
      calls.push(c)
      return c.kind === "browser" ? { selection: "hello" } : "shown"
    })
    const result = await runTurn(a, {
      message: "Read my selection",
      browserTools: clientTools.filter((t) => t.kind === "browser").map(ClientTools.toDto),
      agActions: clientTools.filter((t) => t.kind === "action").map(ClientTools.toDto)
    })
    expect(model.calls[0]!.offeredTools.slice(-2)).toEqual(["read_selection", "show_toast"])
    expect(model.calls[0]!.offeredTools).toContain("add_note")
    const ai = result.state.messages.find(isAIMessage)!
    expect(calls.map((c) => [c.kind, c.name, c.callId])).toEqual([
      ["browser", "read_selection", ai.tool_calls![0]!.id],
      ["action", "show_toast", ai.tool_calls![1]!.id]
    ])
    expect(calls[1]!.args).toEqual({ text: "hi" })
    expect(toolMessages(result.state.messages).map((m) => [m.name, m.content, m.status])).toEqual([
      ["read_selection", '{"selection":"hello"}', "success"],
      ["show_toast", "shown", "success"]
    ])
    expect(
      result.events.filter((e) => e._tag === "tool_call").map((e) => e._tag === "tool_call" && e.toolName)
    ).toEqual(["read_selection", "show_toast", "read_selection", "show_toast"])
    const state = await a.getState()
    expect(state.browserTools?.map((t) => t.name)).toEqual(["read_selection"])
    expect(state.agActions?.map((t) => t.name)).toEqual(["show_toast"])
  })

  it("a call the host rejects (timeout, no client) is a failed ToolMessage the model sees; the turn goes on", async () => {
    const model = ScriptedChatModel.script([{ tool: "read_selection", args: {} }, "Could not read it."])
    const a = await agent(model, new MemorySaver(), () =>
      Promise.reject(new Error("the client did not answer"))
    )
    const result = await runTurn(a, { message: "Read" })
    expect(result.answer).toBe("Could not read it.")
    const [m] = toolMessages(result.state.messages)
    expect(m!.status).toBe("error")
    expect(String(m!.content)).toMatch(/read_selection.*the client did not answer/)
  })

  it("a request without client tools neither offers nor runs them", async () => {
    const model = ScriptedChatModel.script([{ tool: "read_selection", args: {} }, "ok"])
    const a = await agent(model, new MemorySaver())
    const result = await runTurn(a, { message: "Read" })
    expect(model.calls[0]!.offeredTools).not.toContain("read_selection")
    expect(String(toolMessages(result.state.messages)[0]!.content)).toMatch(/no tool named 'read_selection'/)
  })
})
