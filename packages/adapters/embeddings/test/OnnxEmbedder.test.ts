import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { CapabilityIndex, Catalog, Embedder, SemanticIndex } from "@plugboard/core"
import * as OnnxEmbedder from "@plugboard/embeddings"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { MODEL_DIR, modelPresent } from "./model.js"

const scratch = mkdtempSync(join(tmpdir(), "plugboard-embeddings-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The error `make` fails with for `options`. */
const failure = async (options: OnnxEmbedder.OnnxEmbedderOptions) => {
  const exit = await Effect.runPromiseExit(Effect.scoped(OnnxEmbedder.make(options)))
  if (Exit.isSuccess(exit)) return "loaded"
  const e = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
  return e === undefined ? String(exit.cause) : `${e.reason}: ${e.message}`
}

const dir = (name: string, files: Record<string, string | Buffer>) => {
  const d = join(scratch, name)
  rmSync(d, { recursive: true, force: true })
  mkdirSync(d, { recursive: true })
  for (const [f, content] of Object.entries(files)) writeFileSync(join(d, f), content)
  return d
}

describe("OnnxEmbedder: a model that is missing or bad is a clear error", () => {
  it("names the missing model file and the script that fetches it", async () => {
    expect(await failure({ directory: join(scratch, "nowhere") })).toMatch(
      /^model-missing: the embedding model \(model\.onnx\) not found at .*nowhere\/model\.onnx \(scripts\/embedding-model\.sh/
    )
  })

  it("names a missing vocabulary", async () => {
    const d = dir("novocab", { "model.onnx": "x" })
    expect(await failure({ directory: d })).toMatch(
      /^model-missing: the model's vocabulary \(vocab\.txt\) not found/
    )
  })

  it("refuses an empty model file", async () => {
    const d = dir("empty", { "model.onnx": "", "vocab.txt": "[PAD]\n[UNK]\n[CLS]\n[SEP]\n" })
    expect(await failure({ directory: d })).toMatch(
      /^model-invalid: the embedding model \(model\.onnx\) at .* is not a non-empty file/
    )
  })

  it("refuses a vocabulary that is not BERT's", async () => {
    const d = dir("badvocab", { "model.onnx": "x", "vocab.txt": "hello\nworld\n" })
    expect(await failure({ directory: d })).toMatch(
      /^model-invalid: .*vocab\.txt: the vocabulary has no \[CLS\] piece/
    )
  })

  it("refuses a model file onnxruntime cannot load", async () => {
    const d = dir("garbage", {
      "model.onnx": Buffer.from("this is not a protobuf at all"),
      "vocab.txt": "[PAD]\n[UNK]\n[CLS]\n[SEP]\n"
    })
    expect(await failure({ directory: d })).toMatch(
      /^model-invalid: .*garbage\/model\.onnx is not a model onnxruntime can load: /
    )
  })

  it("refuses bad options", async () => {
    expect(await failure({ directory: scratch, maxTokens: 1 })).toMatch(
      /^model-invalid: maxTokens must be an integer of at least 2/
    )
    expect(await failure({ directory: scratch, batchSize: 0 })).toMatch(
      /^model-invalid: batchSize must be a positive integer/
    )
  })
})

describe.skipIf(!modelPresent)("OnnxEmbedder with all-MiniLM-L6-v2 (int8)", () => {
  const run = <A, E>(effect: Effect.Effect<A, E, Embedder.Embedder>) =>
    Effect.runPromise(effect.pipe(Effect.provide(OnnxEmbedder.layer({ directory: MODEL_DIR }))))

  it("embeds as the reference pipeline does (onnxruntime in Python, mean pooling, unit length)", async () => {
    const reference = JSON.parse(
      readFileSync(new URL("./embedding-reference.json", import.meta.url), "utf8")
    ) as Array<{
      text: string
      vector: Array<number>
    }>
    const vectors = await run(Effect.flatMap(Embedder.Embedder, (e) => e.embed(reference.map((r) => r.text))))
    for (const [i, r] of reference.entries()) {
      const v = vectors[i]!
      expect(v.length).toBe(384)
      let dot = 0
      for (let k = 0; k < v.length; k++) dot += v[k]! * r.vector[k]!
      expect(dot).toBeGreaterThan(0.9999)
    }
  })

  it("gives the same vector for a text alone or in a padded batch", async () => {
    const [alone, batched] = await run(
      Effect.flatMap(Embedder.Embedder, (e) =>
        Effect.all([
          e.embed(["rain in Berlin"]),
          e.embed([
            "rain in Berlin",
            "a much longer text that forces the first one to be padded in the batch"
          ])
        ])
      )
    )
    let dot = 0
    for (let k = 0; k < 384; k++) dot += alone[0]![k]! * batched[0]![k]!
    expect(dot).toBeGreaterThan(0.99999)
  })

  it("ranks a plugin that shares no word with the query (the case lexical ranking misses)", async () => {
    const catalog = Catalog.unsafeMake([
      {
        name: "finance",
        manifest: {
          title: "Finance",
          summary: "Stock quotes and cryptocurrency market data.",
          whenToUse: ["Market prices of stocks and coins."]
        },
        tools: []
      },
      {
        name: "weather",
        manifest: {
          title: "Weather",
          summary: "Forecasts, rain and wind for any city.",
          whenToUse: ["Questions about the weather."]
        },
        tools: []
      },
      {
        name: "recipes",
        manifest: {
          title: "Recipes",
          summary: "Cooking ideas from the ingredients you have.",
          whenToUse: ["What to cook for dinner."]
        },
        tools: []
      }
    ] as never)
    expect(CapabilityIndex.rank(CapabilityIndex.forCatalog(catalog), "how much is bitcoin worth")).toEqual([])
    const ranked = await run(
      Effect.flatMap(SemanticIndex.forCatalog(catalog), (index) =>
        SemanticIndex.rankWith(index, "how much is bitcoin worth")
      )
    )
    expect(ranked[0]!.name).toBe("finance")
  })

  it("loads a copy of the model from any directory, named after it", async () => {
    const d = join(scratch, "copy")
    mkdirSync(d, { recursive: true })
    copyFileSync(join(MODEL_DIR, "model.onnx"), join(d, "model.onnx"))
    copyFileSync(join(MODEL_DIR, "vocab.txt"), join(d, "vocab.txt"))
    const e = await Effect.runPromise(Effect.scoped(OnnxEmbedder.make({ directory: d })))
    expect(e.name).toBe("copy")
    expect(e.dimensions).toBe(384)
  })
})
