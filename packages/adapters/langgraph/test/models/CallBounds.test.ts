/**
 * Model call bounds against real local HTTP servers speaking OpenAI's and Anthropic's streaming
 * wire through the official SDK classes (`makeChatModel`): an endpoint that accepts and never
 * answers trips the connect bound, one that opens the message and stalls trips the first-token
 * bound, one that stalls after a token trips the idle bound; each aborts the HTTP request, never
 * trips before its value, and fails with a `ModelCallTimeout` naming the bound, the value and its
 * variable. A refused connection fails at once with the connection error, not after retries.
 */
import { HumanMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog } from "@plugboard/core"
import { runTurn, streamTurn } from "@plugboard/langgraph"
import {
  type CallBounds,
  DEFAULT_CALL_BOUNDS,
  ModelCallTimeout,
  makeChatModel,
  withCallBounds
} from "@plugboard/models"
import { afterEach, describe, expect, it } from "vitest"
import { startFake } from "../../../models/test/fakeProviders.js"
import {
  type Behaviour,
  refusingBaseUrl,
  type StallingServer,
  type StallWire,
  startStalling
} from "../../../models/test/stallingProviders.js"
import { makeCounters, weatherPlugin } from "../fixtures.js"
import { agentFor } from "../harness.js"

const wires: ReadonlyArray<StallWire> = ["openai", "anthropic"]

const modelFor = (wire: StallWire, baseUrl: string, bounds: Partial<CallBounds>) =>
  withCallBounds(
    makeChatModel(
      wire === "openai"
        ? { provider: "openai", model: "gpt-4o-mini", apiKey: "sk-test", baseUrl }
        : { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: "sk-ant-test", baseUrl }
    ),
    bounds
  )

const servers: Array<StallingServer> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const serve = async (wire: StallWire, behaviour: Behaviour) => {
  const server = await startStalling(wire, behaviour)
  servers.push(server)
  return server
}

/** Runs one streamed call; returns the text streamed before it ended and how it ended. */
const streamCall = async (model: ReturnType<typeof modelFor>) => {
  const started = performance.now()
  let text = ""
  try {
    for await (const chunk of await model.stream([new HumanMessage("hi")])) text += chunk.text
    return { text, error: undefined, ms: performance.now() - started }
  } catch (error) {
    return { text, error, ms: performance.now() - started }
  }
}

// Timers may fire up to a millisecond before the wall clock says they are due.
const EARLY = 2

describe.each(wires)("call bounds on the %s wire", (wire) => {
  it("accepts and never answers: the connect bound trips and the request is cancelled", async () => {
    const server = await serve(wire, { kind: "no-headers" })
    const model = modelFor(wire, server.baseUrl, {
      connectTimeoutMs: 300,
      firstTokenTimeoutMs: 5_000,
      idleTimeoutMs: 5_000
    })
    const { error, ms } = await streamCall(model)
    expect(error).toBeInstanceOf(ModelCallTimeout)
    expect(error).toMatchObject({ reason: "connect", timeoutMs: 300, variable: "LLM_CONNECT_TIMEOUT_MS" })
    expect((error as Error).message).toBe(
      "The model call was aborted: the provider's first chunk did not come within 300 ms (LLM_CONNECT_TIMEOUT_MS)."
    )
    expect(ms).toBeGreaterThanOrEqual(300 - EARLY)
    expect(server.requests()).toBe(1)
    await expect.poll(() => server.closed()).toBe(1)
  })

  it("opens the message and stalls: the first-token bound trips", async () => {
    const server = await serve(wire, { kind: "no-token" })
    const model = modelFor(wire, server.baseUrl, {
      connectTimeoutMs: 5_000,
      firstTokenTimeoutMs: 400,
      idleTimeoutMs: 5_000
    })
    const { error, text, ms } = await streamCall(model)
    expect(error).toMatchObject({ _tag: "ModelCallTimeout", reason: "first-token", timeoutMs: 400 })
    expect((error as Error).message).toMatch(/within 400 ms \(LLM_FIRST_TOKEN_TIMEOUT_MS\)/)
    expect(text).toBe("")
    expect(ms).toBeGreaterThanOrEqual(400 - EARLY)
    await expect.poll(() => server.closed()).toBe(1)
  })

  it("stalls after a token: the idle bound trips, and the token came through first", async () => {
    const server = await serve(wire, { kind: "one-token", text: "Hel" })
    const model = modelFor(wire, server.baseUrl, {
      connectTimeoutMs: 5_000,
      firstTokenTimeoutMs: 5_000,
      idleTimeoutMs: 300
    })
    const { error, text, ms } = await streamCall(model)
    expect(error).toMatchObject({ reason: "idle", timeoutMs: 300, variable: "LLM_IDLE_TIMEOUT_MS" })
    expect(text).toBe("Hel")
    expect(ms).toBeGreaterThanOrEqual(300 - EARLY)
    // The idle deadline comes before the first-token one the call's timer was set for: the timer
    // is moved up, not left to the 5 s bound.
    expect(ms).toBeLessThan(3_000)
    await expect.poll(() => server.closed()).toBe(1)
  })

  it("an unstreamed call is bounded too (invoke stalls at the first token)", async () => {
    const server = await serve(wire, { kind: "no-token" })
    const model = modelFor(wire, server.baseUrl, { firstTokenTimeoutMs: 300 })
    await expect(model.invoke([new HumanMessage("hi")])).rejects.toMatchObject({ reason: "first-token" })
    await expect.poll(() => server.closed()).toBe(1)
  })

  it("a steady drip longer than every bound, with short gaps, is answered whole", async () => {
    const tokens = ["a", "b", "c", "d", "e", "f", "g", "h"]
    const server = await serve(wire, { kind: "drip", tokens, everyMs: 60 })
    const model = modelFor(wire, server.baseUrl, {
      connectTimeoutMs: 300,
      firstTokenTimeoutMs: 300,
      idleTimeoutMs: 300
    })
    const { error, text, ms } = await streamCall(model)
    expect(error).toBeUndefined()
    expect(text).toBe(tokens.join(""))
    expect(ms).toBeGreaterThan(300) // the whole answer took longer than any bound
    const invoked = await model.invoke([new HumanMessage("hi")])
    expect(invoked.text).toBe(tokens.join(""))
  })

  it("a refused connection fails with the connection error, before any bound", async () => {
    const model = modelFor(wire, await refusingBaseUrl(wire), {
      connectTimeoutMs: 20_000,
      firstTokenTimeoutMs: 20_000
    })
    const { error } = await streamCall(model)
    expect(error).toBeInstanceOf(Error)
    expect(error).not.toBeInstanceOf(ModelCallTimeout)
    expect(String(error)).toMatch(/connect|ECONNREFUSED|Connection error/i)
  })

  it("binds tools through the decorator: the provider receives them", async () => {
    const server = await serve(wire, { kind: "drip", tokens: ["ok"], everyMs: 1 })
    const model = modelFor(wire, server.baseUrl, {})
    const bound = model.bindTools([
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather",
          parameters: { type: "object", properties: {} }
        }
      }
    ])
    const answer = await bound.invoke([new HumanMessage("hi")])
    expect(answer.text).toBe("ok")
    const tools = server.bodies[0].tools.map(
      (t: { name?: string; function?: { name: string } }) => t.name ?? t.function?.name
    )
    expect(tools).toEqual(["get_weather"])
  })
})

describe.each(wires)("an agent turn through a bounded %s model", (wire) => {
  const agentOn = async (baseUrl: string, bounds: Partial<CallBounds>) => {
    const counters = makeCounters()
    const plugins = [weatherPlugin(counters)]
    const agent = await agentFor({
      plugins,
      catalog: Catalog.unsafeMake(plugins),
      model: modelFor(wire, baseUrl, bounds),
      saver: new MemorySaver(),
      sessionId: "s1"
    })
    return { agent, counters }
  }

  it("loads, calls a tool and answers as an unbounded model does, streamed and not", async () => {
    for (const mode of ["run", "stream"] as const) {
      const fake = await startFake(wire, [
        { call: { name: "load_capability", args: { names: ["weather"] } } },
        { call: { name: "get_current_weather", args: { city: "Berlin" } } },
        { text: "Sunny in Berlin." }
      ])
      try {
        const { agent, counters } = await agentOn(wire === "openai" ? `${fake.origin}/v1` : fake.origin, {})
        const input = { message: "What's the weather in Berlin?" }
        let answer: string
        if (mode === "run") answer = (await runTurn(agent, input)).answer
        else {
          const it = streamTurn(agent, input)
          let next = await it.next()
          while (next.done !== true) next = await it.next()
          answer = next.value.answer
        }
        expect(answer).toBe("Sunny in Berlin.")
        expect(counters.calls.get_current_weather).toBe(1)
        expect(fake.received.map((r) => r.body.stream)).toEqual([true, true, true])
      } finally {
        await fake.close()
      }
    }
  })

  it("a stalled provider ends the streamed turn with the ModelCallTimeout", async () => {
    const server = await serve(wire, { kind: "one-token", text: "Sun" })
    const { agent } = await agentOn(server.baseUrl, { idleTimeoutMs: 200 })
    const it = streamTurn(agent, { message: "What's the weather in Berlin?" })
    const failure = await (async () => {
      try {
        while ((await it.next()).done !== true) {}
        return undefined
      } catch (error) {
        return error
      }
    })()
    expect(failure).toBeInstanceOf(ModelCallTimeout)
    expect(failure).toMatchObject({ reason: "idle", timeoutMs: 200 })
  })
})

describe("withCallBounds", () => {
  it("defaults each bound it is not given, and refuses a bound that is not a positive number", () => {
    const model = makeChatModel({ provider: "openai", model: "m", apiKey: "k" })
    expect(withCallBounds(model).bounds).toEqual(DEFAULT_CALL_BOUNDS)
    expect(withCallBounds(model, { idleTimeoutMs: 5 }).bounds).toEqual({
      ...DEFAULT_CALL_BOUNDS,
      idleTimeoutMs: 5
    })
    expect(() => withCallBounds(model, { connectTimeoutMs: 0 })).toThrow(
      /connectTimeoutMs must be a positive number/
    )
    expect(() => withCallBounds(model, { idleTimeoutMs: Number.NaN })).toThrow(RangeError)
  })
})
