/**
 * An aborted turn: every tool call that emitted `isRunning` has emitted its `done` (saying the
 * call was interrupted) by the time the turn's promise settles, in the host's sink and in the
 * turn's listeners; a handler that finishes later emits nothing more.
 */
import { MemorySaver } from "@langchain/langgraph"
import { EventSink } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { INTERRUPTED_CALL, runTurn, streamTurn, type ToolCallEvent } from "../src/index.js"
import { slowGate, slowPlugin } from "./fixtures.js"
import { agentFor } from "./harness.js"

// Lets whatever the handler's return scheduled run (a turn of the event loop, not a wait).
const settle = () => new Promise((resolve) => setImmediate(resolve))

/** Every `isRunning` has exactly one `done` with the same eventId, after it. */
const expectClosed = (events: ReadonlyArray<EventSink.AgentEvent>) => {
  const calls = events.filter((e): e is ToolCallEvent => e._tag === "tool_call")
  const started = calls.filter((e) => e.status === "isRunning")
  expect(started.length).toBeGreaterThan(0)
  for (const s of started) {
    const done = calls.filter((e) => e.status === "done" && e.eventId === s.eventId)
    expect(done).toHaveLength(1)
    expect(calls.indexOf(done[0]!)).toBeGreaterThan(calls.indexOf(s))
  }
  return calls
}

const setUp = async (finished: Array<string>, sessionId: string) => {
  const controller = new AbortController()
  const sink = Effect.runSync(EventSink.makeMemory)
  const gate = slowGate()
  const model = ScriptedChatModel.script([[{ tool: "quick_job" }, { tool: "slow_job" }], "never reached"])
  const agent = await agentFor({
    plugins: [slowPlugin(finished, gate)],
    model,
    saver: new MemorySaver(),
    sessionId,
    eventSink: sink,
    signal: controller.signal
  })
  const sinkEvents = () => Effect.runSync(sink.events)
  return { controller, agent, sinkEvents, gate }
}

describe("an aborted turn", () => {
  it("runTurn: each running tool call's done reaches the sink and the turn before the promise settles", async () => {
    const finished: Array<string> = []
    const { controller, agent, sinkEvents, gate } = await setUp(finished, "s-abort")
    const seen: Array<EventSink.AgentEvent> = []
    agent.events.listen((e) => {
      seen.push(e)
      if (e._tag === "tool_call" && e.status === "isRunning" && e.toolName === "slow_job")
        queueMicrotask(() => controller.abort(new Error("client left")))
    })
    await expect(runTurn(agent, { message: "do the slow thing" })).rejects.toThrow()
    // The slow handler has not returned yet, and its done is already out.
    expect(finished).toEqual([])
    const calls = expectClosed(sinkEvents())
    expectClosed(seen)
    const slowDone = calls.find((e) => e.toolName === "slow_job" && e.status === "done")!
    expect(slowDone.output).toBe(INTERRUPTED_CALL)
    expect(calls.find((e) => e.toolName === "quick_job" && e.status === "done")!.output).toBe("quick result")
    // When the handler returns later, no second done is emitted.
    gate.open()
    await gate.returned
    await settle()
    expect(finished).toEqual(["slow_job"])
    expect(sinkEvents()).toHaveLength(calls.length)
  })

  it("streamTurn: the same, when the stream is aborted", async () => {
    const finished: Array<string> = []
    const { controller, agent, sinkEvents, gate } = await setUp(finished, "s-abort-stream")
    const yielded: Array<EventSink.AgentEvent> = []
    const run = async () => {
      for await (const e of streamTurn(agent, { message: "do the slow thing" })) {
        yielded.push(e)
        if (e._tag === "tool_call" && e.status === "isRunning" && e.toolName === "slow_job")
          queueMicrotask(() => controller.abort(new Error("client left")))
      }
    }
    await expect(run()).rejects.toThrow()
    expect(finished).toEqual([])
    const calls = expectClosed(sinkEvents())
    expect(calls.find((e) => e.toolName === "slow_job" && e.status === "done")!.output).toBe(INTERRUPTED_CALL)
    // The stream itself ended every call before it threw (a host writing the stream, not the sink).
    expect(expectClosed(yielded)).toEqual(calls)
    gate.open()
    await gate.returned
    await settle()
    expect(sinkEvents()).toHaveLength(calls.length)
  })
})
