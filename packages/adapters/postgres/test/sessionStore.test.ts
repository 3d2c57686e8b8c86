/** The SessionStore conformance suite on Postgres, each case on a fresh schema. */
import { sessionStoreConformance } from "@plugboard/core/testing"
import { Layer } from "effect"
import { afterAll, describe, it } from "vitest"
import { layerSessionStore } from "../src/index.js"
import { databaseLayer, dropSchemas, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

if (POSTGRES_URL === undefined) {
  describe.skip(`Postgres SessionStore: ${SKIP_REASON}`, () => it("skipped", () => {}))
} else {
  afterAll(dropSchemas)
  sessionStoreConformance("postgres", () => layerSessionStore.pipe(Layer.provide(databaseLayer())))
}
