/** Calls that wait for approval: the batch stops before any call runs, and a resume runs it as answered. */
import { isAIMessage, ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Approval, Catalog, type Plugin, Wait } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import {
  type ApprovalOption,
  ASK_AGAIN,
  createMainAgent,
  runTurn,
  STALE_RESUME,
  streamTurn,
  WaitNeeded
} from "../src/index.js"

const ran: Array<string> = []
const payments: Plugin = {
  name: "payments",
  manifest: { title: "Payments", summary: "Pays.", whenToUse: ["To pay."], visibility: "always" },
  tools: [
    {
      name: "pay",
      description: "Pays an amount.",
      input: Schema.Struct({ amount: Schema.Number }),
      requiresApproval: true,
      handler: ({ amount }: { amount: number }) => {
        ran.push(`pay ${amount}`)
        return `paid ${amount}`
      }
    },
    {
      name: "balance",
      description: "Reads the balance.",
      input: Schema.Struct({}),
      handler: () => {
        ran.push("balance")
        return "100"
      }
    }
  ]
}
const catalog = Either.getOrThrow(Catalog.make([payments]))

const agent = (model: ScriptedChatModel, saver: MemorySaver, approval: ApprovalOption) =>
  createMainAgent({
    catalog,
    model,
    checkpointer: saver,
    request: { did: "did:key:zUser", sessionId: "s1", requestId: "r1", approval }
  })

const toolMessages = (messages: ReadonlyArray<unknown>) =>
  messages.filter((m) => ToolMessage.isInstance(m)) as Array<ToolMessage>

const waitOf = async (
  turn: Promise<unknown>
): Promise<WaitNeeded & { readonly request: typeof Wait.ApprovalRequest.Type }> => {
  const error = await turn.then(
    () => undefined,
    (e: unknown) => e
  )
  if (!(error instanceof WaitNeeded)) throw new Error(`expected a wait, got ${String(error)}`)
  const { request } = error
  if (request._tag !== "approval") throw new Error(`expected an approval, got ${request._tag}`)
  return Object.assign(error, { request })
}

describe("approvals in the agent loop", () => {
  it("stops the batch before any call runs, keeps the calls unanswered, and an approval runs the tool once", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([
      [
        { tool: "balance", args: {} },
        { tool: "pay", args: { amount: 5 } }
      ],
      "Paid."
    ])
    const saver = new MemorySaver()
    const first = await agent(model, saver, { operator: Approval.NONE })
    const wait = await waitOf(runTurn(first, { message: "Pay 5" }))
    expect(wait.request).toEqual({
      _tag: "approval",
      plugin: "payments",
      tool: "pay",
      args: { amount: 5 },
      reason: "the tool 'pay' of 'payments' asks for approval before it runs"
    })
    expect(ran).toEqual([])
    const stored = await first.getState()
    const ai = stored.messages.at(-1)!
    expect(isAIMessage(ai) && ai.tool_calls?.map((c) => c.id)).toContain(wait.callId)
    expect(toolMessages(stored.messages)).toEqual([])

    const resumed = await agent(model, saver, {
      operator: Approval.NONE,
      resume: { request: wait.request, answer: { _tag: "decision", approved: true } }
    })
    const events: Array<string> = []
    const stream = streamTurn(resumed, {})
    let next = await stream.next()
    while (next.done !== true) {
      if (next.value._tag === "tool_call") events.push(next.value.toolName)
      next = await stream.next()
    }
    expect(next.value.answer).toBe("Paid.")
    expect(ran.sort()).toEqual(["balance", "pay 5"])
    expect(toolMessages(next.value.state.messages).map((m) => [m.name, m.content])).toEqual([
      ["balance", "100"],
      ["pay", "paid 5"]
    ])
    // The resumed turn called the model once (for the answer), not again for the calls.
    expect(model.calls).toHaveLength(2)
    expect(events.length).toBeGreaterThan(0)
  })

  it("a denial answers the model 'not approved' and the tool never runs; the turn ends normally", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([{ tool: "pay", args: { amount: 7 } }, "Not paid."])
    const saver = new MemorySaver()
    const wait = await waitOf(
      runTurn(await agent(model, saver, { operator: Approval.NONE }), { message: "Pay" })
    )
    const answer: Wait.WaitAnswer = { _tag: "decision", approved: false }
    const result = await runTurn(
      await agent(model, saver, { operator: Approval.NONE, resume: { request: wait.request, answer } }),
      {}
    )
    expect(result.answer).toBe("Not paid.")
    expect(ran).toEqual([])
    const [m] = toolMessages(result.state.messages)
    expect([m!.name, m!.content, m!.status]).toEqual(["pay", Wait.NOT_APPROVED, "error"])
  })

  it("a timeout answers 'no answer'; the operator's list makes any tool wait; other waiting calls of the batch ask again", async () => {
    ran.length = 0
    const operator = Either.getOrThrow(Approval.parseOperatorList("payments/balance"))
    const model = ScriptedChatModel.script([
      [
        { tool: "balance", args: {} },
        { tool: "pay", args: { amount: 1 } }
      ],
      "Done."
    ])
    const saver = new MemorySaver()
    const wait = await waitOf(runTurn(await agent(model, saver, { operator }), { message: "Go" }))
    expect(wait.request.tool).toBe("balance")
    expect(wait.request.reason).toBe("the operator requires approval for 'payments/balance'")
    const result = await runTurn(
      await agent(model, saver, {
        operator,
        resume: { request: wait.request, answer: { _tag: "timed-out" } }
      }),
      {}
    )
    expect(ran).toEqual([])
    expect(toolMessages(result.state.messages).map((m) => [m.name, m.content])).toEqual([
      ["balance", Wait.NO_ANSWER],
      ["pay", ASK_AGAIN]
    ])
  })

  it("a resume answers the call with the wait's plugin, tool and arguments (key order aside); another call waits anew", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([{ tool: "pay", args: { amount: 3 } }, "Paid."])
    const saver = new MemorySaver()
    const wait = await waitOf(
      runTurn(await agent(model, saver, { operator: Approval.NONE }), { message: "Pay" })
    )
    const approved: Wait.WaitAnswer = { _tag: "decision", approved: true }
    const other = { ...wait.request, args: { amount: 4 } }
    const again = await waitOf(
      runTurn(
        await agent(model, saver, { operator: Approval.NONE, resume: { request: other, answer: approved } }),
        {}
      )
    )
    expect(again.request.args).toEqual({ amount: 3 })
    expect(ran).toEqual([])
    const reordered = { ...wait.request, args: JSON.parse(JSON.stringify(wait.request.args)) }
    const result = await runTurn(
      await agent(model, saver, {
        operator: Approval.NONE,
        resume: { request: reordered, answer: approved }
      }),
      {}
    )
    expect(result.answer).toBe("Paid.")
    expect(ran).toEqual(["pay 3"])
  })

  it("a denial holds even when the operator's list no longer names the tool; an approval serves one batch only", async () => {
    ran.length = 0
    const operator = Either.getOrThrow(Approval.parseOperatorList("payments/balance"))
    const model = ScriptedChatModel.script([{ tool: "balance", args: {} }, "Not read."])
    const saver = new MemorySaver()
    const wait = await waitOf(runTurn(await agent(model, saver, { operator }), { message: "Balance?" }))
    const denied: Wait.WaitAnswer = { _tag: "decision", approved: false }
    // The operator edited the list across a restart: the denied call still does not run.
    const result = await runTurn(
      await agent(model, saver, {
        operator: Approval.NONE,
        resume: { request: wait.request, answer: denied }
      }),
      {}
    )
    expect(ran).toEqual([])
    expect(toolMessages(result.state.messages).map((m) => m.content)).toEqual([Wait.NOT_APPROVED])

    ran.length = 0
    const twice = ScriptedChatModel.script([
      { tool: "pay", args: { amount: 9 } },
      { tool: "pay", args: { amount: 9 } },
      "Paid twice."
    ])
    const saver2 = new MemorySaver()
    const first = await waitOf(
      runTurn(await agent(twice, saver2, { operator: Approval.NONE }), { message: "Pay" })
    )
    const approved: Wait.WaitAnswer = { _tag: "decision", approved: true }
    // The model calls the same tool with the same arguments again: that call waits anew.
    const second = await waitOf(
      runTurn(
        await agent(twice, saver2, {
          operator: Approval.NONE,
          resume: { request: first.request, answer: approved }
        }),
        {}
      )
    )
    expect(ran).toEqual(["pay 9"])
    expect(second.request.args).toEqual({ amount: 9 })
  })

  it("a resume of a thread that went on since (a newer message) fails and runs nothing", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([{ tool: "pay", args: { amount: 6 } }, "Hello.", "unused"])
    const saver = new MemorySaver()
    const wait = await waitOf(
      runTurn(await agent(model, saver, { operator: Approval.NONE }), { message: "Pay" })
    )
    await runTurn(await agent(model, saver, { operator: Approval.NONE }), { message: "Never mind" })
    const approved: Wait.WaitAnswer = { _tag: "decision", approved: true }
    const late = runTurn(
      await agent(model, saver, {
        operator: Approval.NONE,
        resume: { request: wait.request, answer: approved }
      }),
      {}
    )
    await expect(late).rejects.toThrow(STALE_RESUME)
    expect(ran).toEqual([])
  })

  it("without the option, no call waits", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([{ tool: "pay", args: { amount: 2 } }, "Paid."])
    const a = await createMainAgent({
      catalog,
      model,
      checkpointer: new MemorySaver(),
      request: { did: "did:key:zUser", sessionId: "s1" }
    })
    expect((await runTurn(a, { message: "Pay" })).answer).toBe("Paid.")
    expect(ran).toEqual(["pay 2"])
  })
})

describe("connect waits (docs/waiting.md#connect-waits)", () => {
  const notes: Plugin = {
    name: "notes",
    manifest: { title: "Notes", summary: "Notes of the user's account.", whenToUse: ["To read notes."] },
    tools: [
      {
        name: "read_notes",
        description: "Reads the notes.",
        input: Schema.Struct({}),
        handler: () => "my notes"
      }
    ]
  }
  const connectCatalog = Either.getOrThrow(Catalog.make([notes]))
  const needs = {
    reason: "notes signs each user in with OAuth.",
    url: "https://host.example/oauth/start?ticket=t"
  }
  const connectAgent = (
    model: ScriptedChatModel,
    saver: MemorySaver,
    approval: ApprovalOption,
    pending: ReadonlyMap<string, { reason: string; url: string }>
  ) =>
    createMainAgent({
      catalog: connectCatalog,
      model,
      checkpointer: saver,
      request: { did: "did:key:zUser", sessionId: "s1", requestId: "r1", approval, pending }
    })
  const loadNotes = { tool: "load_capability", args: { names: ["notes"] } }

  it("a load of a plugin the user has not connected stops the batch with a connect request, when the turn can wait", async () => {
    const model = ScriptedChatModel.script([loadNotes, "Connected."])
    const saver = new MemorySaver()
    const pending = new Map([["notes", needs]])
    const error = await runTurn(
      await connectAgent(model, saver, { operator: Approval.NONE, connect: true }, pending),
      {
        message: "Read my notes"
      }
    ).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(WaitNeeded)
    expect((error as WaitNeeded).request).toEqual({
      _tag: "connect",
      plugin: "notes",
      url: needs.url,
      reason: needs.reason
    })
    // Connected: the host no longer lists notes pending, and the resumed batch loads it.
    const resumed = await connectAgent(
      model,
      saver,
      {
        operator: Approval.NONE,
        connect: true,
        resume: { request: (error as WaitNeeded).request, answer: { _tag: "connected" } }
      },
      new Map()
    )
    const done = await runTurn(resumed, {})
    expect(done.answer).toBe("Connected.")
    expect(done.state.loadedPlugins).toEqual(["notes"])
  })

  it("timed out: the resumed load is answered with the link and does not wait again; without `connect`, no load waits", async () => {
    const model = ScriptedChatModel.script([loadNotes, "Here is the link.", loadNotes, "Link again."])
    const saver = new MemorySaver()
    const pending = new Map([["notes", needs]])
    const error = (await runTurn(
      await connectAgent(model, saver, { operator: Approval.NONE, connect: true }, pending),
      { message: "Read my notes" }
    ).then(
      () => undefined,
      (e: unknown) => e
    )) as WaitNeeded
    const resumed = await connectAgent(
      model,
      saver,
      {
        operator: Approval.NONE,
        connect: true,
        resume: { request: error.request, answer: { _tag: "timed-out" } }
      },
      pending
    )
    const done = await runTurn(resumed, {})
    expect(done.answer).toBe("Here is the link.")
    const told = toolMessages(done.state.messages).at(-1)!
    expect(String(told.content)).toContain(needs.url)
    expect(done.state.loadedPlugins).toEqual([])
    const off = await connectAgent(model, saver, { operator: Approval.NONE }, pending)
    expect((await runTurn(off, { message: "Again" })).answer).toBe("Link again.")
  })
})
