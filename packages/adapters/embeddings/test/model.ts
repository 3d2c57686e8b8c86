/**
 * Where the tests find the real model: `EMBEDDING_MODEL`, else where
 * `scripts/embedding-model.sh` puts it. Tests that need it are skipped without it; CI fetches it.
 */
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

export const MODEL_DIR =
  process.env.EMBEDDING_MODEL ||
  fileURLToPath(new URL("../../../../.plugboard/models/all-MiniLM-L6-v2-int8", import.meta.url))

export const modelPresent = existsSync(`${MODEL_DIR}/model.onnx`) && existsSync(`${MODEL_DIR}/vocab.txt`)
