/**
 * The LangGraph annotation applies core's reducers: messages append and dedupe by id (ids are
 * given to messages that lack one), loadedPlugins is a union that never shrinks, the other
 * fields follow docs/spec/graph-state.md#channels.
 */
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages"
import type { BinaryOperatorAggregate } from "@langchain/langgraph"
import { GraphState } from "@plugboard/core"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { AgentState } from "../src/index.js"

const reducerOf = <V, U>(channel: unknown) => (channel as BinaryOperatorAggregate<V, U>).operator
const messages = reducerOf<Array<BaseMessage>, BaseMessage | Array<BaseMessage>>(AgentState.spec.messages)
const loaded = reducerOf<ReadonlyArray<string>, ReadonlyArray<string>>(AgentState.spec.loadedPlugins)

describe("AgentState", () => {
  it("appends messages, replaces one whose id is already present, and ids the rest", () => {
    const a = new HumanMessage({ content: "hi", id: "m1" })
    const b = new AIMessage({ content: "hello" })
    const state = messages([a], [b])
    expect(state.map((m) => m.content)).toEqual(["hi", "hello"])
    expect(typeof state[1]!.id).toBe("string")
    const edited = messages(state, new HumanMessage({ content: "hi (edited)", id: "m1" }))
    expect(edited.map((m) => m.content)).toEqual(["hi (edited)", "hello"])
    // Re-sending a stored message does not duplicate it.
    expect(messages(edited, [edited[1]!])).toHaveLength(2)
  })

  it("merges loadedPlugins as core's union: order of first load, never removing a name", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.constantFrom("weather", "memory", "maps", "mail"), { maxLength: 4 }), {
          maxLength: 6
        }),
        (updates) => {
          let state: ReadonlyArray<string> = []
          for (const u of updates) {
            const next = loaded(state, u)
            for (const name of state) expect(next).toContain(name)
            expect(next).toEqual(GraphState.reducers.loadedPlugins(state, u))
            state = next
          }
          expect(new Set(state).size).toBe(state.length)
        }
      )
    )
  })

  it("reads a malformed checkpointed loadedPlugins defensively", () => {
    expect(loaded("weather" as never, ["maps"])).toEqual(["maps"])
    expect(loaded(["weather", 3 as never, "weather"], ["maps"])).toEqual(["weather", "maps"])
  })

  it("uses core's reducer for every other channel of the graph state", () => {
    const userContext = reducerOf<Record<string, unknown>, Record<string, unknown>>(
      AgentState.spec.userContext
    )
    expect(userContext({ a: 1, b: 2 }, { b: 3 })).toEqual({ a: 1, b: 3 })
    const client = reducerOf<string, string>(AgentState.spec.client)
    expect(client("portal", "matrix")).toBe("matrix")
    expect(Object.keys(AgentState.spec).sort()).toEqual(Object.keys(GraphState.reducers).sort())
  })
})
