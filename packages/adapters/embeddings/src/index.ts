/**
 * `@plugboard/embeddings`: core's `Embedder` port run offline with onnxruntime-node, from a model
 * directory (`model.onnx` + `vocab.txt`; `scripts/embedding-model.sh` fetches all-MiniLM-L6-v2).
 */

export { layer, make, type OnnxEmbedderOptions } from "./OnnxEmbedder.js"
export { basicTokens, encode, parseVocabulary, VocabularyError, type WordPiece } from "./WordPiece.js"
