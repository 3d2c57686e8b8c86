/**
 * Exact token counts, offline: js-tiktoken with the ranks bundled in the package. LangChain's
 * `@langchain/core/utils/tiktoken` downloads ranks at run time (offline it stalls, then fails), so
 * it is never used here. Ranks are large (o200k ≈ 2.3 MB of text), so they are loaded on first use
 * and each encoder is built once per process; counting uses `Bpe.ts` (the same byte-pair
 * encoding as js-tiktoken's encoder, several times faster to build).
 */
import { createRequire } from "node:module"
import { TokenCounter } from "@plugboard/core"
import { Data, Effect, Layer } from "effect"
import type { TiktokenBPE } from "js-tiktoken/lite"
import { type BpeCounter, makeBpeCounter } from "./Bpe.js"

/** The two encodings plugboard counts with: `o200k` (GPT-4o and later), `cl100k` (GPT-4, 3.5). */
export type TiktokenEncoding = "o200k" | "cl100k"

/** Every supported encoding, for config validation and error messages. */
export const encodings: ReadonlyArray<TiktokenEncoding> = ["o200k", "cl100k"]

/** A counter as core's `TokenCounter` port expects it, plus the encoding it counts with. */
export interface TiktokenCounter extends TokenCounter.TokenCounterService {
  /** `tiktoken/o200k_base` or `tiktoken/cl100k_base`. */
  readonly name: string
  readonly encoding: TiktokenEncoding
  /** Exact number of tokens of `text`; special-token spellings count as ordinary text. */
  readonly count: (text: string) => number
}

/**
 * Raised for an encoding name plugboard does not bundle: thrown by the plain counter, failed by the
 * layer. A `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
 */
export class UnknownEncodingError extends Data.TaggedError("UnknownEncodingError")<{
  readonly encoding: string
  readonly message: string
}> {
  constructor(encoding: string) {
    super({
      encoding,
      message: `Unknown tiktoken encoding '${encoding}'; expected one of: ${encodings.join(", ")}.`
    })
  }
}

const rankModules = {
  o200k: "js-tiktoken/ranks/o200k_base",
  cl100k: "js-tiktoken/ranks/cl100k_base"
} as const satisfies Record<TiktokenEncoding, string>

const encoders = new Map<TiktokenEncoding, BpeCounter>()
const requireRanks = createRequire(import.meta.url)

const checkEncoding = (encoding: string): TiktokenEncoding => {
  if (!Object.hasOwn(rankModules, encoding)) throw new UnknownEncodingError(encoding)
  return encoding as TiktokenEncoding
}

// Synchronous path: `count` is synchronous in the port, so a counter made without preloading
// reads the CommonJS build of the ranks on its first call.
const encoderSync = (encoding: TiktokenEncoding): BpeCounter => {
  let encoder = encoders.get(encoding)
  if (encoder === undefined) {
    encoder = makeBpeCounter(requireRanks(rankModules[encoding]) as TiktokenBPE)
    encoders.set(encoding, encoder)
  }
  return encoder
}

/**
 * Loads (once) the ranks of `encoding` through a dynamic import, so that the first `count` of
 * the counters made afterwards pays nothing. Resolves when the encoder is ready.
 */
export const preload = async (encoding: TiktokenEncoding): Promise<void> => {
  const checked = checkEncoding(encoding)
  if (encoders.has(checked)) return
  const ranks =
    checked === "o200k"
      ? (await import("js-tiktoken/ranks/o200k_base")).default
      : (await import("js-tiktoken/ranks/cl100k_base")).default
  if (!encoders.has(checked)) encoders.set(checked, makeBpeCounter(ranks))
}

/**
 * The pre-tokenizer pattern (regex source, flags `gu`) of `encoding`, as its bundled ranks give
 * it; loads the ranks on first use. A text's count is the sum of the counts of its matches.
 */
export const tiktokenPattern = (encoding: TiktokenEncoding): string =>
  encoderSync(checkEncoding(encoding)).pattern

/**
 * An exact counter for `encoding`. Cheap to call: the ranks are read on the first `count` (or by
 * `preload`) and the encoder is shared by every counter of the same encoding.
 */
export const makeTiktokenCounter = (encoding: TiktokenEncoding): TiktokenCounter => {
  const checked = checkEncoding(encoding)
  const name = `tiktoken/${checked}_base`
  return {
    name,
    encoding: checked,
    // Special-token spellings ("<|endoftext|>") in user text are text, not control tokens, and
    // never throw: js-tiktoken's encode(text, [], []) counts the same.
    count: (text) => (text.length === 0 ? 0 : encoderSync(checked).count(text))
  }
}

/** `preload` then `makeTiktokenCounter`: a counter whose first call is already fast. */
export const loadTiktokenCounter = async (encoding: TiktokenEncoding): Promise<TiktokenCounter> => {
  await preload(encoding)
  return makeTiktokenCounter(encoding)
}

/**
 * Provides core's `TokenCounter` with the exact counter for `encoding`. The ranks load (once per
 * process) while the layer builds, so no request pays for them; an encoding plugboard does not
 * bundle fails the layer with `UnknownEncodingError`.
 */
export const layerTiktoken = (
  encoding: TiktokenEncoding
): Layer.Layer<TokenCounter.TokenCounter, UnknownEncodingError> =>
  Layer.effect(
    TokenCounter.TokenCounter,
    Effect.suspend(() =>
      encodings.includes(encoding)
        ? Effect.promise(() => loadTiktokenCounter(encoding))
        : Effect.fail(new UnknownEncodingError(encoding))
    )
  )

/** `TokenCounter` with o200k_base (GPT-4o and later). */
export const layerO200k: Layer.Layer<TokenCounter.TokenCounter> = Layer.orDie(layerTiktoken("o200k"))

/** `TokenCounter` with cl100k_base (GPT-4, GPT-3.5). */
export const layerCl100k: Layer.Layer<TokenCounter.TokenCounter> = Layer.orDie(layerTiktoken("cl100k"))
