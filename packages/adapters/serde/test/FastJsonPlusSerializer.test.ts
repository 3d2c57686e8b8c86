/**
 * `FastJsonPlusSerializer` is a drop-in `JsonPlusSerializer`: the same bytes out and the same
 * values back for any JSON value and for LangChain messages, and the stock path for other types.
 */
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { FastJsonPlusSerializer } from "../src/index.js"

const stock = new JsonPlusSerializer()
const fast = new FastJsonPlusSerializer()

describe("FastJsonPlusSerializer", () => {
  it("writes the stock serializer's bytes and reads back its values, for any JSON value", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        const [type, bytes] = await fast.dumpsTyped(value)
        const [stockType, stockBytes] = await stock.dumpsTyped(value)
        expect(type).toBe(stockType)
        expect(Buffer.from(bytes).toString("utf8")).toBe(Buffer.from(stockBytes).toString("utf8"))
        expect(await fast.loadsTyped(type, bytes)).toStrictEqual(await stock.loadsTyped(type, bytes))
      }),
      { numRuns: 200 }
    )
  })

  it("reads a thread's messages back to the same classes and fields", async () => {
    const messages = [
      new HumanMessage({ content: "weather in Lisbon?", id: "h1" }),
      new AIMessage({
        content: "",
        id: "a1",
        tool_calls: [{ id: "c1", name: "weather", args: { city: "Lisbon" } }]
      }),
      new ToolMessage({ content: "19°C", tool_call_id: "c1", id: "t1" })
    ]
    const [type, bytes] = await fast.dumpsTyped({ messages })
    const read = (await fast.loadsTyped(type, bytes)) as { messages: Array<unknown> }
    expect(read).toStrictEqual(await stock.loadsTyped(type, bytes))
    expect(read.messages.map((m) => (m as object).constructor.name)).toEqual([
      "HumanMessage",
      "AIMessage",
      "ToolMessage"
    ])
  })

  it("leaves other types to the stock serializer (bytes, and a cycle JSON cannot write)", async () => {
    const bytes = new Uint8Array([1, 2, 3])
    expect(await fast.dumpsTyped(bytes)).toEqual(await stock.dumpsTyped(bytes))
    expect(await fast.loadsTyped("bytes", bytes)).toEqual(await stock.loadsTyped("bytes", bytes))
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    expect(await fast.dumpsTyped(cyclic)).toEqual(await stock.dumpsTyped(cyclic))
  })
})
