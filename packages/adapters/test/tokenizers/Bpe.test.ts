import * as fc from "fast-check"
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite"
import cl100k from "js-tiktoken/ranks/cl100k_base"
import o200k from "js-tiktoken/ranks/o200k_base"
import { describe, expect, it } from "vitest"
import { makeBpeCounter } from "../../src/tokenizers/Bpe.js"

// Pieces that hit every branch of both patterns and of the merge loop: words in both cases,
// contractions, digit runs, punctuation runs, whitespace kinds, accents, CJK, emoji, lone
// surrogates, special-token spellings, rare long words (many merges).
const tricky = fc.constantFrom(
  ..."aZ'sStTreVEmMllLdD 0123456789{}\":,./\\-_\n\r\t  éÉßσΣ日本語🙂\u0301\ud800".split(""),
  "'s",
  "'RE",
  "\r\n",
  "<|endoftext|>",
  "<|fim_prefix|>",
  "antidisestablishmentarianism",
  "Pneumonoultramicroscopic",
  "ZXQJVKW",
  "résumé naïve",
  "supercalifragilisticexpialidocious"
)
const text = fc.oneof(
  fc.array(tricky, { maxLength: 40 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: "grapheme", maxLength: 40 })
)

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
