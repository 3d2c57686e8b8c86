/**
 * The `Embedder` port: turns texts into vectors whose cosine says how close two texts are in
 * meaning, so that "price of Ethereum" can find a plugin that only says "cryptocurrency". It is
 * optional: without it, ranking is lexical (`CapabilityIndex`); with it, `SemanticIndex` fuses
 * both. Adapters run a model offline (`@plugboard/embeddings`); core ships `hashing`, a
 * deterministic bag-of-words embedder good enough for tests, which knows no meaning beyond words.
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as CapabilityIndex from "./CapabilityIndex.js"

/**
 * An embedder failed. `model-missing`: a model file is not where the configuration says;
 * `model-invalid`: a file is there but is not a usable model or vocabulary; `inference-failed`:
 * the model ran and failed; `invalid-output`: it returned vectors of the wrong number, size or
 * values (not finite, all zero).
 */
export class EmbedderError extends Schema.TaggedError<EmbedderError>()("EmbedderError", {
  reason: Schema.Literal("model-missing", "model-invalid", "inference-failed", "invalid-output"),
  message: Schema.String
}) {}

/** An embedder: one vector of `dimensions` numbers per text, in the order given. */
export interface EmbedderService {
  /** Identifies the model in reports, e.g. `all-MiniLM-L6-v2-int8`. */
  readonly name: string
  readonly dimensions: number
  readonly embed: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Float32Array>, EmbedderError>
}

/** The port. */
export class Embedder extends Context.Tag("@plugboard/core/Embedder")<Embedder, EmbedderService>() {}

/** FNV-1a, 32 bits: a stable hash of a word, the same on every platform. */
const fnv1a = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * A bag-of-words embedder by the hashing trick: each word of `CapabilityIndex.tokenize` (stop
 * words dropped, stemmed) adds ±1 to one of `dimensions` slots chosen by its hash. Texts sharing
 * words get a positive cosine, texts sharing none about zero. No model, no I/O.
 */
export const hashing = (dimensions = 256): EmbedderService => {
  if (!Number.isInteger(dimensions) || dimensions < 1)
    throw new RangeError(`hashing embedder: dimensions must be a positive integer, got ${dimensions}`)
  return {
    name: `hashing-${dimensions}`,
    dimensions,
    embed: (texts) =>
      Effect.sync(() =>
        texts.map((text) => {
          const v = new Float32Array(dimensions)
          for (const word of CapabilityIndex.tokenize(text)) {
            const h = fnv1a(word)
            v[h % dimensions]! += h & 0x80000000 ? -1 : 1
          }
          return v
        })
      )
  }
}

/** Provides `hashing()`. */
export const layerHashing: Layer.Layer<Embedder> = Layer.sync(Embedder, () => hashing())
