import {
  AIMessage,
  type AIMessageChunk,
  HumanMessage,
  SystemMessage,
  ToolMessage
} from "@langchain/core/messages"
import { tool } from "@langchain/core/tools"
import { makeTiktokenCounter } from "@plugboard/tokenizers"
import { describe, expect, it } from "vitest"
import { ScriptExhaustedError, ScriptedChatModel, splitAnswer, toolName } from "../src/ScriptedChatModel.js"

const lookup = tool(async () => "ok", {
  name: "lookup",
  description: "Look something up",
  schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
})
const openAiShaped = {
  type: "function",
  function: { name: "send_email", description: "Send", parameters: {} }
}

describe("ScriptedChatModel (script mode)", () => {
  it("replays tool calls and answers in order, recording what each call was offered", async () => {
    const model = ScriptedChatModel.script([
      { tool: "lookup", args: { q: "x" } },
      [
        { tool: "lookup", args: { q: "y" } },
        { tool: "send_email", args: { to: "a@b.c" } }
      ],
      "All done."
    ])
    const bound = model.bindTools([lookup])
    const r1 = await bound.invoke([new HumanMessage("hi")])
    expect(r1.tool_calls?.map((c) => [c.name, c.args])).toEqual([["lookup", { q: "x" }]])

    const twice = model.bindTools([lookup, openAiShaped])
    const r2 = await twice.invoke([new HumanMessage("hi"), r1])
    expect(r2.tool_calls?.map((c) => c.name)).toEqual(["lookup", "send_email"])
    expect(new Set(r2.tool_calls?.map((c) => c.id)).size).toBe(2)

    const r3 = await model.invoke([new HumanMessage("bye")])
    expect(r3.content).toBe("All done.")
    expect(r3.tool_calls ?? []).toEqual([])

    // One log, shared by the unbound model and every bound copy.
    expect(model.calls.map((c) => c.offeredTools)).toEqual([["lookup"], ["lookup", "send_email"], []])
    expect(bound.calls).toBe(model.calls)
    expect(model.calls[1]?.messages.map((m) => m.type)).toEqual(["human", "ai"])
    expect(model.callCount).toBe(3)
  })

  it("bindTools replaces the offer instead of accumulating (as providers do)", () => {
    const model = ScriptedChatModel.script([])
    expect(model.bindTools([lookup]).bindTools([openAiShaped]).offeredTools).toEqual(["send_email"])
    expect(model.offeredTools).toEqual([])
  })

  it("binding the very same tools again hands out the same copy; other tools, another (issue 37)", async () => {
    const model = ScriptedChatModel.script(["one", "two", "three"])
    const first = model.bindTools([lookup, openAiShaped])
    expect(model.bindTools([lookup, openAiShaped])).toBe(first)
    expect(first.bindTools([lookup, openAiShaped])).toBe(first)
    // Same names, another tool object (its schema may differ): a copy of its own.
    const other = model.bindTools([lookup, { ...openAiShaped }])
    expect(other).not.toBe(first)
    expect(model.bindTools([lookup])).not.toBe(first)
    await first.invoke([new HumanMessage("a")])
    await model.bindTools([lookup, openAiShaped]).invoke([new HumanMessage("b")])
    await other.invoke([new HumanMessage("c")])
    expect(model.calls.map((c) => [c.offeredTools, c.message?.content])).toEqual([
      [["lookup", "send_email"], "one"],
      [["lookup", "send_email"], "two"],
      [["lookup", "send_email"], "three"]
    ])
    expect(model.calls[0]!.usage).toEqual(
      model.calls[1]!.usage === undefined ? undefined : model.calls[0]!.usage
    )
  })

  it("a step may be a function of the messages and the offer", async () => {
    const model = ScriptedChatModel.script([
      ({ messages, offeredTools }) => `saw ${messages.length} message(s), offered ${offeredTools.join(",")}`
    ])
    const reply = await model.bindTools([lookup]).invoke([new HumanMessage("a"), new HumanMessage("b")])
    expect(reply.content).toBe("saw 2 message(s), offered lookup")
  })

  it("running out of script is a clear error, and an Error step is thrown", async () => {
    const boom = new Error("provider down")
    const model = ScriptedChatModel.script([boom])
    await expect(model.invoke([new HumanMessage("x")])).rejects.toBe(boom)
    await expect(model.invoke([new HumanMessage("again")])).rejects.toSatisfy(
      (e) => e instanceof ScriptExhaustedError && /1 step\(s\).*invocation #2.*"again"/.test(e.message)
    )
    expect(model.calls).toHaveLength(2)
    expect(model.calls[0]?.message).toBeUndefined()
  })

  it("reports usage counted with the given TokenCounter, tool schemas included", async () => {
    const counter = makeTiktokenCounter("o200k")
    const model = ScriptedChatModel.script(["hello world", "hello world"], { tokenCounter: counter })
    const plain = await model.invoke([new HumanMessage("hi")])
    // Output "hello world" is 2 tokens in o200k; the input is the serialised history "human: hi".
    expect(plain.usage_metadata).toEqual({
      input_tokens: counter.count("human: hi"),
      output_tokens: 2,
      total_tokens: counter.count("human: hi") + 2
    })
    const withTools = await model.bindTools([lookup]).invoke([new HumanMessage("hi")])
    expect(withTools.usage_metadata!.input_tokens).toBeGreaterThan(plain.usage_metadata!.input_tokens)
    expect(model.calls[1]?.usage).toEqual(withTools.usage_metadata)
  })

  it("counts input as the sum of per-message counts, the same on repeated calls (cached per object)", async () => {
    const counter = makeTiktokenCounter("o200k")
    const model = ScriptedChatModel.script(["a", "b"], { tokenCounter: counter })
    const history = [new HumanMessage("What's the weather in Berlin?"), new AIMessage("Sunny.")]
    const expected = counter.count("human: What's the weather in Berlin?") + counter.count("ai: Sunny.")
    const first = await model.invoke(history)
    const second = await model.invoke(history)
    expect(first.usage_metadata?.input_tokens).toBe(expected)
    expect(second.usage_metadata?.input_tokens).toBe(expected)
  })

  it("counts a text once per counter, also when its message is rebuilt for every call (a system prompt)", async () => {
    const counted: Array<string> = []
    const counter = {
      name: "counting",
      count: (text: string) => {
        counted.push(text)
        return text.length
      }
    }
    const model = ScriptedChatModel.script(["Sunny.", "Sunny.", "Sunny."], { tokenCounter: counter })
    const question = new HumanMessage("What's the weather in Berlin?")
    const usages = []
    for (let call = 0; call < 3; call++) {
      const reply = await model.invoke([new SystemMessage("You are a weather bot."), question])
      usages.push(reply.usage_metadata)
    }
    // Every call reports the same usage, though the prompt and the reply were counted once each.
    expect(usages).toEqual([usages[0], usages[0], usages[0]])
    expect(usages[0]?.input_tokens).toBe(
      "system: You are a weather bot.".length + "human: What's the weather in Berlin?".length
    )
    expect(counted.sort()).toEqual(
      ["Sunny.", "human: What's the weather in Berlin?", "system: You are a weather bot."].sort()
    )
  })

  it("gives reproducible ids: same history and reply → same id, different history → different id", async () => {
    const a = ScriptedChatModel.script(["same", "same"])
    const b = ScriptedChatModel.script(["same"])
    const x = await a.invoke([new HumanMessage("q")])
    const y = await b.invoke([new HumanMessage("q")])
    const z = await a.invoke([new HumanMessage("q"), x, new HumanMessage("q2")])
    expect(x.id).toBe(y.id)
    expect(z.id).not.toBe(x.id)
  })

  it("streams a final answer in a few chunks that concatenate to the answer, usage on the last", async () => {
    const text = "It is 21°C and sunny in Berlin with a light breeze from the west."
    const model = ScriptedChatModel.script([text])
    const chunks: AIMessageChunk[] = []
    for await (const chunk of await model.stream([new HumanMessage("weather?")])) chunks.push(chunk)
    expect(chunks.length).toBe(3)
    expect(chunks.map((c) => c.content).join("")).toBe(text)
    expect(chunks.at(-1)?.usage_metadata?.output_tokens).toBeGreaterThan(0)
    expect(model.calls).toHaveLength(1)
  })

  it("streams tool calls as tool_call_chunks that aggregate to the same calls", async () => {
    const model = ScriptedChatModel.script([{ tool: "lookup", args: { q: "Berlin", n: 2 } }])
    let acc: AIMessageChunk | undefined
    for await (const chunk of await model.bindTools([lookup]).stream([new HumanMessage("x")])) {
      acc = acc === undefined ? chunk : acc.concat(chunk)
    }
    expect(acc?.tool_calls?.map((c) => [c.name, c.args])).toEqual([["lookup", { q: "Berlin", n: 2 }]])
  })

  it("sees tool results as ordinary messages", async () => {
    const model = ScriptedChatModel.script([({ messages }) => `result was ${messages.at(-1)?.text}`])
    const call = new AIMessage({ content: "", tool_calls: [{ id: "c1", name: "lookup", args: {} }] })
    const reply = await model.invoke([
      new HumanMessage("x"),
      call,
      new ToolMessage({ tool_call_id: "c1", content: "42" })
    ])
    expect(reply.content).toBe("result was 42")
  })
})

describe("ScriptedChatModel: reasoning", () => {
  it("a { reasoning, reply } step exposes its reasoning in additional_kwargs.reasoning_content, not the text", async () => {
    const model = ScriptedChatModel.script([
      { reasoning: "Look it up first.", reply: { tool: "lookup", args: { q: "x" } } },
      { reasoning: "Enough to answer.", reply: "It is x." },
      "No reasoning here.",
      { reasoning: "", reply: "Empty reasoning is none." }
    ])
    const bound = model.bindTools([lookup])
    const r1 = await bound.invoke([new HumanMessage("q")])
    expect(r1.additional_kwargs.reasoning_content).toBe("Look it up first.")
    expect(r1.tool_calls?.map((c) => [c.name, c.args])).toEqual([["lookup", { q: "x" }]])
    expect(r1.content).toBe("")
    const r2 = await bound.invoke([new HumanMessage("q")])
    expect(r2.additional_kwargs.reasoning_content).toBe("Enough to answer.")
    expect(r2.content).toBe("It is x.")
    const r3 = await bound.invoke([new HumanMessage("q")])
    expect(r3.additional_kwargs).toEqual({})
    expect((await bound.invoke([new HumanMessage("q")])).additional_kwargs).toEqual({})
    expect(model.calls[0]?.message?.additional_kwargs.reasoning_content).toBe("Look it up first.")
  })

  it("bills the reasoning as output tokens, as providers do, and reports them", async () => {
    const counter = { name: "words", count: (text: string) => text.split(/\s+/).filter(Boolean).length }
    const plain = await ScriptedChatModel.script(["two words"], { tokenCounter: counter }).invoke([
      new HumanMessage("q")
    ])
    const reasoned = await ScriptedChatModel.script([{ reasoning: "three more words", reply: "two words" }], {
      tokenCounter: counter
    }).invoke([new HumanMessage("q")])
    expect(plain.usage_metadata?.output_tokens).toBe(2)
    expect(reasoned.usage_metadata).toMatchObject({
      output_tokens: 5,
      total_tokens: reasoned.usage_metadata!.input_tokens + 5,
      output_token_details: { reasoning: 3 }
    })
  })

  it("streams the reasoning first, in a chunk of its own, then the text or tool calls", async () => {
    const model = ScriptedChatModel.script([
      { reasoning: "Answer briefly.", reply: "one two three four five six" },
      { reasoning: "Call it.", reply: [{ tool: "lookup", args: { q: "y" } }] }
    ])
    const chunks: AIMessageChunk[] = []
    for await (const c of await model.stream([new HumanMessage("q")])) chunks.push(c)
    expect(chunks[0]?.additional_kwargs.reasoning_content).toBe("Answer briefly.")
    expect(chunks[0]?.content).toBe("")
    expect(chunks.slice(1).every((c) => c.additional_kwargs.reasoning_content === undefined)).toBe(true)
    const whole = chunks.reduce((a, b) => a.concat(b))
    expect(whole.content).toBe("one two three four five six")
    expect(whole.additional_kwargs.reasoning_content).toBe("Answer briefly.")
    let calls: AIMessageChunk | undefined
    for await (const c of await model.bindTools([lookup]).stream([new HumanMessage("q")]))
      calls = calls === undefined ? c : calls.concat(c)
    expect(calls?.additional_kwargs.reasoning_content).toBe("Call it.")
    expect(calls?.tool_calls?.map((c) => [c.name, c.args])).toEqual([["lookup", { q: "y" }]])
  })

  it("refuses a step whose reasoning is not a string, or nests reasoning twice", async () => {
    const bad = ScriptedChatModel.script([{ reasoning: 3 as unknown as string, reply: "x" }])
    await expect(bad.invoke([new HumanMessage("q")])).rejects.toThrow(/reasoning must be a string/)
    const nested = ScriptedChatModel.script([
      { reasoning: "a", reply: { reasoning: "b", reply: "x" } as never }
    ])
    await expect(nested.invoke([new HumanMessage("q")])).rejects.toThrow(/cannot carry reasoning again/)
  })
})

describe("helpers", () => {
  it("splitAnswer keeps the text and caps the number of chunks", () => {
    expect(splitAnswer("one two three four five", 3).join("")).toBe("one two three four five")
    expect(splitAnswer("one two three four five", 3).length).toBeLessThanOrEqual(3)
    expect(splitAnswer("single", 3)).toEqual(["single"])
    expect(splitAnswer("", 3)).toEqual([""])
  })

  it("toolName reads LangChain, OpenAI and plain shapes and rejects a nameless tool", () => {
    expect(toolName(lookup)).toBe("lookup")
    expect(toolName(openAiShaped)).toBe("send_email")
    expect(toolName({ name: "plain", input_schema: {} })).toBe("plain")
    expect(() => toolName({ description: "x" })).toThrow(/no name/)
  })
})
