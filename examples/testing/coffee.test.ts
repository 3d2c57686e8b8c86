/**
 * How to test your own plugin: swap every adapter for its in-memory or scripted twin.
 * - the model: `ScriptedChatModel.script([...])` replays the model's side of the conversation
 *   (tool calls, then a final answer) and records what it was offered on each call;
 * - the checkpointer: LangGraph's `MemorySaver` keeps the thread's state in memory;
 * - the ledger: core's in-memory `CreditLedger`, on a test clock.
 * Nothing touches the network or the disk, and every run is the same.
 */

import { Catalog, Clock, CreditLedger, makeRuntimeContext } from "@plugboard/core"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeCoffeePlugin } from "./coffee.js"

const ALICE = "did:key:z6MkAlice"

/** A fresh in-memory ledger on a test clock, with `credits` for Alice. */
const ledgerWith = (credits: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const ledger = yield* CreditLedger.makeMemory
      if (credits > 0) yield* ledger.topUp(ALICE, credits, "test set-up")
      return ledger
    }).pipe(Effect.provide(Clock.layerTest()))
  )

/** One request's agent on the coffee plugin, a scripted model and an in-memory checkpointer. */
const setUp = async (credits: number, script: Parameters<typeof ScriptedChatModel.script>[0]) => {
  const ledger = await ledgerWith(credits)
  const catalog = Catalog.unsafeMake([makeCoffeePlugin(ledger)]) // throws if the manifest is wrong
  const model = ScriptedChatModel.script(script)
  const agent = await createMainAgent({
    catalog,
    model,
    checkpointer: new MemorySaver(),
    request: { did: ALICE, sessionId: "test-thread" }
  })
  return { ledger, model, agent }
}

describe("the coffee plugin", () => {
  it("has a clean manifest", () => {
    const catalog = Catalog.unsafeMake([makeCoffeePlugin({} as never)])
    expect(catalog.warnings).toEqual([])
  })

  // The smallest test: call the handler directly with a RuntimeContext.
  it("charges the price of the size", async () => {
    const ledger = await ledgerWith(10)
    const order = makeCoffeePlugin(ledger).tools[0]
    const ctx = makeRuntimeContext({ state: { messages: [] } as never, sessionId: "s", did: ALICE })
    expect(await order.handler({ drink: "latte", size: "large" }, ctx)).toEqual({
      ordered: "large latte",
      price: 4,
      balance: 6
    })
  })

  // The whole loop: the model loads the plugin, calls the tool, answers.
  it("is loaded, called and paid for within one turn", async () => {
    const { ledger, model, agent } = await setUp(10, [
      { tool: "load_capability", args: { names: ["coffee"] } },
      { tool: "order_coffee", args: { drink: "latte", size: "large" } },
      "Your large latte is on its way."
    ])
    const turn = await runTurn(agent, { message: "Order me a large latte." })

    expect(turn.answer).toBe("Your large latte is on its way.")
    // What the model was offered: not the coffee tools before the load, then them too.
    expect(model.calls[0]!.offeredTools).not.toContain("order_coffee")
    expect(model.calls[1]!.offeredTools).toContain("order_coffee")
    expect(turn.state.loadedPlugins).toEqual(["coffee"])
    expect(await Effect.runPromise(ledger.balance(ALICE))).toBe(6)
  })

  it("tells the model when the credits do not cover the order, and charges nothing", async () => {
    const { ledger, agent } = await setUp(1, [
      { tool: "load_capability", args: { names: ["coffee"] } },
      { tool: "order_coffee", args: { drink: "espresso", size: "small" } },
      "Sorry, you are out of credits."
    ])
    const turn = await runTurn(agent, { message: "An espresso, please." })

    // A handler error becomes a ToolMessage the model sees; the turn goes on.
    const failure = turn.state.messages.filter((m) => m.getType() === "tool").at(-1)!
    expect(failure.content).toBe("Tool 'order_coffee' failed: Not enough credits: 1 < 2.")
    expect(turn.answer).toBe("Sorry, you are out of credits.")
    expect(await Effect.runPromise(ledger.balance(ALICE))).toBe(1)
  })
})
