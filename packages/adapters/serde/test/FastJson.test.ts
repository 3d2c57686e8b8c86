/**
 * The fast reader returns exactly what JsonPlusSerializer's own reader returns, for
 * LangChain messages, every lc:2 record, inert/invalid records, and arbitrary JSON.
 */
import {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  ToolMessage
} from "@langchain/core/messages"
import { DeltaSnapshot, JsonPlusSerializer } from "@langchain/langgraph-checkpoint"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { dumpJsonPlus, loadJsonPlus, makeDumper, makeLoader } from "../src/FastJson.js"

const serde = new JsonPlusSerializer()

const same = async (value: unknown) => {
  const [, bytes] = await serde.dumpsTyped(value)
  const expected = await serde.loadsTyped("json", bytes)
  const actual = await loadJsonPlus(bytes)
  expect(actual).toStrictEqual(expected)
  return actual
}

describe("loadJsonPlus", () => {
  it("revives LangChain messages to the same classes and fields", async () => {
    const messages = [
      new HumanMessage({ content: "hi", id: "h1" }),
      new AIMessage({
        content: [{ type: "text", text: "hello" }],
        id: "a1",
        tool_calls: [{ id: "c1", name: "weather", args: { city: "Lisbon" } }]
      }),
      new ToolMessage({ content: "19°C", tool_call_id: "c1", id: "t1" })
    ]
    const out = (await same({ messages, nested: [{ m: messages[0] }] })) as { messages: Array<unknown> }
    expect(out.messages[0]).toBeInstanceOf(HumanMessage)
    expect(out.messages[1]).toBeInstanceOf(AIMessage)
    expect(out.messages[2]).toBeInstanceOf(ToolMessage)
  })

  it("builds every message class without load() exactly as load() does, and leaves the rest to it", async () => {
    const values = [
      new SystemMessage({ content: "be brief", id: "s1", additional_kwargs: { a: [1, { b: null }] } }),
      new AIMessage({
        content: "",
        id: "a2",
        tool_calls: [{ id: "c2", name: "f", args: { deep: { x: [true, "y"] } } }],
        invalid_tool_calls: [{ id: "c3", name: "g", args: "{oops", error: "bad" }],
        response_metadata: { model: "m", finish_reason: "tool_calls" },
        usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 }
      }),
      new AIMessageChunk({ content: "par", id: "a3" }),
      new HumanMessageChunk({ content: [{ type: "text", text: "hi" }], id: "h2" }),
      new ToolMessage({ content: "x", tool_call_id: "c2", artifact: { rows: [1, 2] }, status: "error" }),
      new ChatMessage({ content: "c", role: "critic" }),
      new RemoveMessage({ id: "h1" }),
      // kwargs holding a record load() treats specially: built by load() itself
      new HumanMessage({ content: "s", additional_kwargs: { lc: 1, type: "not a record" } }),
      new HumanMessage({ content: "t", additional_kwargs: { when: new Set([1]) } })
    ]
    const out = (await same({ values })) as { values: Array<unknown> }
    expect(out.values.map((v) => (v as { constructor: { name: string } }).constructor.name)).toEqual([
      "SystemMessage",
      "AIMessage",
      "AIMessageChunk",
      "HumanMessageChunk",
      "ToolMessage",
      "ChatMessage",
      "RemoveMessage",
      "HumanMessage",
      "HumanMessage"
    ])
  })

  it("revives every lc:2 record the serializer writes", async () => {
    const out = (await same({
      u: undefined,
      list: [1, undefined, 3],
      set: new Set([1, "a"]),
      map: new Map<unknown, unknown>([["k", { v: 1 }]]),
      re: /a+b/gi,
      err: new Error("boom"),
      bytes: new Uint8Array([0, 1, 255]),
      delta: new DeltaSnapshot([new HumanMessage({ content: "x", id: "x" })])
    })) as Record<string, unknown>
    expect(out.set).toBeInstanceOf(Set)
    expect(out.map).toBeInstanceOf(Map)
    expect(out.re).toBeInstanceOf(RegExp)
    expect(out.err).toBeInstanceOf(Error)
    expect(out.bytes).toBeInstanceOf(Uint8Array)
    expect(out.delta).toBeInstanceOf(DeltaSnapshot)
    expect(Object.hasOwn(out, "u")).toBe(true)
  })

  it("leaves invalid or unknown records inert, exactly like the serializer", async () => {
    const inert = [
      { lc: 2, type: "constructor", id: ["Function"], args: ["return 1"] },
      { lc: 2, type: "constructor", id: ["Set"], method: "call", args: [[1]] },
      { lc: 2, type: "constructor", id: ["Map"], args: [[[1]]] },
      { lc: 2, type: "constructor", id: ["RegExp"], args: ["(", ""] },
      { lc: 2, type: "constructor", id: ["Uint8Array"], method: "from", args: [[256]] },
      { lc: 2, type: "delta_snapshot" },
      { lc: 3, type: "constructor", id: ["x"] }
    ]
    for (const record of inert) {
      const text = JSON.stringify({ record })
      expect(await loadJsonPlus(text)).toStrictEqual(await serde.loadsTyped("json", text))
    }
  })

  it("agrees with the serializer on arbitrary JSON", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        const text = JSON.stringify(value)
        expect(await loadJsonPlus(text)).toStrictEqual(await serde.loadsTyped("json", text))
      }),
      { numRuns: 200 }
    )
  })

  it("is used only for the stock serializer; other serdes are called as they are", async () => {
    class Custom extends JsonPlusSerializer {
      override async loadsTyped(): Promise<unknown> {
        return "custom"
      }
    }
    expect(await makeLoader(new Custom())("json", "{}")).toBe("custom")
    expect(await makeLoader(serde)("json", '{"a":1}')).toEqual({ a: 1 })
  })
})

describe("dumpJsonPlus", () => {
  const sameBytes = async (value: unknown) => {
    const expected = await serde.dumpsTyped(value)
    const actual = await dumpJsonPlus(serde, value)
    expect(actual[0]).toBe(expected[0])
    expect(Buffer.from(actual[1]).toString("utf8")).toBe(Buffer.from(expected[1]).toString("utf8"))
  }

  it("writes the same bytes for messages, special values and plain JSON", async () => {
    class MySet extends Set<number> {}
    await sameBytes([
      new HumanMessage({ content: "hi", id: "h1" }),
      new AIMessage({
        content: "yo",
        id: "a1",
        tool_calls: [{ id: "c", name: "t", args: { x: [1, undefined] } }]
      }),
      new ToolMessage({ content: "r", tool_call_id: "c" })
    ])
    await sameBytes({
      u: undefined,
      arr: [undefined, null, 1, "s", true],
      set: new Set([1, 2]),
      sub: new MySet([3]),
      map: new Map([["a", 1]]),
      re: /x/g,
      err: new TypeError("bad"),
      bytes: new Uint8Array([1, 2]),
      buffer: Buffer.from("hi"),
      date: new Date(0),
      delta: new DeltaSnapshot([1]),
      send: { lg_name: "Send", node: "n", args: { a: 1 }, extra: "dropped" },
      sendTimeout: { lg_name: "Send", node: "n", args: 1, timeout: 5 },
      fn: () => 1,
      sym: Symbol("s"),
      nested: { deep: [{ deeper: new Set(["z"]) }] }
    })
    await sameBytes(undefined)
    await sameBytes(null)
    await sameBytes("plain")
    await sameBytes(new Uint8Array([9]))
  })

  it("falls back to the serializer where JSON.stringify throws (cycles, BigInt)", async () => {
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    await sameBytes(cyclic)
    await sameBytes({ big: BigInt(1) })
  })

  it("agrees with the serializer on arbitrary values", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.anything({ withMap: true, withSet: true, withDate: true, withTypedArray: true }),
        async (value) => {
          await sameBytes(value)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("is used only for the stock serializer", async () => {
    class Custom extends JsonPlusSerializer {
      override async dumpsTyped(): Promise<[string, Uint8Array]> {
        return ["custom", new Uint8Array()]
      }
    }
    expect((await makeDumper(new Custom())({}))[0]).toBe("custom")
  })
})
