/**
 * Approvals through the AI SDK's own mechanism (issue 40, docs/ai-sdk.md#approvals): a tool that
 * core's rule says waits (`requiresApproval`, or the operator's `approvalTools`) is given to the
 * SDK with `needsApproval`, so `generateText` stops with a `tool-approval-request` instead of
 * running it; the app's `tool-approval-response` then runs it once (approved) or gives the model
 * the SDK's denial (the tool never runs). On AI SDK 7 and 6.
 */
import { createPlugboard } from "@plugboard/ai-sdk"
import { definePlugin, defineTool } from "@plugboard/core"
import { generateText, type ModelMessage, stepCountIs } from "ai"
import * as ai6 from "ai6"
import { MockLanguageModelV3 as Mock6 } from "ai6/test"
import { Schema } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import { scriptedModel, toolResultsSent } from "./fixtures.js"

const paid: Array<number> = []
const logged: Array<string> = []
const payments = definePlugin({
  name: "payments",
  manifest: { title: "Payments", summary: "Pays.", whenToUse: ["The user pays."], visibility: "always" },
  tools: [
    defineTool({
      name: "pay",
      description: "Pays an amount.",
      input: Schema.Struct({ amount: Schema.Number }),
      requiresApproval: true,
      handler: ({ amount }) => {
        paid.push(amount)
        return `paid ${amount}`
      }
    }),
    defineTool({
      name: "log_note",
      description: "Writes a note.",
      input: Schema.Struct({ text: Schema.String }),
      handler: ({ text }) => {
        logged.push(text)
        return "noted"
      }
    })
  ]
})

beforeEach(() => {
  paid.length = 0
  logged.length = 0
})

type Content = ReadonlyArray<{
  type: string
  approvalId?: string
  toolCall?: { toolName: string; input: unknown }
}>
const approvalRequests = (content: Content) => content.filter((p) => p.type === "tool-approval-request")

describe("approvals through the AI SDK's needsApproval (AI SDK 7)", () => {
  it("stops before the tool runs; the app's approval runs it once and the model reads its answer", async () => {
    const board = await createPlugboard({ plugins: [payments] })
    const { model, sent } = scriptedModel([{ calls: [["pay", { amount: 5 }]] }, { text: "Paid 5." }])
    const messages: Array<ModelMessage> = [{ role: "user", content: "Pay 5" }]
    const turn = board.turn({ messages })
    const first = await generateText({
      model,
      system: turn.system,
      messages,
      tools: turn.tools,
      stopWhen: stepCountIs(4)
    })
    const [request] = approvalRequests(first.content as Content)
    expect(request?.toolCall).toMatchObject({ toolName: "pay", input: { amount: 5 } })
    expect(paid).toEqual([])
    expect(sent).toHaveLength(1)

    const history: Array<ModelMessage> = [
      ...messages,
      ...first.responseMessages,
      {
        role: "tool",
        content: [{ type: "tool-approval-response", approvalId: request!.approvalId!, approved: true }]
      }
    ]
    const next = board.turn({ messages: history })
    const second = await generateText({
      model,
      system: next.system,
      messages: history,
      tools: next.tools,
      stopWhen: stepCountIs(4)
    })
    expect(paid).toEqual([5])
    expect(second.text).toBe("Paid 5.")
    expect(toolResultsSent(sent.at(-1)!).at(-1)).toEqual({ toolName: "pay", text: "paid 5", error: false })
  })

  it("a denial: the tool never runs, and the model is told it was denied, with the user's reason", async () => {
    const board = await createPlugboard({ plugins: [payments] })
    const { model, sent } = scriptedModel([{ calls: [["pay", { amount: 500 }]] }, { text: "Not paid." }])
    const messages: Array<ModelMessage> = [{ role: "user", content: "Pay 500" }]
    const turn = board.turn({ messages })
    const first = await generateText({
      model,
      system: turn.system,
      messages,
      tools: turn.tools,
      stopWhen: stepCountIs(4)
    })
    const [request] = approvalRequests(first.content as Content)
    const history: Array<ModelMessage> = [
      ...messages,
      ...first.responseMessages,
      {
        role: "tool",
        content: [
          {
            type: "tool-approval-response",
            approvalId: request!.approvalId!,
            approved: false,
            reason: "too much"
          }
        ]
      }
    ]
    const next = board.turn({ messages: history })
    const second = await generateText({
      model,
      system: next.system,
      messages: history,
      tools: next.tools,
      stopWhen: stepCountIs(4)
    })
    expect(second.text).toBe("Not paid.")
    expect(paid).toEqual([])
    const told = JSON.stringify(sent.at(-1)!.prompt.filter((m) => m.role === "tool"))
    expect(told).toContain("execution-denied")
    expect(told).toContain("too much")
  })

  it("the operator's approvalTools: a whole plugin or one tool waits; other tools run as before", async () => {
    for (const [list, waits] of [
      ["payments", ["log_note"]],
      ["payments/log_note", ["log_note"]],
      ["", []]
    ] as const) {
      const board = await createPlugboard({ plugins: [payments], approvalTools: list })
      const { model } = scriptedModel([{ calls: [["log_note", { text: "hi" }]] }, { text: "ok" }])
      const turn = board.turn({})
      const result = await generateText({
        model,
        system: turn.system,
        prompt: "note hi",
        tools: turn.tools,
        stopWhen: stepCountIs(4)
      })
      expect(approvalRequests(result.content as Content).map((r) => r.toolCall?.toolName)).toEqual(waits)
      expect(logged).toEqual(waits.length === 0 ? ["hi"] : [])
      logged.length = 0
    }
  })

  it("a bad approvalTools list is a RangeError naming the entry", async () => {
    await expect(
      createPlugboard({ plugins: [payments], approvalTools: "payments, Not A Plugin" })
    ).rejects.toThrow(/approvalTools: 'Not A Plugin' is not a plugin name/)
  })
})

describe("approvals on AI SDK 6", () => {
  it("the same stop and approval through 6's generateText", async () => {
    const board = await createPlugboard({ plugins: [payments] })
    const { model } = scriptedModel([{ calls: [["pay", { amount: 7 }]] }, { text: "Paid 7." }], {
      MockLanguageModelV3: Mock6,
      simulateReadableStream: ai6.simulateReadableStream
    } as never)
    const messages: Array<ai6.ModelMessage> = [{ role: "user", content: "Pay 7" }]
    const turn = board.turn({ messages })
    const first = await ai6.generateText({
      model: model as never,
      system: turn.system,
      messages,
      tools: turn.tools as ai6.ToolSet,
      stopWhen: ai6.stepCountIs(4)
    })
    const [request] = approvalRequests(first.content as Content)
    expect(request?.toolCall).toMatchObject({ toolName: "pay", input: { amount: 7 } })
    expect(paid).toEqual([])
    const history: Array<ai6.ModelMessage> = [
      ...messages,
      ...first.response.messages,
      {
        role: "tool",
        content: [{ type: "tool-approval-response", approvalId: request!.approvalId!, approved: true }]
      }
    ]
    const next = board.turn({ messages: history })
    const second = await ai6.generateText({
      model: model as never,
      system: next.system,
      messages: history,
      tools: next.tools as ai6.ToolSet,
      stopWhen: ai6.stepCountIs(4)
    })
    expect(paid).toEqual([7])
    expect(second.text).toBe("Paid 7.")
  })
})
