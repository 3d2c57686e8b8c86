/**
 * The model's own reasoning as `reasoning` events: extraction from each provider's shape, one
 * event per model call before that call's tool calls and answer text (runTurn and streamTurn),
 * the router's reasoning end to end, and no event at all from a model that exposes none.
 */
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager"
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, AIMessageChunk, type BaseMessage } from "@langchain/core/messages"
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, EventSink } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { routerPlugins } from "../../models/test/fixtures.js"
import { createMainAgent, reasoningOf, runTurn, streamTurn, type TurnResult, textOf } from "../src/index.js"

const catalog = Catalog.unsafeMake(routerPlugins)

const agent = (model: BaseChatModel, sessionId: string, eventSink?: EventSink.EventSinkService) =>
  createMainAgent({
    catalog,
    model,
    checkpointer: new MemorySaver(),
    basePrompt: "You are a test assistant.",
    ...(eventSink === undefined ? {} : { eventSink }),
    request: { did: "did:key:alice", sessionId, requestId: "req-r" }
  })

/** Drains `streamTurn`: the yielded events and the turn's result. */
const drain = async (model: BaseChatModel, sessionId: string, message: string) => {
  const stream = streamTurn(await agent(model, sessionId), { message })
  const yielded: Array<EventSink.AgentEvent> = []
  let next = await stream.next()
  while (next.done !== true) {
    yielded.push(next.value)
    next = await stream.next()
  }
  return { yielded, result: next.value as TurnResult }
}

/** Event kinds in order, tool calls with their name and status, consecutive messages as one. */
const kinds = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events
    .map((e) => (e._tag === "tool_call" ? `${e.toolName}:${e.status}` : e._tag))
    .filter((k, i, all) => k !== "message" || all[i - 1] !== "message")

const reasonings = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.flatMap((e) => (e._tag === "reasoning" ? [e.content] : []))

const answerOf = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.flatMap((e) => (e._tag === "message" ? [e.content] : [])).join("")

describe("reasoningOf: each provider's shape", () => {
  it("OpenAI Responses: reasoning content blocks, not doubled by the same summary in additional_kwargs", () => {
    const m = new AIMessage({
      content: [
        { type: "reasoning", reasoning: "The user wants Berlin's weather." },
        { type: "text", text: "It is sunny." }
      ],
      additional_kwargs: {
        reasoning: {
          id: "rs_1",
          type: "reasoning",
          summary: [{ type: "summary_text", text: "The user wants Berlin's weather." }]
        }
      }
    })
    expect(reasoningOf(m)).toBe("The user wants Berlin's weather.")
    expect(textOf(m)).toBe("It is sunny.")
  })

  it("OpenAI Responses: a summary only in additional_kwargs.reasoning, parts joined by a blank line", () => {
    const m = new AIMessage({
      content: "Done.",
      additional_kwargs: {
        reasoning: {
          type: "reasoning",
          summary: [
            { type: "summary_text", text: "First, find the city." },
            { type: "summary_text", text: "Then call the tool." }
          ]
        }
      }
    })
    expect(reasoningOf(m)).toBe("First, find the city.\n\nThen call the tool.")
  })

  it("older OpenAI output: a reasoning block carrying its summary", () => {
    const m = new AIMessage({
      content: [
        { type: "reasoning", summary: [{ type: "summary_text", text: "Plan the lookup." }] },
        { type: "text", text: "Ok." }
      ]
    })
    expect(reasoningOf(m)).toBe("Plan the lookup.")
  })

  it("Anthropic extended thinking: thinking blocks (redacted ones carry no text)", () => {
    const m = new AIMessage({
      content: [
        { type: "thinking", thinking: "Berlin is a city; use the weather tool.", signature: "sig" },
        { type: "redacted_thinking", data: "opaque" },
        { type: "text", text: "Let me check." }
      ]
    })
    expect(reasoningOf(m)).toBe("Berlin is a city; use the weather tool.")
    expect(textOf(m)).toBe("Let me check.")
  })

  it("DeepSeek, vLLM and Ollama (through @langchain/ollama): additional_kwargs.reasoning_content", () => {
    const m = new AIMessage({
      content: "The answer is 42.",
      additional_kwargs: { reasoning_content: "  6 times 7 is 42.\n" }
    })
    expect(reasoningOf(m)).toBe("6 times 7 is 42.")
    expect(textOf(m)).toBe("The answer is 42.")
    expect(reasoningOf(new AIMessage({ content: "x", additional_kwargs: { thinking: "raw Ollama" } }))).toBe(
      "raw Ollama"
    )
  })

  it("streamed chunks aggregate to the whole reasoning", () => {
    const anthropic = [
      new AIMessageChunk({ content: [{ type: "thinking", thinking: "Let me ", index: 0 }] }),
      new AIMessageChunk({ content: [{ type: "thinking", thinking: "think.", index: 0 }] }),
      new AIMessageChunk({ content: [{ type: "text", text: "Hi", index: 1 }] })
    ].reduce((a, b) => a.concat(b))
    expect(reasoningOf(anthropic)).toBe("Let me think.")
    expect(textOf(anthropic)).toBe("Hi")
    const deepseek = [
      new AIMessageChunk({ content: "", additional_kwargs: { reasoning_content: "Step " } }),
      new AIMessageChunk({ content: "", additional_kwargs: { reasoning_content: "one." } }),
      new AIMessageChunk({ content: "Answer" })
    ].reduce((a, b) => a.concat(b))
    expect(reasoningOf(deepseek)).toBe("Step one.")
    expect(textOf(deepseek)).toBe("Answer")
  })

  it("none: plain text, tool calls only, empty or whitespace reasoning, malformed fields", () => {
    expect(reasoningOf(new AIMessage("Hello"))).toBeUndefined()
    expect(
      reasoningOf(new AIMessage({ content: "", tool_calls: [{ id: "c", name: "t", args: {} }] }))
    ).toBeUndefined()
    expect(
      reasoningOf(new AIMessage({ content: "x", additional_kwargs: { reasoning_content: " \n" } }))
    ).toBe(undefined)
    expect(reasoningOf(new AIMessage({ content: [{ type: "thinking", thinking: "" }] }))).toBeUndefined()
    expect(
      reasoningOf(
        new AIMessage({
          content: [{ type: "reasoning", reasoning: 3 }],
          additional_kwargs: { reasoning_content: { not: "text" }, reasoning: { summary: "nope" } }
        })
      )
    ).toBeUndefined()
  })
})

/**
 * A tool-calling model that replays provider-shaped chunks (one list per invocation): streamed
 * as they are, or aggregated into one AIMessage when invoked without streaming.
 */
class ShapedModel extends BaseChatModel {
  #next = 0
  constructor(private readonly replies: ReadonlyArray<ReadonlyArray<AIMessageChunk>>) {
    super({})
  }
  override _llmType(): string {
    return "shaped"
  }
  override bindTools(): this {
    return this
  }
  #take(): ReadonlyArray<AIMessageChunk> {
    const reply = this.replies[this.#next++]
    if (reply === undefined) throw new Error("ShapedModel: no more replies")
    return reply
  }
  override async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const whole = this.#take().reduce((a, b) => a.concat(b))
    const message = new AIMessage({
      id: whole.id,
      content: whole.content,
      additional_kwargs: whole.additional_kwargs,
      tool_calls: whole.tool_calls
    })
    return { generations: [{ text: textOf(message), message }] }
  }
  override async *_streamResponseChunks(
    _messages: BaseMessage[],
    _options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun
  ): AsyncGenerator<ChatGenerationChunk> {
    for (const message of this.#take()) {
      const chunk = new ChatGenerationChunk({ text: textOf(message), message })
      yield chunk
      await runManager?.handleLLMNewToken(chunk.text, undefined, undefined, undefined, undefined, { chunk })
    }
  }
}

const THINK_LOAD = "The user wants the weather; weather is not loaded, so load it."
const THINK_ANSWER = "Loaded. Nothing else is needed; answer."

/** Anthropic-shaped replies: thinking, then a load; thinking, then a streamed answer. */
const anthropicReplies = () => [
  [
    new AIMessageChunk({
      id: "a1",
      content: [{ type: "thinking", thinking: "The user wants the weather; ", index: 0 }]
    }),
    new AIMessageChunk({
      id: "a1",
      content: [
        { type: "thinking", thinking: "weather is not loaded, so load it.", signature: "s", index: 0 }
      ]
    }),
    new AIMessageChunk({
      id: "a1",
      content: "",
      tool_call_chunks: [
        {
          type: "tool_call_chunk",
          id: "call-1",
          name: "load_capability",
          args: JSON.stringify({ names: ["weather"] }),
          index: 1
        }
      ]
    })
  ],
  [
    new AIMessageChunk({ id: "a2", content: [{ type: "thinking", thinking: THINK_ANSWER, index: 0 }] }),
    new AIMessageChunk({ id: "a2", content: [{ type: "text", text: "Weather ", index: 1 }] }),
    new AIMessageChunk({ id: "a2", content: [{ type: "text", text: "is ready.", index: 1 }] })
  ]
]

/** DeepSeek-shaped: reasoning_content deltas, then text; a second call with no reasoning at all. */
const deepseekReplies = () => [
  [
    new AIMessageChunk({ id: "d1", content: "", additional_kwargs: { reasoning_content: "Greet " } }),
    new AIMessageChunk({ id: "d1", content: "", additional_kwargs: { reasoning_content: "back." } }),
    new AIMessageChunk({ id: "d1", content: "Hello " }),
    new AIMessageChunk({ id: "d1", content: "there." })
  ]
]

describe("reasoning events through the agent loop", () => {
  it("runTurn: one reasoning event per model call, before its tool calls; the sink gets the same", async () => {
    const sink = Effect.runSync(EventSink.makeMemory)
    const turn = await runTurn(await agent(new ShapedModel(anthropicReplies()), "s-a", sink), {
      message: "Weather please"
    })
    expect(kinds(turn.events)).toEqual([
      "reasoning",
      "load_capability:isRunning",
      "load_capability:done",
      "reasoning"
    ])
    expect(reasonings(turn.events)).toEqual([THINK_LOAD, THINK_ANSWER])
    for (const e of turn.events) {
      expect(Effect.runSync(Effect.either(EventSink.decode(e)))._tag).toBe("Right")
      if (e._tag === "reasoning") expect(Date.parse(e.timestamp)).not.toBeNaN()
    }
    expect(Effect.runSync(sink.events)).toEqual(turn.events)
    // The thinking stays in the stored message (providers need it back) but not in the answer.
    expect(turn.answer).toBe("Weather is ready.")
    expect(reasoningOf(turn.message)).toBe(THINK_ANSWER)
  })

  it("streamTurn: reasoning precedes the call's tool calls and its streamed answer text", async () => {
    const { yielded, result } = await drain(new ShapedModel(anthropicReplies()), "s-as", "Weather please")
    expect(kinds(yielded)).toEqual([
      "reasoning",
      "load_capability:isRunning",
      "load_capability:done",
      "reasoning",
      "message"
    ])
    expect(reasonings(yielded)).toEqual([THINK_LOAD, THINK_ANSWER])
    // The answer still comes as the model's chunks, without any reasoning in it.
    expect(yielded.filter((e) => e._tag === "message").map((e) => e.content)).toEqual([
      "Weather ",
      "is ready."
    ])
    expect(answerOf(yielded)).toBe(result.answer)
    expect(result.events).toEqual(yielded.filter((e) => e._tag !== "message"))
  })

  it("reasoning_content (DeepSeek / vLLM / Ollama): runTurn and streamTurn alike, never in the answer", async () => {
    const ran = await runTurn(await agent(new ShapedModel(deepseekReplies()), "s-d"), { message: "hi" })
    // Both shapes: `content` for older clients, `reasoning` + ids + isComplete for the SDK 1.4.
    expect(ran.events).toEqual([
      {
        _tag: "reasoning",
        content: "Greet back.",
        timestamp: expect.any(String),
        requestId: "req-r",
        sessionId: "s-d",
        reasoning: "Greet back.",
        isComplete: true
      }
    ])
    expect(ran.answer).toBe("Hello there.")
    const { yielded } = await drain(new ShapedModel(deepseekReplies()), "s-ds", "hi")
    expect(yielded.map((e) => (e._tag === "message" ? `message:${e.content}` : e._tag))).toEqual([
      "reasoning",
      "message:Hello ",
      "message:there."
    ])
  })

  it("a model that exposes no reasoning: no reasoning event, answer chunks as before", async () => {
    const script = () =>
      ScriptedChatModel.script([
        { tool: "load_capability", args: { names: ["weather"] } },
        "All quiet on the weather front."
      ])
    const ran = await runTurn(await agent(script(), "s-n"), { message: "weather?" })
    expect(kinds(ran.events)).toEqual(["load_capability:isRunning", "load_capability:done"])
    const { yielded } = await drain(script(), "s-ns", "weather?")
    expect(kinds(yielded)).toEqual(["load_capability:isRunning", "load_capability:done", "message"])
    expect(yielded.filter((e) => e._tag === "message").length).toBeGreaterThan(1)
    expect(answerOf(yielded)).toBe("All quiet on the weather front.")
  })

  it("a scripted step's explicit reasoning travels the provider path", async () => {
    const model = ScriptedChatModel.script([
      { reasoning: "Load weather first.", reply: { tool: "load_capability", args: { names: ["weather"] } } },
      "No reasoning on this one.",
      { reasoning: "Short answer.", reply: "Done." }
    ])
    const first = await runTurn(await agent(model, "s-x"), { message: "weather?" })
    expect(kinds(first.events)).toEqual(["reasoning", "load_capability:isRunning", "load_capability:done"])
    expect(reasonings(first.events)).toEqual(["Load weather first."])
    expect(first.answer).toBe("No reasoning on this one.")
    const { yielded } = await drain(
      ScriptedChatModel.script([{ reasoning: "Short answer.", reply: "Done." }]),
      "s-xs",
      "again"
    )
    expect(yielded.map((e) => e._tag)).toEqual(["reasoning", "message"])
    expect(reasonings(yielded)).toEqual(["Short answer."])
    expect(answerOf(yielded)).toBe("Done.")
  })
})

describe("the router's reasoning end to end", () => {
  const expected = [
    "The user asks “What's the weather in Berlin?”; the Weather plugin (weather) fits; loading it.",
    'The user asks “What\'s the weather in Berlin?”; the Weather plugin (weather) fits; calling get_current_weather with {"city":"Berlin"}.',
    "get_current_weather answered; summarising the result for the user."
  ]

  it("runTurn: reasoning, load_capability, reasoning, get_current_weather, reasoning", async () => {
    const turn = await runTurn(await agent(ScriptedChatModel.router({ catalog }), "s-r"), {
      message: "What's the weather in Berlin?"
    })
    expect(kinds(turn.events)).toEqual([
      "reasoning",
      "load_capability:isRunning",
      "load_capability:done",
      "reasoning",
      "get_current_weather:isRunning",
      "get_current_weather:done",
      "reasoning"
    ])
    expect(reasonings(turn.events)).toEqual(expected)
    expect(turn.answer).not.toContain("summarising")
  })

  it("streamTurn: the same reasoning, each before its call's tool calls and answer chunks", async () => {
    const { yielded, result } = await drain(
      ScriptedChatModel.router({ catalog }),
      "s-rs",
      "What's the weather in Berlin?"
    )
    expect(kinds(yielded)).toEqual([
      "reasoning",
      "load_capability:isRunning",
      "load_capability:done",
      "reasoning",
      "get_current_weather:isRunning",
      "get_current_weather:done",
      "reasoning",
      "message"
    ])
    expect(reasonings(yielded)).toEqual(expected)
    expect(yielded.filter((e) => e._tag === "message").length).toBeGreaterThan(1)
    expect(answerOf(yielded)).toBe(result.answer)
    expect(result.answer).toMatch(/^Here is what Weather \(get_current_weather\) returned: city: Berlin/)
  })
})
