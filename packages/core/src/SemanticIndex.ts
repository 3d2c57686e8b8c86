/**
 * Lexical ranking fused with an embedder's (docs/benchmarks.md#routing-quality): a plugin's score is its
 * `CapabilityIndex` relevance plus `WEIGHT` times the cosine between the query's vector and the
 * plugin's. Words alone miss a query that shares none with its plugin ("condos for sale in
 * Vancouver" → a house-purchasing plugin); a small embedder alone misses rare names a word match
 * finds at once; the sum keeps both. Relevance, not the raw BM25F score, is fused: it means the
 * same in any catalog, as the cosine does, so one weight fits catalogs of any size.
 *
 * Every plugin gets a score (its cosine), so with an embedder a query ranks the whole catalog.
 * Pure: the plugins' vectors are computed once by the `Embedder` port (`build`), the query's per
 * query (`rankWith`); `rank` itself does no I/O.
 */
import { Effect, Either } from "effect"
import * as CapabilityIndex from "./CapabilityIndex.js"
import { Embedder, EmbedderError } from "./Embedder.js"
import type { CatalogEntry } from "./internal/catalog/entry.js"
import type { Catalog } from "./internal/catalog/model.js"

/**
 * Weight of the cosine against the lexical relevance. Chosen on half A of MetaTool's dev split
 * (the even lines) with all-MiniLM-L6-v2 (int8): recall@5 there is within 0.005 of its best from
 * 0.5 to 0.9 and best at 0.6; half B, left out of the choice, is the check (`pnpm bench ranking`).
 */
export const WEIGHT = 0.6

/** A lexical index with one unit vector per indexed plugin, in the index's order. */
export interface SemanticIndex {
  readonly lexical: CapabilityIndex.CapabilityIndex
  /** Unit-length vectors, `vectors[i]` for `lexical.names[i]`. */
  readonly vectors: ReadonlyArray<Float32Array>
  /** The embedder that made the vectors (`EmbedderService.name`). */
  readonly embedder: string
}

/** One ranked plugin: `score` = `relevance` + `WEIGHT` × `similarity`, higher is better. */
export interface Ranked {
  readonly name: string
  readonly score: number
  /** The plugin's lexical `CapabilityIndex` relevance, 0 when it shares no word with the query. */
  readonly relevance: number
  /** Cosine between the query's and the plugin's vectors, in [-1, 1]. */
  readonly similarity: number
}

/**
 * The text a plugin is embedded from: its title, summary, then its `whenToUse` entries, tags and
 * examples' user messages, as sentences; what says most comes first, since a model reads a
 * bounded number of tokens. The name is left out (it is used only when there is nothing else):
 * the lexical index already matches it, and an identifier such as `HousePurchasingTool` adds
 * words many plugins share ("tool") rather than meaning. Measured on half A of MetaTool's dev
 * split, where 46 plugins have no title: recall@5 fused 0.834 without the name, 0.815 with it.
 */
export const documentText = (doc: CapabilityIndex.CapabilityDocument): string => {
  const text = [
    doc.title !== undefined && doc.title.trim().length > 0 ? `${doc.title.trim()}.` : "",
    doc.summary ?? "",
    ...(doc.whenToUse ?? []),
    ...(doc.tags !== undefined && doc.tags.length > 0 ? [`${doc.tags.join(", ")}.`] : []),
    ...(doc.examples ?? [])
  ]
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .join(" ")
  return text.length > 0 ? text : doc.name
}

/** The documents of a catalog's discoverable plugins, the fields `CapabilityIndex` reads. */
export const documentsOf = (catalog: Catalog): Array<CapabilityIndex.CapabilityDocument> =>
  catalog.entries.filter((e: CatalogEntry) => e.discoverable).map(CapabilityIndex.documentOf)

const invalid = (message: string) => new EmbedderError({ reason: "invalid-output", message })

/** `v` scaled to unit length; an error when it has no direction or a value is not finite. */
const unit = (v: Float32Array, what: string): Either.Either<Float32Array, EmbedderError> => {
  let sum = 0
  for (const x of v) {
    if (!Number.isFinite(x)) return Either.left(invalid(`${what}: the vector holds a non-finite value`))
    sum += x * x
  }
  if (sum === 0) return Either.left(invalid(`${what}: the vector is all zeros`))
  const norm = Math.sqrt(sum)
  return Either.right(v.map((x) => x / norm))
}

/**
 * A semantic index from a lexical index and one vector per indexed plugin (same order as
 * `lexical.names`). Fails with `invalid-output` when the count or the sizes disagree, or a
 * vector is zero or not finite.
 */
export const make = (
  lexical: CapabilityIndex.CapabilityIndex,
  vectors: ReadonlyArray<Float32Array>,
  embedder: string
): Either.Either<SemanticIndex, EmbedderError> => {
  if (vectors.length !== lexical.names.length)
    return Either.left(invalid(`expected ${lexical.names.length} plugin vectors, got ${vectors.length}`))
  const size = vectors[0]?.length ?? 0
  const out: Array<Float32Array> = []
  for (const [i, v] of vectors.entries()) {
    const name = lexical.names[i]!
    if (v.length !== size)
      return Either.left(invalid(`plugin '${name}': vector of ${v.length} numbers, the others have ${size}`))
    const u = unit(v, `plugin '${name}'`)
    if (Either.isLeft(u)) return Either.left(u.left)
    out.push(u.right)
  }
  return Either.right({ lexical, vectors: out, embedder })
}

/**
 * Embeds every indexed plugin (`documentText` of `documents`, matched to `lexical.names` by
 * name) and builds the index. A plugin of the index without a document is embedded from its
 * name alone.
 */
export const build = (
  lexical: CapabilityIndex.CapabilityIndex,
  documents: ReadonlyArray<CapabilityIndex.CapabilityDocument>
): Effect.Effect<SemanticIndex, EmbedderError, Embedder> =>
  Effect.gen(function* () {
    const embedder = yield* Embedder
    const byName = new Map(documents.map((d) => [d.name, d]))
    const texts = lexical.names.map((name) => documentText(byName.get(name) ?? { name }))
    const vectors = texts.length === 0 ? [] : yield* embedder.embed(texts)
    return yield* make(lexical, vectors, embedder.name)
  })

/** `build` for a catalog: its lexical index (`CapabilityIndex.forCatalog`) and its manifests. */
export const forCatalog = (catalog: Catalog): Effect.Effect<SemanticIndex, EmbedderError, Embedder> =>
  build(CapabilityIndex.forCatalog(catalog), documentsOf(catalog))

/**
 * Ranks every indexed plugin against `query`, whose vector (`queryVector`, any length but that
 * of the plugins' vectors is an error) the caller embedded; best first, ties broken by name.
 */
export const rank = (
  index: SemanticIndex,
  query: string,
  queryVector: Float32Array,
  options: CapabilityIndex.RankOptions = {}
): Either.Either<Array<Ranked>, EmbedderError> => {
  const n = index.lexical.names.length
  if (n === 0) return Either.right([])
  const size = index.vectors[0]!.length
  if (queryVector.length !== size)
    return Either.left(invalid(`query vector of ${queryVector.length} numbers, the plugins' have ${size}`))
  const q = unit(queryVector, "query")
  if (Either.isLeft(q)) return Either.left(q.left)
  const relevance = new Map<string, number>()
  for (const r of CapabilityIndex.rank(index.lexical, query)) relevance.set(r.name, r.relevance)
  const ranked: Array<Ranked> = index.lexical.names.map((name, i) => {
    const v = index.vectors[i]!
    let dot = 0
    for (let k = 0; k < size; k++) dot += v[k]! * q.right[k]!
    const similarity = Math.max(-1, Math.min(1, dot))
    const rel = relevance.get(name) ?? 0
    return { name, score: rel + WEIGHT * similarity, relevance: rel, similarity }
  })
  ranked.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const limit = options.limit
  return Either.right(limit === undefined ? ranked : ranked.slice(0, Math.max(0, Math.floor(limit))))
}

/** Embeds `query` with the `Embedder` and ranks (`rank`). */
export const rankWith = (
  index: SemanticIndex,
  query: string,
  options: CapabilityIndex.RankOptions = {}
): Effect.Effect<Array<Ranked>, EmbedderError, Embedder> =>
  Effect.gen(function* () {
    const embedder = yield* Embedder
    const [vector] = yield* embedder.embed([query])
    if (vector === undefined)
      return yield* Effect.fail(invalid("the embedder returned no vector for the query"))
    return yield* rank(index, query, vector, options)
  })
