/**
 * A model reply never rewrites the thread: core's messages reducer replaces a message whose id it
 * has seen (docs/spec/graph-state.md#channels, as LangGraph's `add_messages`), so a reply reusing
 * an earlier id (some OpenAI-compatible servers reuse response ids) joins the thread under a fresh
 * id instead.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, definePlugin } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { createMainAgent, runTurn } from "../src/index.js"
import { asNewMessage } from "../src/ModelNode.js"
import { savers } from "./harness.js"

/** One model reply: tool calls (to `list_capabilities`) or an answer, with the id it carries. */
interface Reply {
  readonly id: string | undefined
  readonly text: string
  readonly callsTool: boolean
}

/** Answers each invocation with the next reply, as a provider would (a new message each time). */
class ReplayModel extends BaseChatModel {
  private next = 0
  constructor(private readonly replies: ReadonlyArray<Reply>) {
    super({})
  }
  _llmType() {
    return "replay"
  }
  override bindTools() {
    return {
      invoke: async () => {
        const i = this.next++
        const r = this.replies[i]
        if (r === undefined) throw new Error(`replay model: no reply ${i}`)
        return new AIMessage({
          content: r.text,
          ...(r.id === undefined ? {} : { id: r.id }),
          tool_calls: r.callsTool ? [{ id: `call-${i}`, name: "list_capabilities", args: {} }] : []
        })
      }
    } as never
  }
  async _generate(): Promise<never> {
    throw new Error("not used")
  }
}

const catalog = Catalog.unsafeMake([
  definePlugin({
    name: "notes",
    manifest: { title: "Notes", summary: "Notes.", whenToUse: ["notes"] }
  })
])

const view = (m: BaseMessage) => ({ type: m.getType(), content: m.content, id: m.id })

/** A turn: some tool-calling replies, then an answer; ids drawn from a tiny pool (so they repeat). */
const turnArb = fc
  .tuple(
    fc.array(fc.option(fc.constantFrom("chatcmpl-1", "chatcmpl-2"), { nil: undefined }), { maxLength: 2 }),
    fc.option(fc.constantFrom("chatcmpl-1", "chatcmpl-2", "chatcmpl-3"), { nil: undefined })
  )
  .map(([toolIds, answerId]) => ({ toolIds, answerId }))

describe("model replies and message ids", () => {
  it("appends every reply in order and changes no earlier message, whatever ids the model reuses", async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(turnArb, { minLength: 1, maxLength: 4 }), async (turns) => {
        run++
        const saver = new MemorySaver()
        const all: Array<Reply> = []
        let previous: Array<ReturnType<typeof view>> = []
        for (const [t, turn] of turns.entries()) {
          const replies: Array<Reply> = [
            ...turn.toolIds.map((id, k) => ({ id, text: `run ${run} turn ${t} step ${k}`, callsTool: true })),
            { id: turn.answerId, text: `run ${run} answer ${t}`, callsTool: false }
          ]
          all.push(...replies)
          const agent = await createMainAgent({
            catalog,
            model: new ReplayModel(replies),
            checkpointer: saver,
            request: { did: "did:key:a", sessionId: "s" }
          })
          const result = await runTurn(agent, { message: `question ${t}` })
          expect(result.answer).toBe(`run ${run} answer ${t}`)
          const now = (await agent.getState()).messages.map(view)
          // Nothing earlier changed (content, type or id): the thread only grew.
          expect(now.slice(0, previous.length)).toEqual(previous)
          expect(now.at(-1)).toMatchObject({ type: "ai", content: `run ${run} answer ${t}` })
          previous = now
        }
        // Every reply is there, in order; every id is distinct.
        expect(previous.filter((m) => m.type === "ai").map((m) => m.content)).toEqual(all.map((r) => r.text))
        expect(new Set(previous.map((m) => m.id)).size).toBe(previous.length)
      }),
      { numRuns: 60 }
    )
  })

  it.each(savers)("keeps the ids it gave through a checkpoint round-trip (%s)", async (_name, make) => {
    const fixture = make()
    try {
      const replies: ReadonlyArray<Reply> = [{ id: undefined, text: "hello", callsTool: false }]
      const agent = await createMainAgent({
        catalog,
        model: new ReplayModel(replies),
        checkpointer: fixture.saver,
        request: { did: "did:key:a", sessionId: "s-ids" }
      })
      const turn = await runTurn(agent, { message: "hi" })
      const ids = turn.state.messages.map((m) => m.id)
      expect(ids.every((id) => typeof id === "string")).toBe(true)
      const reopened = fixture.reopen?.() ?? fixture.saver
      const again = await createMainAgent({
        catalog,
        model: new ReplayModel([]),
        checkpointer: reopened,
        request: { did: "did:key:a", sessionId: "s-ids" }
      })
      expect((await again.getState()).messages.map((m) => m.id)).toEqual(ids)
    } finally {
      fixture.close()
    }
  })

  it("asNewMessage: a fresh id only on a clash; a message of the thread itself is copied, not changed", () => {
    const earlier = new AIMessage({ content: "first", id: "x" })
    const thread = [earlier]
    const unique = new AIMessage({ content: "other", id: "y" })
    expect(asNewMessage(unique, thread)).toBe(unique)
    expect(unique.id).toBe("y")
    const clash = new AIMessage({ content: "second", id: "x" })
    const added = asNewMessage(clash, thread)
    expect(added.id).not.toBe("x")
    expect(added.content).toBe("second")
    // The same object as a message of the thread (a middleware recovering with it).
    const copy = asNewMessage(earlier, thread)
    expect(copy).not.toBe(earlier)
    expect(earlier.id).toBe("x")
    expect(copy.id).not.toBe("x")
    expect(view(copy)).toMatchObject({ type: "ai", content: "first" })
    expect(JSON.parse(JSON.stringify(copy)).kwargs.id).toBe(copy.id)
  })
})
