/**
 * The one ranking of a host (docs/benchmarks.md#routing-quality): how plugins are ranked against
 * a text, whether for `list_capabilities`' `query`, for predictive preload's guess at a turn's
 * plugin (`Preload`), or for the routing figures an operator reads (`RoutingEval`, `plugboard
 * inspect --eval`). A host chooses it once where it composes (lexical, or fused with an embedder
 * when `EMBEDDING_MODEL` is set) and hands the same value to all three, so the eval measures the
 * ranking the model gets.
 *
 * `lexical` is `CapabilityIndex`; `fused` is `SemanticIndex` (the lexical relevance plus
 * `SemanticIndex.WEIGHT` × the embedder's cosine). A fused ranking embeds each text it ranks, so
 * ranking is an `Effect` that can fail with the embedder's `EmbedderError`; a lexical one never
 * fails. Pure: the embedder is the `EmbedderService` the ranking was built with.
 */
import { Effect } from "effect"
import * as CapabilityIndex from "./CapabilityIndex.js"
import { Embedder, type EmbedderError, type EmbedderService } from "./Embedder.js"
import type { Catalog } from "./internal/catalog/model.js"
import * as SemanticIndex from "./SemanticIndex.js"

/** One ranked plugin, best first in a ranking. */
export interface Ranked {
  readonly name: string
  /** The ranking's score, higher is better (only comparable within one ranking of one text). */
  readonly score: number
  /** The plugin's lexical `CapabilityIndex` relevance, in [0, 1): 0 when it shares no word with the text. */
  readonly relevance: number
}

/** Options of `Ranking.rank`. */
export interface RankOptions extends CapabilityIndex.RankOptions {
  /**
   * Rank as if this example of this plugin had never been written (a leave-one-out evaluation,
   * `RoutingEval.evaluateExamples`): it leaves the lexical index and, for a fused ranking, the
   * plugin's vector. Throws a `RangeError` when the plugin or the example does not exist.
   */
  readonly leaveOut?: { readonly plugin: string; readonly example: number } | undefined
}

/** A ranking of a catalog's discoverable plugins. */
export interface Ranking {
  /** `lexical` (`CapabilityIndex`) or `fused` (`SemanticIndex`, with `embedder`). */
  readonly kind: "lexical" | "fused"
  /** The embedder's name (`EmbedderService.name`) of a fused ranking. */
  readonly embedder?: string | undefined
  /** What an operator reads: `lexical`, or `fused with <embedder> (weight 0.6)`. */
  readonly label: string
  /** Ranks the plugins against `text`, best first, ties broken by name. */
  readonly rank: (text: string, options?: RankOptions) => Effect.Effect<ReadonlyArray<Ranked>, EmbedderError>
  /**
   * The same ranking as `rank`, returned at once: present on a ranking that never waits or fails
   * (`lexical`), so that a caller ranking on every turn (predictive preload, `Preload.decideNow`)
   * runs no Effect for it. Absent on a fused ranking, which embeds the text.
   */
  readonly rankNow?: ((text: string, options?: RankOptions) => ReadonlyArray<Ranked>) | undefined
}

/** The lexical ranking of a catalog (`CapabilityIndex.forCatalog`): only plugins sharing a word with the text. */
export const lexical = (catalog: Catalog): Ranking => {
  const index = CapabilityIndex.forCatalog(catalog)
  const rankNow = (text: string, options: RankOptions = {}): ReadonlyArray<Ranked> =>
    CapabilityIndex.rank(
      options.leaveOut === undefined
        ? index
        : CapabilityIndex.leaveOneOut(index, options.leaveOut.plugin, options.leaveOut.example),
      text,
      options
    )
  return {
    kind: "lexical",
    label: "lexical",
    rank: (text, options) => Effect.sync(() => rankNow(text, options)),
    rankNow
  }
}

/**
 * The fused ranking of `index` (`SemanticIndex.rank`), embedding each text with `embedder` (the
 * one that made `index`'s vectors). Every indexed plugin is ranked. With `leaveOut`, the plugin's
 * vector is embedded again from its document without that example (`documents`, the catalog's
 * `SemanticIndex.documentsOf`), in the same call as the text.
 */
export const fused = (
  index: SemanticIndex.SemanticIndex,
  embedder: EmbedderService,
  documents: ReadonlyArray<CapabilityIndex.CapabilityDocument>
): Ranking => {
  const byName = new Map(documents.map((d) => [d.name, d]))
  return {
    kind: "fused",
    embedder: index.embedder,
    label: `fused with ${index.embedder} (weight ${SemanticIndex.WEIGHT})`,
    rank: (text, options = {}) =>
      Effect.gen(function* () {
        const leaveOut = options.leaveOut
        if (leaveOut === undefined) {
          return yield* SemanticIndex.rankWith(index, text, options).pipe(
            Effect.provideService(Embedder, embedder)
          )
        }
        const lexicalIndex = CapabilityIndex.leaveOneOut(index.lexical, leaveOut.plugin, leaveOut.example)
        const doc = byName.get(leaveOut.plugin) ?? { name: leaveOut.plugin }
        const without = { ...doc, examples: (doc.examples ?? []).filter((_, i) => i !== leaveOut.example) }
        const [query, plugin] = yield* embedder.embed([text, SemanticIndex.documentText(without)])
        const at = index.lexical.names.indexOf(leaveOut.plugin)
        const made = yield* SemanticIndex.make(
          lexicalIndex,
          index.vectors.map((v, i) => (i === at && plugin !== undefined ? plugin : v)),
          index.embedder
        )
        return yield* SemanticIndex.rank(made, text, query ?? new Float32Array(0), options)
      })
  }
}

/**
 * Embeds the catalog's discoverable plugins with the `Embedder` and returns their fused ranking
 * (`SemanticIndex.forCatalog`, then `fused`).
 */
export const fusedForCatalog = (catalog: Catalog): Effect.Effect<Ranking, EmbedderError, Embedder> =>
  Effect.gen(function* () {
    const embedder = yield* Embedder
    const documents = SemanticIndex.documentsOf(catalog)
    const index = yield* SemanticIndex.build(CapabilityIndex.forCatalog(catalog), documents)
    return fused(index, embedder, documents)
  })
