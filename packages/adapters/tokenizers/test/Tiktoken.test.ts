import { TokenCounter } from "@plugboard/core"
import { Cause, Effect, Exit, Option } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  layerCl100k,
  layerO200k,
  layerTiktoken,
  loadTiktokenCounter,
  makeTiktokenCounter,
  preload,
  UnknownEncodingError
} from "../src/Tiktoken.js"

// Counts were computed once with js-tiktoken 1.0.21 and checked against the token pieces:
// "hello world" → ["hello", " world"]; "Hello, world!" → ["Hello", ",", " world", "!"];
// o200k keeps "What's" whole (6 pieces) while cl100k splits "What" + "'s" (7 pieces).
const known: ReadonlyArray<readonly [string, number, number]> = [
  ["hello world", 2, 2],
  ["Hello, world!", 4, 4],
  ["What's the weather in Berlin?", 6, 7],
  ["The quick brown fox jumps over the lazy dog.", 10, 10],
  ["日本語のテキスト", 6, 8]
]

describe("tiktoken counters", () => {
  const o200k = makeTiktokenCounter("o200k")
  const cl100k = makeTiktokenCounter("cl100k")

  it("names the encoding", () => {
    expect(o200k.name).toBe("tiktoken/o200k_base")
    expect(cl100k.name).toBe("tiktoken/cl100k_base")
  })

  it.each(known)("counts %j exactly", (text, inO200k, inCl100k) => {
    expect(o200k.count(text)).toBe(inO200k)
    expect(cl100k.count(text)).toBe(inCl100k)
  })

  it("counts the empty string as 0", () => {
    expect(o200k.count("")).toBe(0)
    expect(cl100k.count("")).toBe(0)
  })

  it("treats special-token spellings as ordinary text instead of throwing", () => {
    // "<|endoftext|>" as a control token would be 1; as text it is < | end of text | >.
    expect(o200k.count("<|endoftext|>")).toBe(7)
    expect(cl100k.count("<|endoftext|>")).toBe(7)
  })

  it("shares one encoder: a preloaded counter gives the same counts", async () => {
    await preload("o200k")
    const loaded = await loadTiktokenCounter("o200k")
    for (const [text] of known) expect(loaded.count(text)).toBe(o200k.count(text))
  })

  it("rejects an encoding it does not bundle", async () => {
    expect(() => makeTiktokenCounter("p50k" as never)).toThrow(UnknownEncodingError)
    expect(() => makeTiktokenCounter("p50k" as never)).toThrow(/expected one of: o200k, cl100k/)
    await expect(preload("gpt2" as never)).rejects.toBeInstanceOf(UnknownEncodingError)
  })

  it("never counts more tokens than UTF-8 bytes, and at least one for non-empty text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), (text) => {
        const bytes = Buffer.byteLength(text, "utf8")
        for (const counter of [o200k, cl100k]) {
          const n = counter.count(text)
          expect(n).toBeLessThanOrEqual(bytes)
          expect(n > 0).toBe(text.length > 0)
        }
      }),
      { numRuns: 300 }
    )
  })
})

describe("tiktoken layers", () => {
  it("provide core's TokenCounter with the exact counter", async () => {
    const count = Effect.gen(function* () {
      const counter = yield* TokenCounter.TokenCounter
      return [counter.name, counter.count("What's the weather in Berlin?")] as const
    })
    expect(await Effect.runPromise(Effect.provide(count, layerO200k))).toEqual(["tiktoken/o200k_base", 6])
    expect(await Effect.runPromise(Effect.provide(count, layerCl100k))).toEqual(["tiktoken/cl100k_base", 7])
  })

  it("fail with UnknownEncodingError for an encoding that is not bundled", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.provide(TokenCounter.TokenCounter, layerTiktoken("r50k" as never))
    )
    expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause)).toEqual(
      Option.some(new UnknownEncodingError("r50k"))
    )
  })
})
