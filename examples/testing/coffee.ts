/**
 * A plugin as you might write it for your own oracle: it orders coffee and pays for it with the
 * user's credits. It depends on the `CreditLedger` port (not on a database), so a test can hand
 * it the in-memory ledger and a real host the SQLite one. `coffee.test.ts` shows how to test it.
 */
import { type CreditLedger, definePlugin, defineTool } from "@plugboard/core"
import { Effect, Schema } from "effect"

/** Price of each size, in credits. */
export const PRICES = { small: 2, medium: 3, large: 4 } as const

/** The coffee plugin, paying through `ledger`. */
export const makeCoffeePlugin = (ledger: CreditLedger.CreditLedgerService) =>
  definePlugin({
    name: "coffee",
    manifest: {
      title: "Coffee Orders",
      summary: "Orders a coffee from the office café and pays with the user's credits.",
      whenToUse: [
        "The user wants to order a coffee, latte or espresso.",
        "The user asks their credit balance."
      ],
      examples: [
        { user: "Order me a large latte.", tool: "order_coffee", args: { drink: "latte", size: "large" } },
        { user: "How many credits do I have?", tool: "credit_balance", args: {} }
      ],
      tags: ["coffee", "cafe", "credits"],
      category: "automation",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "order_coffee",
        description: "Order a drink; its price is taken from the user's credits.",
        input: Schema.Struct({
          drink: Schema.Literal("espresso", "latte", "cappuccino"),
          size: Schema.Literal("small", "medium", "large")
        }),
        handler: async ({ drink, size }, ctx) => {
          const price = PRICES[size]
          const balance = await Effect.runPromise(ledger.balance(ctx.user.did))
          // Check first: the ledger never goes below zero, but a half-paid coffee is no answer.
          // A thrown error becomes a ToolMessage the model reads (docs/spec/pipeline.md#tool-calls).
          if (balance < price) throw new Error(`Not enough credits: ${balance} < ${price}.`)
          const paid = await Effect.runPromise(ledger.deduct(ctx.user.did, price, `${size} ${drink}`))
          return { ordered: `${size} ${drink}`, price, balance: paid.balance }
        }
      }),
      defineTool({
        name: "credit_balance",
        description: "The user's credit balance.",
        input: Schema.Struct({}),
        handler: (_input, ctx) =>
          Effect.runPromise(ledger.balance(ctx.user.did)).then((balance) => ({ balance }))
      })
    ]
  })
