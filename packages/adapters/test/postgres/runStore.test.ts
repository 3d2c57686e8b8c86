/** The RunStore conformance suite on Postgres, each case on a fresh schema. */
import { RunStoreConformance } from "@plugboard/core/testing"
import { Layer } from "effect"
import { afterAll, describe, it } from "vitest"
import { layerRunStore } from "../../src/postgres/index.js"
import { databaseLayer, dropSchemas, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

if (POSTGRES_URL === undefined) {
  describe.skip(`Postgres RunStore: ${SKIP_REASON}`, () => it("skipped", () => {}))
} else {
  afterAll(dropSchemas)
  RunStoreConformance.run("postgres", () => layerRunStore().pipe(Layer.provide(databaseLayer())), {
    numRuns: 25
  })
}
