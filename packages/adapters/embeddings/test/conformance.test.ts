// The Embedder port's shared suite against the ONNX model (core runs it on the hashing embedder).
// Skipped, with the reason, when scripts/embedding-model.sh has not fetched the model.
import * as OnnxEmbedder from "@plugboard/embeddings"
import { EmbedderConformance } from "@plugboard/testing"
import { describe, it } from "vitest"
import { MODEL_DIR, modelPresent } from "./model.js"

if (modelPresent)
  EmbedderConformance.run("onnx all-MiniLM-L6-v2", () => OnnxEmbedder.make({ directory: MODEL_DIR }), {
    numRuns: 5
  })
else
  describe("Embedder conformance: onnx", () =>
    it.skip(`no model at ${MODEL_DIR} (scripts/embedding-model.sh)`, () => {}))
