/**
 * The offer of each step (`offerFor`, `Runtime.ts`): a step whose thread loaded nothing since the
 * last step's, with the same ready tools, preload and kept results, is handed the last step's list;
 * for any sequence of steps each list is the one a fresh runtime computes (issue 37).
 */
import { HumanMessage, ToolMessage } from "@langchain/core/messages"
import { Catalog, LoadedPlugins } from "@plugboard/core"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeRequestScope } from "../src/index.js"
import { makeAgentRuntime, offerFor } from "../src/Runtime.js"
import type { AgentStateValue } from "../src/State.js"
import { makeCounters, testPlugins } from "./fixtures.js"

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }
const catalog = Catalog.unsafeMake(testPlugins(makeCounters()))
const names = [...catalog.byName.keys()]

const stateOf = (loaded: ReadonlyArray<string>, kept: boolean): AgentStateValue =>
  ({
    messages: [
      new HumanMessage({ content: "hi", id: "h" }),
      ...(kept
        ? [
            new ToolMessage({
              content: "page",
              tool_call_id: "c",
              id: "t",
              artifact: { plugboard: { outcome: "success", result: "whole" } }
            })
          ]
        : [])
    ],
    loadedPlugins: loaded
  }) as unknown as AgentStateValue

const runtime = async () => {
  const scope = await makeRequestScope({
    catalog,
    request: { userDid: "did:key:alice", sessionId: "s", shared: {} },
    logger: silent
  })
  return makeAgentRuntime({
    catalog,
    scope,
    request: { did: "did:key:alice", sessionId: "s" },
    shared: {},
    logger: silent
  })
}

const offered = async (rt: Awaited<ReturnType<typeof runtime>>, state: AgentStateValue) =>
  offerFor(rt, LoadedPlugins.fromUnknown(state.loadedPlugins), await rt.ready(state), state)

describe("the offer of each step (issue 37)", () => {
  it("is what a fresh runtime offers, for any sequence of steps", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ loaded: fc.subarray(names), kept: fc.boolean() }), {
          minLength: 1,
          maxLength: 8
        }),
        async (steps) => {
          const rt = await runtime()
          let previous: { key: string; list: unknown } | undefined
          for (const step of steps) {
            const state = stateOf(step.loaded, step.kept)
            const list = await offered(rt, state)
            const fresh = await offered(await runtime(), state)
            expect(list.map((t) => t.name)).toEqual(fresh.map((t) => t.name))
            expect(list).toEqual(fresh)
            const key = `${LoadedPlugins.fromUnknown(step.loaded).join(",")}|${step.kept}`
            if (previous?.key === key) expect(list).toBe(previous.list)
            previous = { key, list }
          }
        }
      ),
      { numRuns: 60 }
    )
  })
})
