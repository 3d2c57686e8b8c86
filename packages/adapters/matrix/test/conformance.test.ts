/**
 * Core's MatrixSync conformance suite against the adapter on the in-memory store. The same suite
 * runs against Synapse in synapse.test.ts (one file, so that its outage test, which stops the
 * homeserver, never overlaps it).
 */
import { MatrixSyncConformance } from "@plugboard/testing"
import { memorySnapshotStore } from "../src/index.js"
import { world } from "./conformanceWorld.js"

MatrixSyncConformance.run("Matrix sync engine, memory store", () => world(memorySnapshotStore()))
