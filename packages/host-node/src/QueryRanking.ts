/**
 * The host's ranking with an embedder (`EMBEDDING_MODEL`, docs/benchmarks.md#routing-quality): the
 * model is loaded and every discoverable plugin embedded once (core's `Ranking.fusedForCatalog`),
 * and each text ranked is embedded and the two rankings fused. The host chooses it once and hands
 * the same ranking to `list_capabilities`, to predictive preload and to `plugboard inspect --eval`,
 * so the figures an operator reads are the model's. A model that is missing or unusable fails the
 * boot (or inspect) with the adapter's message; one that fails on a text leaves that listing or
 * that turn's preload lexical (the agent logs it).
 * `@plugboard/embeddings` (and with it onnxruntime's 100 MB of binaries) is an optional peer,
 * imported only when `EMBEDDING_MODEL` is set: a host that ranks lexically does not install it.
 */
import { type Catalog, Embedder, Ranking } from "@plugboard/core"
import { Effect, Either, Exit, Scope } from "effect"

/** A loaded ranking and how to release its model. */
export interface LoadedRanking {
  /** The fused ranking (core's `Ranking`, kind `fused`). */
  readonly ranking: Ranking.Ranking
  /** The embedder's name (`EmbedderService.name`) and how many plugins it embedded. */
  readonly embedder: string
  readonly plugins: number
  /**
   * The same embedder's fused ranking of another catalog (one rebuilt after boot, `CatalogRelist.ts`):
   * its discoverable plugins embedded again. Fails with the embedder's error.
   */
  readonly forCatalog: (
    catalog: Catalog.Catalog
  ) => Promise<Either.Either<Ranking.Ranking, Embedder.EmbedderError>>
  readonly close: () => Promise<void>
}

/**
 * Loads the model in `directory` and embeds the catalog's discoverable plugins. Fails with the
 * adapter's `EmbedderError` (its `reason` and a message naming the file).
 */
export const loadQueryRanking = async (
  catalog: Catalog.Catalog,
  directory: string
): Promise<Either.Either<LoadedRanking, Embedder.EmbedderError>> => {
  const adapter = await import("@plugboard/embeddings").catch(() => undefined)
  if (adapter === undefined)
    return Either.left(
      new Embedder.EmbedderError({
        reason: "model-missing",
        message:
          "the package @plugboard/embeddings, which runs the model, is not installed (npm install @plugboard/embeddings)"
      })
    )
  const scope = await Effect.runPromise(Scope.make())
  const loaded = await Effect.runPromiseExit(
    Effect.gen(function* () {
      const embedder = yield* Scope.extend(adapter.make({ directory }), scope)
      const ranking = yield* Ranking.fusedForCatalog(catalog).pipe(
        Effect.provideService(Embedder.Embedder, embedder)
      )
      return { embedder, ranking }
    })
  )
  const close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  if (Exit.isFailure(loaded)) {
    await close()
    const failure = loaded.cause._tag === "Fail" ? loaded.cause.error : undefined
    return Either.left(
      failure ??
        new Embedder.EmbedderError({
          reason: "inference-failed",
          message: `${directory}: ${String(loaded.cause)}`
        })
    )
  }
  const { embedder, ranking } = loaded.value
  return Either.right({
    ranking,
    embedder: embedder.name,
    plugins: catalog.entries.filter((e) => e.discoverable).length,
    forCatalog: (other) =>
      Effect.runPromise(
        Effect.either(Ranking.fusedForCatalog(other).pipe(Effect.provideService(Embedder.Embedder, embedder)))
      ),
    close
  })
}
