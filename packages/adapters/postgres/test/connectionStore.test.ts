/** The ConnectionStore conformance suite on Postgres, each case on a fresh schema. */
import { ConnectionStoreConformance } from "@plugboard/testing"
import { Layer } from "effect"
import { afterAll, describe, it } from "vitest"
import { layerConnectionStore } from "../src/index.js"
import { databaseLayer, dropSchemas, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

if (POSTGRES_URL === undefined) {
  describe.skip(`Postgres ConnectionStore: ${SKIP_REASON}`, () => it("skipped", () => {}))
} else {
  afterAll(dropSchemas)
  ConnectionStoreConformance.run(
    "postgres",
    () => layerConnectionStore.pipe(Layer.provide(databaseLayer())),
    {
      numRuns: 10
    }
  )
}
