/**
 * The conformance suite of the `Embedder` port: the hashing embedder in core, the ONNX model in
 * `@plugboard/embeddings`. The semantic index keeps one vector per plugin and compares them by
 * cosine, so an embedder must answer one finite vector of its own width per text, in order, the
 * same each time:
 *
 * ```ts
 * EmbedderConformance.run("hashing", () => Effect.succeed(Embedder.hashing()))
 * ```
 */
import type { Embedder } from "@plugboard/core"
import { Effect, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** Builds the embedder under test (it may hold a model: the scope closes it). */
export type EmbedderFactory = () => Effect.Effect<
  Embedder.EmbedderService,
  Embedder.EmbedderError,
  Scope.Scope
>

const texts = fc.array(fc.string({ minLength: 1, maxLength: 120 }), { minLength: 1, maxLength: 6 })

/** Registers the suite under `name`. */
export const run = (
  name: string,
  factory: EmbedderFactory,
  options: { readonly numRuns?: number } = {}
): void => {
  const numRuns = options.numRuns ?? 25
  const withEmbedder = <A>(body: (e: Embedder.EmbedderService) => Effect.Effect<A, Embedder.EmbedderError>) =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(factory(), body)))

  describe(`Embedder conformance: ${name}`, () => {
    it("names itself and has a positive width", () =>
      withEmbedder((e) =>
        Effect.sync(() => {
          expect(e.name).toMatch(/\S/)
          expect(Number.isInteger(e.dimensions) && e.dimensions > 0).toBe(true)
        })
      ))

    it("answers nothing for no texts", () =>
      withEmbedder((e) => Effect.map(e.embed([]), (vectors) => expect(vectors).toEqual([]))))

    it("answers one finite vector of its width per text, in order, the same alone or in a batch", () =>
      withEmbedder((e) =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(texts, (batch) =>
              Effect.runPromise(
                Effect.gen(function* () {
                  const vectors = yield* e.embed(batch)
                  expect(vectors.length).toBe(batch.length)
                  for (const [i, text] of batch.entries()) {
                    const v = vectors[i]!
                    expect(v).toBeInstanceOf(Float32Array)
                    expect(v.length).toBe(e.dimensions)
                    expect(v.every(Number.isFinite)).toBe(true)
                    const [alone] = yield* e.embed([text])
                    for (let k = 0; k < v.length; k++) expect(v[k]!).toBeCloseTo(alone![k]!, 4)
                  }
                })
              )
            ),
            { numRuns }
          )
        )
      ))
  })
}
