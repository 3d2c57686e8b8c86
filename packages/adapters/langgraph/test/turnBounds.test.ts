/**
 * Core's turn bounds enforced by the agent loop (scripted model, real graph, MemorySaver): a turn
 * that reaches a bound ends with core's `TurnBoundExceeded` carrying its `reason`; a call
 * repeated `repeatLimit` times is answered with core's message instead of run, and one more ends
 * the turn; without `turnBounds` nothing is bounded.
 */
import { ToolMessage } from "@langchain/core/messages"
import { MemorySaver } from "@langchain/langgraph"
import { Catalog, TokenCounter, TurnBounds } from "@plugboard/core"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { createMainAgent, runTurn, streamTurn } from "../src/index.js"
import { makeCounters, memoryPlugin } from "./fixtures.js"

const recall = { tool: "recall", args: { topic: "cats" } }

const turn = async (steps: ReadonlyArray<ScriptStep>, limits: Partial<TurnBounds.Limits> | undefined) => {
  const counters = makeCounters()
  const plugins = [memoryPlugin(counters)]
  const model = ScriptedChatModel.script(steps)
  const saver = new MemorySaver()
  const agent = await createMainAgent({
    catalog: Catalog.unsafeMake(plugins),
    model,
    checkpointer: saver,
    basePrompt: "You are a test assistant.",
    shared: { greeting: "hello" },
    request: {
      did: "did:key:alice",
      sessionId: "s1",
      requestId: "req-1",
      ...(limits === undefined ? {} : { turnBounds: TurnBounds.make(limits) })
    }
  })
  const outcome = await runTurn(agent, { message: "What do you know about cats?" }).then(
    (result) => ({ result, error: undefined }),
    (error: unknown) => ({ result: undefined, error })
  )
  return { ...outcome, counters, model, agent }
}

describe("turn bounds in the agent loop", () => {
  it("the repeatLimit-th identical call is told, not run; the model changing course answers", async () => {
    const { result, error, counters } = await turn(
      [[recall], [recall], [recall], "Cats are not on record."],
      { repeatLimit: 3 }
    )
    expect(error).toBeUndefined()
    expect(result?.answer).toBe("Cats are not on record.")
    expect(counters.calls.recall).toBe(2)
    const tools = result!.state.messages.filter((m) => ToolMessage.isInstance(m)) as Array<ToolMessage>
    expect(tools.at(-1)!.content).toBe(TurnBounds.repeatMessage("recall", 3))
    expect(tools.at(-1)!.artifact).toMatchObject({ plugboard: { outcome: "repeated" } })
  })

  it("going on after being told ends the turn with reason repetition", async () => {
    const { error, counters } = await turn([[recall], [recall], [recall], [recall], "never"], {
      repeatLimit: 3
    })
    expect(error).toBeInstanceOf(TurnBounds.TurnBoundExceeded)
    expect(error).toMatchObject({ reason: "repetition", limit: 3 })
    expect(counters.calls.recall).toBe(2)
  })

  it("different arguments are not repetition; the tool-call bound ends the turn", async () => {
    const steps = [1, 2, 3, 4].map((n) => [{ tool: "recall", args: { topic: `topic ${n}` } }])
    const { error, counters } = await turn([...steps, "never"], { maxToolCalls: 3 })
    expect(error).toMatchObject({ _tag: "TurnBoundExceeded", reason: "max-tool-calls", limit: 3 })
    expect(counters.calls.recall).toBe(3)
  })

  it("the model-call bound: the call past it is never made", async () => {
    const steps = [1, 2, 3].map((n) => [{ tool: "recall", args: { topic: `topic ${n}` } }])
    const { error, model } = await turn([...steps, "never"], { maxModelCalls: 2 })
    expect(error).toMatchObject({ reason: "max-model-calls", limit: 2 })
    expect(model.calls).toHaveLength(2)
  })

  it("the token bound, counted from the usage the model reports", async () => {
    const steps = [1, 2, 3].map((n) => [{ tool: "recall", args: { topic: `topic ${n}` } }])
    const { error, model } = await turn([...steps, "never"], { maxTokens: 1 })
    expect(error).toMatchObject({ reason: "max-tokens", limit: 1 })
    expect(model.calls).toHaveLength(1)
    expect(model.calls[0]!.usage?.total_tokens).toBeGreaterThan(1)
  })

  it("the wall clock, checked before the next step", async () => {
    const steps: Array<ScriptStep> = [
      () => {
        // A model call that takes longer than the turn may: the step after it is refused.
        const until = Date.now() + 30
        while (Date.now() <= until) {}
        return [recall]
      },
      "never"
    ]
    const { error, counters } = await turn(steps, { wallClockMs: 20 })
    expect(error).toMatchObject({ reason: "wall-clock", limit: 20 })
    expect(counters.calls.recall ?? 0).toBe(0)
  })

  it("a streamed turn ends with the same error", async () => {
    const counters = makeCounters()
    const plugins = [memoryPlugin(counters)]
    const agent = await createMainAgent({
      catalog: Catalog.unsafeMake(plugins),
      model: ScriptedChatModel.script([[recall], [recall], [recall], [recall], "never"]),
      checkpointer: new MemorySaver(),
      basePrompt: "You are a test assistant.",
      request: { did: "did:key:alice", sessionId: "s1", turnBounds: TurnBounds.make({ repeatLimit: 2 }) }
    })
    const it = streamTurn(agent, { message: "cats?" })
    await expect(
      (async () => {
        while ((await it.next()).done !== true) {}
      })()
    ).rejects.toMatchObject({ reason: "repetition", limit: 2 })
  })

  it("without turnBounds nothing is bounded", async () => {
    const { result, counters } = await turn(
      [[recall], [recall], [recall], [recall], [recall], "Done."],
      undefined
    )
    expect(result?.answer).toBe("Done.")
    expect(counters.calls.recall).toBe(5)
  })
})

describe("the token bound's count of the offered tools (issue 37)", () => {
  const spy = () => {
    const texts: Array<string> = []
    const counter: TokenCounter.TokenCounterService = {
      name: "spy",
      count: (text) => {
        texts.push(text)
        return text.length
      }
    }
    // Remembering as a host's counter does (`TokenCounter.memoized`, built once for all requests).
    return {
      counter: TokenCounter.memoized(counter),
      tools: () => texts.filter((t) => t.startsWith('[{"type":"function"'))
    }
  }
  const run = async (
    catalog: Catalog.Catalog,
    counter: TokenCounter.TokenCounterService,
    session: string
  ) => {
    const agent = await createMainAgent({
      catalog,
      model: ScriptedChatModel.script(["Nothing on cats."]),
      checkpointer: new MemorySaver(),
      request: {
        did: "did:key:alice",
        sessionId: session,
        turnBounds: TurnBounds.make({ maxTokens: 1_000_000 }),
        tokenCounter: counter
      }
    })
    return runTurn(agent, { message: "cats?" })
  }

  it("is counted once for the same definitions across requests, and again for new ones", async () => {
    const { counter, tools } = spy()
    const catalog = Catalog.unsafeMake([memoryPlugin(makeCounters())])
    await run(catalog, counter, "s1")
    await run(catalog, counter, "s2")
    // The second request offers the very same definition objects: their count is the first's.
    expect(tools()).toHaveLength(1)
    // A rebuilt catalog has new offered tools (their schemas may differ): counted again.
    await run(Catalog.unsafeMake([memoryPlugin(makeCounters())]), counter, "s3")
    expect(tools()).toHaveLength(2)
    expect(tools()[1]).toBe(tools()[0])
  })

  it("a request that reuses the count is bounded by it as if it had counted the schemas itself", async () => {
    const { counter, tools } = spy()
    const catalog = Catalog.unsafeMake([memoryPlugin(makeCounters())])
    await run(catalog, counter, "s1")
    // The spy counts characters: the schemas alone are over this bound, the model's own usage
    // report (its heuristic tokens) is well under it.
    const bound = tools()[0]!.length - 1
    const agent = await createMainAgent({
      catalog,
      model: ScriptedChatModel.script([[recall], "never"]),
      checkpointer: new MemorySaver(),
      request: {
        did: "did:key:alice",
        sessionId: "s2",
        turnBounds: TurnBounds.make({ maxTokens: bound }),
        tokenCounter: counter
      }
    })
    const error = await runTurn(agent, { message: "cats?" }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(tools()).toHaveLength(1)
    expect(error).toMatchObject({ reason: "max-tokens", limit: bound })
  })
})

// That a remembering counter answers the counter's count of any text, and counts a kept one once,
// is core's test (TokenCounter.property.test.ts): the loop counts with the request's counter.
describe("the token bound's count of texts, kept across turns (issue 37)", () => {
  it("a second request counts none of the texts the first counted", async () => {
    const texts: Array<string> = []
    const counter = TokenCounter.memoized({
      name: "spy-texts",
      count: (text) => {
        texts.push(text)
        return text.length
      }
    })
    const catalog = Catalog.unsafeMake([memoryPlugin(makeCounters())])
    const tallies: Array<number> = []
    for (const session of ["t1", "t2"]) {
      const agent = await createMainAgent({
        catalog,
        model: ScriptedChatModel.script(["Nothing on cats."]),
        checkpointer: new MemorySaver(),
        basePrompt: "You are a test assistant.",
        request: {
          did: "did:key:alice",
          sessionId: session,
          turnBounds: TurnBounds.make({ maxTokens: 1_000_000 }),
          tokenCounter: counter
        }
      })
      const before = texts.length
      await runTurn(agent, { message: "cats?" })
      tallies.push(texts.length - before)
    }
    expect(tallies[0]).toBeGreaterThan(0)
    expect(tallies[1]).toBe(0)
  })
})
