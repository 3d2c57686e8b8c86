/**
 * `list_capabilities`' query ranking with an embedder (`EMBEDDING_MODEL`, README "Routing
 * quality"): the model is loaded and every discoverable plugin embedded once at boot
 * (core's `SemanticIndex.forCatalog`), each query is embedded when the model lists with one, and
 * core fuses the two rankings. A model that is missing or unusable fails the boot with the
 * adapter's message; one that fails on a query leaves that listing lexical (the agent logs it).
 * `@plugboard/embeddings` (and with it onnxruntime's 100 MB of binaries) is an optional peer,
 * imported only when `EMBEDDING_MODEL` is set: a host that ranks lexically does not install it.
 */
import { type Catalog, Embedder, SemanticIndex } from "@plugboard/core"
import type { QueryRanking } from "@plugboard/langgraph"
import { Effect, Either, Exit, Scope } from "effect"

/** A loaded ranking and how to release its model. */
export interface LoadedRanking {
  readonly ranking: QueryRanking
  /** The embedder's name (`EmbedderService.name`) and how many plugins it embedded. */
  readonly embedder: string
  readonly plugins: number
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
      const index = yield* SemanticIndex.forCatalog(catalog).pipe(
        Effect.provideService(Embedder.Embedder, embedder)
      )
      return { embedder, index }
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
  const { embedder, index } = loaded.value
  return Either.right({
    ranking: (query) =>
      Effect.runPromise(
        SemanticIndex.rankWith(index, query).pipe(Effect.provideService(Embedder.Embedder, embedder))
      ),
    embedder: embedder.name,
    plugins: index.vectors.length,
    close
  })
}
