import * as fc from "fast-check"
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite"
import cl100k from "js-tiktoken/ranks/cl100k_base"
import o200k from "js-tiktoken/ranks/o200k_base"
import { describe, expect, it } from "vitest"
import { makeBpeCounter } from "../src/Bpe.js"
import { text } from "./trickyText.js"

describe("tokenizers Bpe", () => {
  for (const [name, ranks] of [
    ["o200k", o200k],
    ["cl100k", cl100k]
  ] as const) {
    const reference = new Tiktoken(ranks as TiktokenBPE)
    const counter = makeBpeCounter(ranks as TiktokenBPE)

    it(`counts exactly like js-tiktoken's encode(text, [], []) (${name})`, () => {
      fc.assert(
        fc.property(text, (t) => counter.count(t) === reference.encode(t, [], []).length),
        { numRuns: 3000 }
      )
    })

    it(`counts real-shaped tool text like js-tiktoken (${name})`, () => {
      const samples = [
        "",
        "hello world",
        JSON.stringify({
          type: "object",
          required: ["query"],
          properties: { query: { type: "string", description: "Words to look for in invoices." } },
          additionalProperties: false
        }),
        "[Acme billing] Find a invoice in vendor42's accounts receivable.",
        "日本語のテキスト 🙂🙂 <|endoftext|>"
      ]
      for (const s of samples) expect(counter.count(s)).toBe(reference.encode(s, [], []).length)
      expect(counter.pattern).toBe((ranks as TiktokenBPE).pat_str)
    })
  }
})
