/** The SessionStore conformance suite on Postgres, each case on a fresh schema. */
import { sessionStoreConformance } from "@plugboard/testing"
import { Layer } from "effect"
import { afterAll, describe } from "vitest"
import { layerSessionStore } from "../src/index.js"
import { databaseLayer, dropSchemas, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(POSTGRES_URL === undefined)(
  POSTGRES_URL === undefined ? `Postgres SessionStore: ${SKIP_REASON}` : "Postgres SessionStore",
  () => {
    afterAll(dropSchemas)
    sessionStoreConformance("postgres", () => layerSessionStore.pipe(Layer.provide(databaseLayer())))
  }
)
