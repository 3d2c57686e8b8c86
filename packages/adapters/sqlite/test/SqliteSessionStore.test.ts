import { sessionStoreConformance } from "@plugboard/testing"
import { Effect, Layer } from "effect"
import { layerSessionStore, layerUserDatabases } from "../src/index.js"
import { tempDir } from "./helpers.js"

sessionStoreConformance("sqlite (per-user files)", () =>
  Layer.provide(
    layerSessionStore,
    Layer.unwrapScoped(
      Effect.acquireRelease(
        Effect.sync(() => tempDir()),
        (t) => Effect.sync(t.cleanup)
      ).pipe(Effect.map((t) => layerUserDatabases({ directory: t.dir, maxOpen: 3 })))
    )
  )
)
