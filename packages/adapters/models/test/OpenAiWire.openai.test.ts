/**
 * The scripted model on the OpenAI wire, driven by the official `openai` SDK (v7): a whole
 * discovery exchange (`list_capabilities` → `load_capability` → the tool → the answer) in which
 * the test is the agent host (it holds the catalog, runs every tool and sends the results back)
 * and the router behind the wire knows only what the requests carry; the same streamed, read
 * chunk by chunk and through the SDK's own stream accumulator; the router given the catalog (the
 * demo's direct load); script replay and an exhausted script; and every bad request the server
 * must refuse, with OpenAI's error JSON and status.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessageChunk } from "@langchain/core/messages"
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs"
import { Catalog } from "@plugboard/core"
import OpenAI from "openai"
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type OpenAiWireServer, ScriptedChatModel, serveOpenAiWire } from "../src/index.js"
import { routerPlugins, weatherCalls } from "./fixtures.js"
import { catalogHost } from "./wireHarness.js"

const servers: Array<OpenAiWireServer> = []
const serve = async (model: BaseChatModel, options = {}) => {
  const server = await serveOpenAiWire(model, options)
  servers.push(server)
  return server
}
afterAll(() => Promise.all(servers.map((s) => s.close())))

// Retries would hide a 500 behind two more requests (and a back-off).
const clientOf = (server: OpenAiWireServer) =>
  new OpenAI({ baseURL: server.url, apiKey: "none", maxRetries: 0 })

const USER = "What's the weather in Berlin?"

/** One step's tool call as the test sees it: name and parsed arguments. */
type Call = readonly [string, unknown]

describe("the router without a catalog, driven by the openai SDK", () => {
  let server: OpenAiWireServer
  let model: ScriptedChatModel
  beforeAll(async () => {
    model = ScriptedChatModel.router()
    server = await serve(model)
  })

  it("discovers, loads, calls and answers from the tools and results the client sends", async () => {
    const client = clientOf(server)
    const host = catalogHost(routerPlugins)
    const messages: Array<ChatCompletionMessageParam> = [{ role: "user", content: USER }]
    const calls: Array<Call> = []
    const before = weatherCalls.length
    for (let step = 0; step < 6; step++) {
      const completion = await client.chat.completions.create({
        model: "scripted-router",
        messages,
        tools: host.tools()
      })
      const choice = completion.choices[0]!
      expect(completion.object).toBe("chat.completion")
      expect(completion.usage?.prompt_tokens).toBeGreaterThan(0)
      if (choice.finish_reason === "stop") {
        expect(choice.message.tool_calls ?? []).toEqual([])
        expect(choice.message.content).toBe(
          "Here is what Weather (get_current_weather) returned: city: Berlin, temperatureC: 18.5, condition: clear."
        )
        break
      }
      expect(choice.finish_reason).toBe("tool_calls")
      expect(choice.message.content).toBeNull()
      messages.push(choice.message)
      for (const call of choice.message.tool_calls ?? []) {
        if (call.type !== "function") throw new Error("a function call was expected")
        expect(call.id).toMatch(/^call_/)
        const args = JSON.parse(call.function.arguments) as Record<string, unknown>
        calls.push([call.function.name, args])
        messages.push({
          role: "tool",
          tool_call_id: call.id,
          content: await host.run(call.function.name, args)
        })
      }
    }
    expect(calls).toEqual([
      ["list_capabilities", { query: USER }],
      ["load_capability", { names: ["weather"] }],
      ["get_current_weather", { city: "Berlin" }]
    ])
    // The tool ran on the client's side, once, with the router's arguments.
    expect(weatherCalls.slice(before)).toEqual([{ tool: "get_current_weather", city: "Berlin" }])
    // The model was offered what the client sent at each step: the weather tools after the load only.
    expect(model.calls.map((c) => c.offeredTools.includes("get_current_weather"))).toEqual([
      false,
      false,
      true,
      true
    ])
  })

  it("streams the same exchange: role, tool call deltas (id and name, then arguments), finish, usage, [DONE]", async () => {
    const client = clientOf(server)
    const host = catalogHost(routerPlugins)
    const messages: Array<ChatCompletionMessageParam> = [{ role: "user", content: USER }]
    const calls: Array<Call> = []
    let answer = ""
    for (let step = 0; step < 6 && answer === ""; step++) {
      const stream = await client.chat.completions.create({
        model: "scripted-router",
        messages,
        tools: host.tools(),
        stream: true,
        stream_options: { include_usage: true }
      })
      const chunks = []
      for await (const chunk of stream) chunks.push(chunk)
      expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant")
      const finish = chunks.at(-2)!
      const usage = chunks.at(-1)!
      expect(usage.choices).toEqual([])
      expect(usage.usage?.completion_tokens).toBeGreaterThan(0)
      // Assembled by index, as a client does.
      const assembled = new Map<number, { id: string; name: string; arguments: string }>()
      let text = ""
      for (const chunk of chunks.slice(0, -1)) {
        expect(chunk.object).toBe("chat.completion.chunk")
        const delta = chunk.choices[0]!.delta
        text += delta.content ?? ""
        for (const t of delta.tool_calls ?? []) {
          const seen = assembled.get(t.index)
          if (seen === undefined) {
            // A call is announced with its id and name before any of its arguments.
            expect(t.id).toMatch(/^call_/)
            expect(t.function?.arguments).toBe("")
            assembled.set(t.index, { id: t.id!, name: t.function!.name!, arguments: "" })
          } else seen.arguments += t.function?.arguments ?? ""
        }
      }
      if (assembled.size === 0) {
        expect(finish.choices[0]!.finish_reason).toBe("stop")
        // The answer came in more than one content delta.
        expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? "") !== "").length).toBeGreaterThan(1)
        answer = text
        break
      }
      expect(finish.choices[0]!.finish_reason).toBe("tool_calls")
      const toolCalls = [...assembled.values()]
      messages.push({
        role: "assistant",
        content: null,
        tool_calls: toolCalls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: c.arguments }
        }))
      })
      for (const c of toolCalls) {
        const args = JSON.parse(c.arguments) as Record<string, unknown>
        calls.push([c.name, args])
        messages.push({ role: "tool", tool_call_id: c.id, content: await host.run(c.name, args) })
      }
    }
    expect(calls.map(([name]) => name)).toEqual([
      "list_capabilities",
      "load_capability",
      "get_current_weather"
    ])
    expect(answer).toMatch(/^Here is what Weather \(get_current_weather\) returned: city: Berlin/)
  })

  it("works with the SDK's stream helper: its accumulated final message has the call and the reasoning", async () => {
    const client = clientOf(server)
    const host = catalogHost(routerPlugins)
    const runner = client.chat.completions.stream({
      model: "scripted-router",
      messages: [{ role: "user", content: USER }],
      tools: host.tools()
    })
    const final = await runner.finalChatCompletion()
    const message = final.choices[0]!.message
    expect(final.choices[0]!.finish_reason).toBe("tool_calls")
    const call = message.tool_calls?.[0]
    expect(
      call?.type === "function" ? [call.function.name, JSON.parse(call.function.arguments)] : call
    ).toEqual(["list_capabilities", { query: USER }])
    // The router's reasoning rides along as `reasoning_content`, which this SDK keeps as an extra field.
    expect((message as unknown as { reasoning_content?: string }).reasoning_content).toMatch(
      /list_capabilities/
    )
  })

  it("lists the served model", async () => {
    const models = await clientOf(server).models.list()
    expect(models.data.map((m) => m.id)).toEqual(["scripted-router"])
    expect((await clientOf(server).models.retrieve("scripted-router")).id).toBe("scripted-router")
  })
})

describe("the router with the catalog, as the demo's", () => {
  it("loads the plugin at once (no listing), then calls its tool and answers", async () => {
    const host = catalogHost(routerPlugins)
    const server = await serve(ScriptedChatModel.router({ catalog: Catalog.unsafeMake(routerPlugins) }))
    const client = clientOf(server)
    const messages: Array<ChatCompletionMessageParam> = [
      { role: "user", content: "Forecast for Lisbon this week" }
    ]
    const calls: Array<Call> = []
    for (let step = 0; step < 5; step++) {
      const message = (await client.chat.completions.create({ model: "any", messages, tools: host.tools() }))
        .choices[0]!.message
      messages.push(message)
      if (message.tool_calls === undefined) break
      for (const call of message.tool_calls) {
        if (call.type !== "function") throw new Error("a function call was expected")
        const args = JSON.parse(call.function.arguments) as Record<string, unknown>
        calls.push([call.function.name, args])
        messages.push({
          role: "tool",
          tool_call_id: call.id,
          content: await host.run(call.function.name, args)
        })
      }
    }
    expect(calls).toEqual([
      ["load_capability", { names: ["weather"] }],
      ["get_weather_forecast", { city: "Lisbon", days: 7 }]
    ])
    expect(messages.at(-1)).toMatchObject({
      role: "assistant",
      content: expect.stringMatching(/^Here is what Weather/)
    })
  })
})

describe("script replay", () => {
  it("replays its steps whatever the tools, then refuses with a 500 naming the exhausted script", async () => {
    const server = await serve(
      ScriptedChatModel.script([
        { tool: "lookup", args: { id: 7 } },
        { reasoning: "Done looking.", reply: "Found it." }
      ])
    )
    const client = clientOf(server)
    const tools = [
      { type: "function" as const, function: { name: "lookup", parameters: { type: "object" } } }
    ]
    const first = await client.chat.completions.create({
      model: "scripted",
      messages: [{ role: "user", content: "find 7" }],
      tools
    })
    const call = first.choices[0]!.message.tool_calls![0]!
    expect(call.type === "function" && [call.function.name, call.function.arguments]).toEqual([
      "lookup",
      '{"id":7}'
    ])
    const second = await client.chat.completions.create({
      model: "scripted",
      messages: [
        { role: "user", content: "find 7" },
        first.choices[0]!.message,
        { role: "tool", tool_call_id: call.id, content: "{}" }
      ],
      tools
    })
    expect(second.choices[0]).toMatchObject({
      finish_reason: "stop",
      message: { content: "Found it.", reasoning_content: "Done looking." }
    })
    expect(second.usage?.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0)

    for (const stream of [false, true]) {
      const refused = await client.chat.completions
        .create({ model: "scripted", messages: [{ role: "user", content: "more" }], stream })
        .then(
          () => undefined,
          (error: unknown) => error
        )
      expect(refused).toBeInstanceOf(OpenAI.InternalServerError)
      expect(refused).toMatchObject({ status: 500, code: "script_exhausted", type: "server_error" })
      expect((refused as Error).message).toMatch(/the script has 2 step\(s\) and all were used/)
    }
  })
})

/**
 * A provider-like model (any LangChain chat model is served): it streams "Hel", then either
 * waits for its call to be aborted or fails.
 */
class HalfAnswer extends BaseChatModel {
  readonly #then: "wait" | "fail"
  #abortSeen: () => void = () => undefined
  /** Settles when the model's call saw its signal abort. */
  readonly abortSeen = new Promise<void>((resolve) => {
    this.#abortSeen = resolve
  })
  constructor(then: "wait" | "fail") {
    super({})
    this.#then = then
  }
  override _llmType() {
    return "half-answer"
  }
  override async _generate(): Promise<ChatResult> {
    throw new Error("this model only streams")
  }
  override async *_streamResponseChunks(_messages: unknown, options: this["ParsedCallOptions"]) {
    yield new ChatGenerationChunk({ text: "Hel", message: new AIMessageChunk({ content: "Hel" }) })
    if (this.#then === "fail") throw new Error("the provider fell over")
    const signal = options.signal!
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
    this.#abortSeen()
    throw signal.reason
  }
}

describe("any LangChain chat model", () => {
  it("a client that leaves mid-stream aborts the model's call, and the server goes on serving", async () => {
    const model = new HalfAnswer("wait")
    const server = await serve(model)
    const client = clientOf(server)
    const stream = await client.chat.completions.create({
      model: "half-answer",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      // Leaving the loop aborts the SDK's request.
      if (text === "Hel") break
    }
    await model.abortSeen
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["half-answer"])
  })

  it("a failure after the stream began arrives as an error event, which the SDK throws", async () => {
    const server = await serve(new HalfAnswer("fail"))
    const stream = await clientOf(server).chat.completions.create({
      model: "half-answer",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    const failed = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    })().then(
      () => undefined,
      (error: unknown) => error
    )
    expect(text).toBe("Hel")
    expect(failed).toBeInstanceOf(OpenAI.APIError)
    expect((failed as Error).message).toMatch(/the provider fell over/)
  })

  it("a scripted step that is an error is a 500 naming it", async () => {
    const server = await serve(ScriptedChatModel.script([new Error("the step fails")]))
    const refused = await clientOf(server)
      .chat.completions.create({ model: "scripted", messages: [{ role: "user", content: "hi" }] })
      .then(
        () => undefined,
        (error: unknown) => error
      )
    expect(refused).toMatchObject({ status: 500, type: "server_error", code: "provider" })
    expect((refused as Error).message).toMatch(/The model's call failed: the step fails/)
  })
})

describe("bad requests", () => {
  let server: OpenAiWireServer
  beforeAll(async () => {
    server = await serve(ScriptedChatModel.router(), { maxBodyBytes: 64 * 1024 })
  })

  /** The SDK's error for a request body it sends as given. */
  const refusal = (body: Record<string, unknown>) =>
    clientOf(server)
      .chat.completions.create({ model: "scripted-router", ...body } as never)
      .then(
        () => {
          throw new Error("the request was accepted")
        },
        (error: unknown) => error as InstanceType<typeof OpenAI.APIError>
      )

  it.each([
    ["no messages", {}, "messages", /'messages' must be a non-empty array/],
    ["empty messages", { messages: [] }, "messages", /non-empty array/],
    [
      "an unknown role",
      { messages: [{ role: "robot", content: "hi" }] },
      "messages[0].role",
      /must be one of/
    ],
    [
      "a tool message answering no call",
      {
        messages: [
          { role: "user", content: "hi" },
          { role: "tool", tool_call_id: "call_x", content: "{}" }
        ]
      },
      "messages[1].tool_call_id",
      /matches no tool call/
    ],
    [
      "a tool call left unanswered",
      {
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }]
          },
          { role: "user", content: "and?" }
        ]
      },
      "messages[2]",
      /did not have response messages: c1/
    ],
    [
      "arguments that are not a JSON object",
      {
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "[1" } }]
          },
          { role: "tool", tool_call_id: "c1", content: "{}" }
        ]
      },
      "messages[1].tool_calls[0].function.arguments",
      /must be a JSON object/
    ],
    [
      "a user part without text",
      { messages: [{ role: "user", content: [{ type: "text" }] }] },
      "messages[0].content[0].text",
      /must be a string/
    ],
    [
      "a tool that is not a function",
      { messages: [{ role: "user", content: "hi" }], tools: [{ type: "web_search" }] },
      "tools[0].type",
      /function tool/
    ],
    [
      "a tool with a bad name",
      {
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: "has space" } }]
      },
      "tools[0].function.name",
      /must match/
    ],
    [
      "a tool_choice naming no tool",
      {
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: { type: "function", function: { name: "g" } }
      },
      "tool_choice",
      /not in 'tools'/
    ],
    ["n above 1", { messages: [{ role: "user", content: "hi" }], n: 2 }, "n", /'n' must be 1/]
  ])("refuses %s with a 400 naming the field", async (_what, body, param, message) => {
    const error = await refusal(body)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error).toMatchObject({ status: 400, param, type: "invalid_request_error" })
    expect(error.message).toMatch(message)
  })

  /** A raw request (what no SDK would send), and its status and JSON body. */
  const raw = async (path: string, init: RequestInit) => {
    const response = await fetch(new URL(path, `${server.url}/`), init)
    return {
      status: response.status,
      allow: response.headers.get("allow"),
      body: (await response.json()) as { error: Record<string, unknown> }
    }
  }

  it("refuses malformed JSON, a body over the limit, unknown routes and wrong methods", async () => {
    const post = (body: string): RequestInit => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body
    })
    const malformed = await raw("chat/completions", post('{"messages": ['))
    expect(malformed).toMatchObject({
      status: 400,
      body: { error: { type: "invalid_request_error", code: "invalid_json", param: null } }
    })
    expect(malformed.body.error.message).toMatch(/^The body is not valid JSON/)

    const big = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(100 * 1024) }] })
    expect(await raw("chat/completions", post(big))).toMatchObject({
      status: 413,
      body: { error: { code: "request_too_large" } }
    })

    expect(await raw("completions", post("{}"))).toMatchObject({
      status: 404,
      body: { error: { code: "unknown_url" } }
    })
    expect(await raw("models/gpt-5", { method: "GET" })).toMatchObject({
      status: 404,
      body: { error: { code: "model_not_found" } }
    })
    expect(await raw("chat/completions", { method: "GET" })).toMatchObject({
      status: 405,
      allow: "POST",
      body: { error: { type: "invalid_request_error" } }
    })
    expect(await raw("models", { method: "DELETE" })).toMatchObject({ status: 405, allow: "GET" })
    // The route without /v1 is served too.
    const bare = await fetch(
      new URL("/chat/completions", server.url),
      post(JSON.stringify({ messages: [{ role: "user", content: "hello" }] }))
    )
    expect(bare.status).toBe(200)
  })
})
