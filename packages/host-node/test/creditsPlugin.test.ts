/** The credits plugin's middleware on its own: what it charges, and what it says when it cannot. */
import { Clock, CreditLedger, type RuntimeContext } from "@plugboard/core"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeCreditsPlugin } from "../src/credits/CreditsPlugin.js"

const setup = async () => {
  const ledger = await Effect.runPromise(CreditLedger.makeMemory.pipe(Effect.provide(Clock.layer)))
  await Effect.runPromise(ledger.topUp("did:key:z6MkAlice", 100))
  const warnings: Array<string> = []
  const context = {
    user: { did: "did:key:z6MkAlice" },
    session: { id: "s1", client: "portal" },
    shared: {},
    logger: {
      debug: () => {},
      info: () => {},
      warn: (message: string) => void warnings.push(message),
      error: (message: string) => void warnings.push(message)
    }
  } as unknown as RuntimeContext
  const afterModel = makeCreditsPlugin({ ledger }).middlewares?.[0]?.afterModel
  if (afterModel === undefined) throw new Error("the credits plugin has no afterModel")
  const balance = () => Effect.runPromise(ledger.balance("did:key:z6MkAlice"))
  return { afterModel, context, warnings, balance }
}

describe("credits plugin", () => {
  it("charges core's price of the usage", async () => {
    const { afterModel, context, balance } = await setup()
    await afterModel({ message: {}, usage: { inputTokens: 1500, outputTokens: 600 } }, context)
    expect(await balance()).toBe(97)
  })

  it("a model that reports no usage is not charged, and the log says so once", async () => {
    const { afterModel, context, warnings, balance } = await setup()
    for (let i = 0; i < 3; i++) await afterModel({ message: {} }, context)
    expect(await balance()).toBe(100)
    expect(warnings).toEqual(["credits: the model reports no token usage; its calls are not charged"])
  })
})
