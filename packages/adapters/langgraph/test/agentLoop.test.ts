/**
 * The agent loop as one graph node (`AgentLoop.ts`): a turn is one superstep, yet the thread it
 * saves is what the model and tool steps made, in order; a turn that fails, is aborted or runs out
 * of steps keeps the steps it completed; and the loop's view of its own steps (`applyUpdate`)
 * agrees with what LangGraph saves from the same updates, for any updates (property).
 */
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { Command, END, GraphRecursionError, MemorySaver, START, StateGraph } from "@langchain/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { runTurn, streamTurn } from "../src/index.js"
import { AgentState, type AgentStateUpdate, type AgentStateValue, applyUpdate } from "../src/State.js"
import { makeCounters, memoryPlugin, slowGate, slowPlugin } from "./fixtures.js"
import { agentFor, savers } from "./harness.js"

// Lets whatever the handler's return scheduled run (a turn of the event loop, not a wait).
const settle = () => new Promise((resolve) => setImmediate(resolve))

const kinds = (messages: ReadonlyArray<BaseMessage>) => messages.map((m) => m.getType())

const recall = { tool: "recall", args: { topic: "cats" } }

describe.each(savers)("the agent loop on %s", (_name, makeSaver) => {
  it("runs a turn of three model calls and two tool batches as one superstep, saving every step in order", async () => {
    const fixture = makeSaver()
    try {
      const model = ScriptedChatModel.script([recall, recall, "Cats are unknown."])
      const agent = await agentFor({
        plugins: [memoryPlugin(makeCounters())],
        model,
        saver: fixture.saver,
        sessionId: "one"
      })
      const { state } = await runTurn(agent, { message: "cats?" })
      expect(kinds(state.messages)).toEqual(["human", "ai", "tool", "ai", "tool", "ai"])
      // Steps: the input (-1), START's (0), the loop's (1). A model node and a tool node routing to
      // each other ended this turn at step 5.
      const saved = await agent.graph.getState({ configurable: { thread_id: "one" } })
      expect(saved.metadata?.step).toBe(1)
      expect(saved.next).toEqual([])
      expect(kinds((saved.values as AgentStateValue).messages)).toEqual(kinds(state.messages))
      // The model's second call saw its first call and the tool's answer, as a graph step would.
      expect(kinds(model.calls[1]!.messages)).toEqual(["system", "human", "ai", "tool"])
    } finally {
      fixture.close()
    }
  })

  it("a model that fails at its third call: the turn throws its error, and the thread keeps the steps before it", async () => {
    const fixture = makeSaver()
    try {
      const model = ScriptedChatModel.script([recall, recall, new Error("provider is down")])
      const agent = await agentFor({
        plugins: [memoryPlugin(makeCounters())],
        model,
        saver: fixture.saver,
        sessionId: "fail"
      })
      await expect(runTurn(agent, { message: "cats?" })).rejects.toThrow("provider is down")
      const state = await agent.getState()
      expect(kinds(state.messages)).toEqual(["human", "ai", "tool", "ai", "tool"])
      // A later turn starts from them.
      const next = await agentFor({
        plugins: [memoryPlugin(makeCounters())],
        model: ScriptedChatModel.script(["Back again."]),
        saver: fixture.reopen?.() ?? fixture.saver,
        sessionId: "fail"
      })
      const { state: after } = await runTurn(next, { message: "still there?" })
      expect(kinds(after.messages)).toEqual(["human", "ai", "tool", "ai", "tool", "human", "ai"])
    } finally {
      fixture.close()
    }
  })

  it("runs out of steps at the turn's recursionLimit with LangGraph's error, keeping the steps it made", async () => {
    const fixture = makeSaver()
    try {
      const model = ScriptedChatModel.script([recall, recall, recall, recall, "never reached"])
      const agent = await agentFor({
        plugins: [memoryPlugin(makeCounters())],
        model,
        saver: fixture.saver,
        sessionId: "bound"
      })
      const run = async () => {
        for await (const _ of streamTurn(agent, { message: "cats?", recursionLimit: 5 })) {
          // consumed
        }
      }
      await expect(run()).rejects.toBeInstanceOf(GraphRecursionError)
      expect(model.calls).toHaveLength(3)
      const state = await agent.getState()
      expect(kinds(state.messages)).toEqual(["human", "ai", "tool", "ai", "tool", "ai", "tool"])
    } finally {
      fixture.close()
    }
  })
})

describe("an aborted loop", () => {
  it("ends at once while a tool ignores its signal, and keeps the steps before the abort", async () => {
    const finished: Array<string> = []
    const controller = new AbortController()
    const gate = slowGate()
    const model = ScriptedChatModel.script([{ tool: "quick_job" }, { tool: "slow_job" }, "never reached"])
    const agent = await agentFor({
      plugins: [slowPlugin(finished, gate)],
      model,
      saver: new MemorySaver(),
      sessionId: "abort",
      signal: controller.signal
    })
    agent.events.listen((e) => {
      if (e._tag === "tool_call" && e.status === "isRunning" && e.toolName === "slow_job") controller.abort()
    })
    await expect(runTurn(agent, { message: "work" })).rejects.toThrow("Abort")
    // The turn did not wait for the handler, which returns later.
    expect(finished).toEqual([])
    const state = await agent.getState()
    // The first batch and the call cut short, answered as cancelled by the turn's cut-off repair.
    expect(kinds(state.messages)).toEqual(["human", "ai", "tool", "ai", "tool"])
    expect(state.messages[2]!.content).toBe("quick result")
    expect((state.messages[4] as ToolMessage).status).toBe("error")
    expect(model.calls).toHaveLength(2)
    gate.open()
    await gate.returned
    await settle()
    expect(finished).toEqual(["slow_job"])
    expect(kinds((await agent.getState()).messages)).toEqual(["human", "ai", "tool", "ai", "tool"])
  })
})

/** A graph whose one node returns `updates` the way the agent loop does: one `Command` each. */
const savedFrom = async (updates: ReadonlyArray<AgentStateUpdate>): Promise<AgentStateValue> => {
  const graph = new StateGraph(AgentState)
    .addNode("agent", () => updates.map((update) => new Command({ update })))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: new MemorySaver() })
  const config = { configurable: { thread_id: "p" } }
  await graph.invoke({ messages: [new HumanMessage({ content: "hi", id: "h" })] }, config)
  return (await graph.getState(config)).values as AgentStateValue
}

const messageArb = fc
  .tuple(fc.constantFrom("a", "b", "c", "d", undefined), fc.string({ maxLength: 4 }), fc.boolean())
  .map(([id, content, isTool]) =>
    isTool
      ? new ToolMessage({ content, tool_call_id: "t", ...(id === undefined ? {} : { id }) })
      : new AIMessage({ content, ...(id === undefined ? {} : { id }) })
  )

const updateArb: fc.Arbitrary<AgentStateUpdate> = fc.record(
  {
    messages: fc.array(messageArb, { maxLength: 3 }),
    loadedPlugins: fc.array(fc.constantFrom("weather", "memory", "maps"), { maxLength: 2 }),
    userContext: fc.dictionary(fc.constantFrom("k", "l"), fc.integer()),
    spaceId: fc.constantFrom("s1", "s2")
  },
  { requiredKeys: [] }
)

/** The graph's defaults: the state a new thread starts from. */
const initial = {
  messages: [],
  config: { did: "" },
  client: "portal",
  userContext: {},
  loadedPlugins: []
} as unknown as AgentStateValue

describe("applyUpdate", () => {
  it("folds updates into the state LangGraph saves from the same updates, in order (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(updateArb, { minLength: 1, maxLength: 5 }), async (updates) => {
        // Message objects are shared by both sides: ids given by the reducer land on both.
        const saved = await savedFrom(updates)
        let folded = applyUpdate(initial, { messages: [new HumanMessage({ content: "hi", id: "h" })] })
        for (const u of updates) folded = applyUpdate(folded, u)
        expect(folded.messages.map((m) => [m.id, m.getType(), m.content])).toEqual(
          saved.messages.map((m) => [m.id, m.getType(), m.content])
        )
        expect(folded.loadedPlugins).toEqual(saved.loadedPlugins)
        expect(folded.userContext).toEqual(saved.userContext)
        expect(folded.spaceId).toEqual(saved.spaceId)
      }),
      { numRuns: 60 }
    )
  })
})
