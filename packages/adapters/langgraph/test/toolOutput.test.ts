/**
 * A handler's `ToolOutput` (what an MCP server answers with): its blocks become the ToolMessage,
 * `isError` an error answer the turn goes on after, and a call's progress reports reach its
 * `tool_call` event between `isRunning` and `done`.
 */
import { ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { definePlugin, defineTool, EventSink, type RuntimeContext, ToolOutput } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { runTurn, type ToolCallEvent } from "../src/index.js"
import { agentFor } from "./harness.js"

const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

let seenContext: RuntimeContext | undefined

const media = definePlugin({
  name: "media",
  manifest: {
    title: "Media",
    summary: "Answers with blocks.",
    whenToUse: ["Tests."],
    visibility: "always"
  },
  tools: [
    defineTool({
      name: "picture",
      description: "A picture and a caption.",
      input: Schema.Struct({}),
      handler: () =>
        ToolOutput.make({
          content: [
            { type: "text", text: "A red pixel." },
            { type: "image", mimeType: "image/png", data: PIXEL }
          ],
          structured: { width: 1 }
        })
    }),
    defineTool({
      name: "refuses",
      description: "Reports its own failure.",
      input: Schema.Struct({}),
      handler: () => ToolOutput.text("No such file: a.txt", true)
    }),
    defineTool({
      name: "slow",
      description: "Reports progress.",
      input: Schema.Struct({}),
      handler: async (_input, context) => {
        seenContext = context
        context.toolCall?.progress({ progress: 1, total: 3, message: "first" })
        context.toolCall?.progress({ progress: Number.NaN } as never)
        context.toolCall?.progress({ progress: 3, total: 3 })
        return "finished"
      }
    })
  ]
})

describe("ToolOutput answers", () => {
  it("maps blocks onto the ToolMessage, isError onto an error answer, and progress onto the event", async () => {
    const sink = Effect.runSync(EventSink.makeMemory)
    const model = ScriptedChatModel.script([
      [
        { tool: "picture", args: {} },
        { tool: "refuses", args: {} },
        { tool: "slow", args: {} }
      ],
      "done"
    ])
    const agent = await agentFor({
      plugins: [media],
      model,
      saver: new MemorySaver(),
      sessionId: "s-out",
      eventSink: sink
    })
    const turn = await runTurn(agent, { message: "go" })
    expect(turn.answer).toBe("done")
    const tools = turn.state.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m))
    const byName = new Map(tools.map((m) => [m.name, m]))

    const picture = byName.get("picture")!
    expect(picture.status).toBe("success")
    expect(picture.content).toEqual([
      { type: "text", text: 'A red pixel.\n\n[image image/png, 68 bytes]\n\n{"width":1}' },
      { type: "image", mimeType: "image/png", data: PIXEL }
    ])
    const refuses = byName.get("refuses")!
    expect(refuses.status).toBe("error")
    expect(refuses.content).toBe("No such file: a.txt")
    expect((refuses.artifact as { plugboard: { outcome: string } }).plugboard.outcome).toBe("tool_error")
    expect(byName.get("slow")!.content).toBe("finished")

    const events = turn.events.filter((e): e is ToolCallEvent => e._tag === "tool_call")
    const slow = events.filter((e) => e.toolName === "slow")
    expect(slow.map((e) => [e.status, e.progress])).toEqual([
      ["isRunning", undefined],
      ["isRunning", { progress: 1, total: 3, message: "first" }],
      ["isRunning", { progress: 3, total: 3 }],
      ["done", undefined]
    ])
    expect(new Set(slow.map((e) => e.eventId)).size).toBe(1)
    // The event's output is text: an image is named, never inlined.
    expect(events.find((e) => e.toolName === "picture" && e.status === "done")!.output).toBe(
      'A red pixel.\n\n[image image/png, 68 bytes]\n\n{"width":1}'
    )
    for (const e of events) expect(Effect.runSync(Effect.either(EventSink.decode(e)))._tag).toBe("Right")
    expect(seenContext?.toolCall?.name).toBe("slow")
    // A report after the call ended is dropped: the client already saw its done.
    seenContext?.toolCall?.progress({ progress: 9 })
    expect(
      Effect.runSync(sink.events).filter((e) => e._tag === "tool_call" && e.toolName === "slow")
    ).toHaveLength(4)
  })
})
