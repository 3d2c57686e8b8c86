/**
 * The scripted router's reading of numbers, currencies and units (`Quantities.ts`), and the
 * argument adaptation built on it (`Router.adaptArgs`): a manifest example's amount, currency
 * codes and units become the user's, by kind and role.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { counterpart, mentions } from "../src/Quantities.js"
import { adaptArgs } from "../src/Router.js"

const currency = {
  user: "Convert 250 euros to dollars.",
  tool: "convert",
  args: { amount: 250, from: "EUR", to: "USD" }
}
const distance = {
  user: "Convert 10 miles to kilometres.",
  tool: "units",
  args: { value: 10, from: "mi", to: "km" }
}
const temperature = {
  user: "What is 350 Fahrenheit in Celsius?",
  tool: "units",
  args: { value: 350, from: "f", to: "c" }
}

describe("mentions", () => {
  it("reads numbers (grouped and decimal), currencies by code, name and symbol, and units", () => {
    expect(mentions("Pay $1,500.25 or 42.50 EUR, then 3 km and 12 pounds of flour.")).toEqual([
      { kind: "currency", value: "USD", attached: true, text: "$" },
      { kind: "number", value: 1500.25, attached: true, text: "1,500.25" },
      { kind: "number", value: 42.5, attached: true, text: "42.50" },
      { kind: "currency", value: "EUR", attached: true, text: "EUR" },
      { kind: "number", value: 3, attached: true, text: "3" },
      { kind: "unit", value: "km", attached: true, text: "km" },
      { kind: "number", value: 12, attached: true, text: "12" },
      { kind: "unit", value: "lb", attached: true, text: "pounds" }
    ])
  })
  it("keeps identifiers, dates and times whole: they are no numbers", () => {
    expect(mentions("Invoice INV-1002 is due 2025-06-02 at 10:30, build v1.2")).toEqual([])
  })
  it("counts words that are also units or codes only where they can be one", () => {
    // "in" is a preposition here, "try" a verb, "m" a letter; "5 m" is metres, "TRY" the lira.
    expect(mentions("try 1,500 in m")).toEqual([
      { kind: "number", value: 1500, attached: true, text: "1,500" }
    ])
    expect(mentions("5 m in TRY").map((m) => m.value)).toEqual([5, "m", "TRY"])
    expect(mentions("20 canadian dollars").map((m) => m.value)).toEqual([20, "CAD"])
    expect(mentions("20 °C").map((m) => [m.value, m.attached])).toEqual([
      [20, true],
      ["c", true]
    ])
  })
  it("matches by role, then by order, and gives up when neither lines up", () => {
    const example = mentions("Convert 10 miles to kilometres.")
    const user = mentions("how many miles is 5 km")
    expect(counterpart(example, user, 1)?.value).toBe("km") // the quantity's own unit
    expect(counterpart(example, user, 2)?.value).toBe("mi")
    expect(counterpart(example, mentions("convert to metres"), 1)).toBeUndefined()
  })
})

describe("adaptArgs with quantities", () => {
  it("adapts the amount and both currencies, whatever way each is written", () => {
    expect(adaptArgs(currency, "convert 100 USD to EUR")).toEqual({ amount: 100, from: "USD", to: "EUR" })
    expect(adaptArgs(currency, "How much is $1,500 in pounds?")).toEqual({
      amount: 1500,
      from: "USD",
      to: "GBP"
    })
    expect(adaptArgs(currency, "convert 20 canadian dollars to yen")).toEqual({
      amount: 20,
      from: "CAD",
      to: "JPY"
    })
  })
  it("adapts units by role, and temperatures written as names, symbols or capitals", () => {
    expect(adaptArgs(distance, "how many miles is 5 km")).toEqual({ value: 5, from: "km", to: "mi" })
    expect(adaptArgs(distance, "convert 3.5 feet to metres")).toEqual({ value: 3.5, from: "ft", to: "m" })
    expect(adaptArgs(temperature, "what is 20 °C in fahrenheit")).toEqual({ value: 20, from: "c", to: "f" })
    expect(adaptArgs(temperature, "100 celsius to F?")).toEqual({ value: 100, from: "c", to: "f" })
  })
  it("adapts a lone number argument, and keeps the example's where the message has none", () => {
    const build = { user: "Why did build 482 fail?", tool: "log", args: { run: 482 } }
    expect(adaptArgs(build, "why did build 17 fail")).toEqual({ run: 17 })
    expect(adaptArgs(build, "why did the last build fail")).toEqual({ run: 482 })
    expect(adaptArgs(currency, "convert euros to dollars")).toEqual(currency.args)
  })
  it("keeps an argument the example's text does not mention, of any kind", () => {
    const free = {
      user: "When am I free for an hour on 2025-06-02?",
      tool: "free",
      args: { date: "2025-06-02", minutes: 60 }
    }
    expect(adaptArgs(free, "When am I free for 30 minutes on 2025-07-01?")).toEqual({
      date: "2025-07-01",
      minutes: 60
    })
  })

  const codes = ["USD", "EUR", "GBP", "JPY", "CHF", "CNY", "INR", "SEK", "PLN", "MXN", "ZAR", "CAD", "AUD"]
  const amount = fc.oneof(
    fc.integer({ min: 0, max: 10_000_000 }),
    fc.integer({ min: 1, max: 999_999 }).map((n) => n / 100)
  )
  it("property: any amount and any two currency codes in the example's shape come through", () => {
    fc.assert(
      fc.property(amount, fc.constantFrom(...codes), fc.constantFrom(...codes), (n, from, to) => {
        expect(adaptArgs(currency, `Convert ${n} ${from} to ${to}.`)).toEqual({ amount: n, from, to })
      })
    )
  })
  it("property: a number the example mentions becomes the user's number in its place", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 1_000_000 }), (a, b) => {
        const example = { user: `Log ${a} steps`, tool: "log", args: { steps: a, note: "walk" } }
        expect(adaptArgs(example, `Log ${b} steps`)).toEqual({ steps: b, note: "walk" })
      })
    )
  })
})
