/**
 * The scripted router (`plugboard serve`'s default model) on the examples' catalog adapts the
 * numbers, currencies and units of the user's message, as it adapts cities: a newcomer who asks
 * to convert 100 USD to EUR gets that conversion, not the manifest example's 250 EUR to USD.
 */
import { HumanMessage } from "@langchain/core/messages"
import { decide } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { exampleCatalog } from "../../../examples/catalog/index.js"

const catalog = exampleCatalog
const META = ["list_capabilities", "load_capability"]

/** The tool the router calls for `text` once `plugin`'s tools are offered. */
const callFor = (text: string, tools: ReadonlyArray<string>) =>
  decide({ catalog }, { messages: [new HumanMessage(text)], offeredTools: [...META, ...tools], callIndex: 0 })
    .reply

describe("the scripted router on the examples' catalog", () => {
  it("converts the user's amount and currencies", () => {
    expect(callFor("convert 100 USD to EUR", [])).toEqual({
      tool: "load_capability",
      args: { names: ["currency-converter"] }
    })
    expect(callFor("convert 100 USD to EUR", ["convert_currency", "exchange_rate"])).toEqual({
      tool: "convert_currency",
      args: { amount: 100, from: "USD", to: "EUR" }
    })
  })
  it("converts the user's units, in the direction they ask", () => {
    expect(callFor("How many miles is 42 km?", ["convert_units", "list_units"])).toEqual({
      tool: "convert_units",
      args: { value: 42, from: "km", to: "mi" }
    })
  })
})
