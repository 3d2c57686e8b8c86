/** The ConnectionStore conformance suite on Postgres, each case on a fresh schema. */
import { ConnectionStoreConformance } from "@plugboard/testing"
import { Layer } from "effect"
import { afterAll, describe } from "vitest"
import { layerConnectionStore } from "../src/index.js"
import { databaseLayer, dropSchemas, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

describe.skipIf(POSTGRES_URL === undefined)(
  `Postgres ConnectionStore${POSTGRES_URL === undefined ? `: ${SKIP_REASON}` : ""}`,
  () => {
    afterAll(dropSchemas)
    ConnectionStoreConformance.run(
      "postgres",
      () => layerConnectionStore.pipe(Layer.provide(databaseLayer())),
      {
        numRuns: 10
      }
    )
  }
)
