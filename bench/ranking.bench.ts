/**
 * Routing quality of `list_capabilities`' query ranking (`CapabilityIndex`) on an external
 * benchmark: MetaTool's 199 ChatGPT plugins and the labelled dev queries in
 * `../shared/benchmarks/metatool/` (MIT). Each plugin becomes a document the way a manifest
 * would carry it: name → name, `nameForHuman` → title, `description` → summary, the sentences of
 * `descriptionForModel` → whenToUse; no examples, no tags (the queries are the test). Plain BM25
 * (Okapi k1 1.2, b 0.75, a small stop list, over name + description + descriptionForModel — the
 * benchmark README's baseline, recall@5 0.548 on all queries) runs in the same process for
 * comparison. Skipped when the data is absent. With the embedding model present
 * (`scripts/embedding-model.sh`, or `EMBEDDING_MODEL`), the same run ranks with core's
 * `SemanticIndex` (lexical relevance fused with all-MiniLM-L6-v2's cosine), the embedder alone,
 * and the fusion weight's sweep on both halves (the weight was chosen on half A).
 *
 * Every figure is given on the whole dev split and on its two halves (even and odd lines): the
 * ranking's parameters and the preload threshold are general (never per query), and the preload
 * threshold was chosen on half A only, so half B is a held-out check of that choice.
 *
 * Predictive preload (core's `Preload`, docs/architecture.md#predictive-preload): each query is a turn that
 * starts with nothing loaded and needs its labelled plugin. A preload is made when the top
 * plugin's confidence reaches the threshold; it is right when that plugin is the label. A right
 * preload saves the `load_capability` round trip (one model call: the model calls the plugin's
 * tool at once); a wrong one saves nothing and costs no call (the model loads as it would have),
 * only the wrong plugin's tool schemas for that turn. So the calls saved per turn are the right
 * preloads over all turns, a lower bound: a model that lists before it loads saves two. The same
 * figures follow for the examples' catalog, each manifest example ranked with itself left out
 * (`CapabilityIndex.leaveOneOut`, as `plugboard inspect --eval` does).
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { CapabilityIndex, Embedder, Preload, SemanticIndex } from "@plugboard/core"
import * as OnnxEmbedder from "@plugboard/embeddings"
import { Effect } from "effect"
import { exampleCatalog } from "../examples/catalog/index.js"

const here = dirname(fileURLToPath(import.meta.url))
const DATA = join(here, "..", "..", "shared", "benchmarks", "metatool")
/** The embedding model (`scripts/embedding-model.sh`); its rows are skipped without it. */
const MODEL = process.env.EMBEDDING_MODEL || join(here, "..", ".plugboard", "models", "all-MiniLM-L6-v2-int8")

interface MetaToolPlugin {
  readonly name: string
  readonly description: string
  readonly nameForHuman?: string
  readonly descriptionForModel?: string
}
interface Query {
  readonly query: string
  readonly plugin: string
}

const sentences = (text: string | undefined): Array<string> =>
  (text ?? "").split(/(?<=[.!?])\s+/).filter((s) => s.trim().length > 0)

/**
 * The baseline as the benchmark README describes it; with this stop list it reproduces the
 * README's figure (recall@5 0.549 on the dev queries, 0.548 on all).
 */
const plainBm25 = (plugins: ReadonlyArray<MetaToolPlugin>) => {
  const stop = new Set(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with i me my you your can could would please what how".split(
      " "
    )
  )
  const tok = (s: string) => (s.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !stop.has(w))
  const docs = plugins.map((p) => tok(`${p.name} ${p.description} ${p.descriptionForModel ?? ""}`))
  const n = docs.length
  const avg = docs.reduce((s, d) => s + d.length, 0) / n
  const df = new Map<string, number>()
  const tfs = docs.map((d) => {
    const m = new Map<string, number>()
    for (const t of d) m.set(t, (m.get(t) ?? 0) + 1)
    for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1)
    return m
  })
  return (query: string, k: number): Array<string> => {
    const q = tok(query)
    return docs
      .map((d, i) => {
        let score = 0
        for (const t of q) {
          const tf = tfs[i]!.get(t) ?? 0
          if (tf === 0) continue
          const dft = df.get(t)!
          score +=
            (Math.log(1 + (n - dft + 0.5) / (dft + 0.5)) * tf * 2.2) /
            (tf + 1.2 * (0.25 + (0.75 * d.length) / avg))
        }
        return { name: plugins[i]!.name, score }
      })
      .filter((r) => r.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, k)
      .map((r) => r.name)
  }
}

/** recall@1, recall@5 and MRR of a ranking (a plugin not ranked at all counts 0 in MRR). */
const quality = (queries: ReadonlyArray<Query>, rank: (q: string) => ReadonlyArray<string>) => {
  let at1 = 0
  let at5 = 0
  let mrr = 0
  for (const q of queries) {
    const i = rank(q.query).indexOf(q.plugin)
    if (i === 0) at1++
    if (i >= 0 && i < 5) at5++
    if (i >= 0) mrr += 1 / (i + 1)
  }
  const n = Math.max(queries.length, 1)
  return { at1: at1 / n, at5: at5 / n, mrr: mrr / n }
}

/** Preloads made, their precision and the model calls saved per turn at `threshold`. */
const preload = (
  predictions: ReadonlyArray<{ readonly ok: boolean; readonly confidence: number }>,
  threshold: number
) => {
  let made = 0
  let right = 0
  for (const p of predictions) {
    if (p.confidence < threshold) continue
    made++
    if (p.ok) right++
  }
  const n = Math.max(predictions.length, 1)
  return { coverage: made / n, precision: made === 0 ? 0 : right / made, saved: right / n }
}

export default async () => {
  if (!existsSync(join(DATA, "plugins.json"))) {
    console.log(`skipped: no MetaTool data at ${DATA}`)
    return
  }
  const plugins = JSON.parse(readFileSync(join(DATA, "plugins.json"), "utf8")) as Array<MetaToolPlugin>
  const queries = readFileSync(join(DATA, "queries-dev.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l) as Query)
  const halves = [queries.filter((_, i) => i % 2 === 0), queries.filter((_, i) => i % 2 === 1)] as const

  const t0 = performance.now()
  const index = CapabilityIndex.make(
    plugins.map((p) => ({
      name: p.name,
      title: p.nameForHuman,
      summary: p.description,
      whenToUse: sentences(p.descriptionForModel)
    }))
  )
  const built = performance.now() - t0
  const ours = (q: string) => CapabilityIndex.rank(index, q).map((r) => r.name)
  const baseline = plainBm25(plugins)
  const base = (q: string) => baseline(q, Number.POSITIVE_INFINITY)

  const f = (x: number) => x.toFixed(3)
  const row = (label: string, m: ReturnType<typeof quality>) =>
    `  ${label.padEnd(31)}recall@1 ${f(m.at1)}  recall@5 ${f(m.at5)}  MRR ${f(m.mrr)}`
  console.log(`MetaTool dev: ${plugins.length} plugins, ${queries.length} labelled queries`)
  const t1 = performance.now()
  const whole = quality(queries, ours)
  const perQuery = (performance.now() - t1) / queries.length
  console.log(row("plain BM25 (README baseline)", quality(queries, base)))
  console.log(row("CapabilityIndex (BM25F)", whole))
  for (const [i, half] of halves.entries()) {
    const name = i === 0 ? "A" : "B"
    console.log(row(`  half ${name}: plain BM25`, quality(half, base)))
    console.log(row(`  half ${name}: CapabilityIndex`, quality(half, ours)))
  }
  console.log(`  index build ${built.toFixed(1)} ms, ${(perQuery * 1000).toFixed(0)} µs per query`)

  // The same index fused with an offline embedder (core's SemanticIndex, docs/benchmarks.md#routing-quality).
  if (!existsSync(join(MODEL, "model.onnx"))) {
    console.log(`  embedder rows skipped: no model at ${MODEL} (scripts/embedding-model.sh fetches it)`)
  } else {
    const documents = plugins.map((p) => ({
      name: p.name,
      title: p.nameForHuman,
      summary: p.description,
      whenToUse: sentences(p.descriptionForModel)
    }))
    const run = await Effect.runPromise(
      Effect.gen(function* () {
        const embedder = yield* Embedder.Embedder
        const e0 = performance.now()
        const semantic = yield* SemanticIndex.build(index, documents)
        const indexed = performance.now() - e0
        const e1 = performance.now()
        const vectors = yield* embedder.embed(queries.map((q) => q.query))
        const perEmbed = (performance.now() - e1) / queries.length
        const ranked = queries.map((q, i) =>
          Effect.runSync(SemanticIndex.rank(semantic, q.query, vectors[i]!))
        )
        return { semantic, indexed, perEmbed, ranked, name: embedder.name }
      }).pipe(Effect.provide(OnnxEmbedder.layer({ directory: MODEL })))
    )
    // A query text ranks the same wherever it appears, so its ranking is looked up by text.
    const at = new Map(queries.map((q, i) => [q.query, run.ranked[i]!]))
    const byWeight = (w: number) => (q: string) => {
      const r = at.get(q)!
      return [...r]
        .sort(
          (a, b) =>
            b.relevance + w * b.similarity - (a.relevance + w * a.similarity) || (a.name < b.name ? -1 : 1)
        )
        .map((x) => x.name)
    }
    const alone = (q: string) =>
      [...at.get(q)!].sort((a, b) => b.similarity - a.similarity).map((x) => x.name)
    const fused = (q: string) => at.get(q)!.map((x) => x.name)
    console.log(row("embedder alone", quality(queries, alone)))
    console.log(row(`SemanticIndex (fused, w ${SemanticIndex.WEIGHT})`, quality(queries, fused)))
    for (const [i, half] of halves.entries()) {
      const name = i === 0 ? "A" : "B"
      console.log(row(`  half ${name}: embedder alone`, quality(half, alone)))
      console.log(row(`  half ${name}: SemanticIndex`, quality(half, fused)))
    }
    console.log(
      `  embedder ${run.name}: ${run.semantic.vectors.length} plugins in ${run.indexed.toFixed(0)} ms, ${run.perEmbed.toFixed(1)} ms per query (batches of 32, 1 thread)`
    )
    console.log(
      "  fusion weight (chosen on half A):  " +
        [0.25, 0.5, 0.6, 0.75, 0.9, 1, 1.5, 2]
          .map(
            (w) =>
              `${w}: A ${f(quality(halves[0], byWeight(w)).at5)} B ${f(quality(halves[1], byWeight(w)).at5)}`
          )
          .join(" | ")
    )
  }

  // Predictive preload: one prediction per query, right when it names the labelled plugin.
  const predictions = queries.map((q) => {
    const p = Preload.predict(index, q.query)
    return { ok: p?.plugin === q.plugin, confidence: p?.confidence ?? 0 }
  })
  const split = [predictions.filter((_, i) => i % 2 === 0), predictions.filter((_, i) => i % 2 === 1)]
  console.log(
    `\nPredictive preload (confidence = relevance × margin; default threshold ${Preload.DEFAULT_THRESHOLD})`
  )
  console.log(
    "  threshold  | preloaded  precision  calls saved/turn | half A: prec  saved | half B: prec  saved"
  )
  for (const t of [0, 0.05, 0.08, 0.1, Preload.DEFAULT_THRESHOLD, 0.15, 0.2, 0.3]) {
    const all = preload(predictions, t)
    const [a, b] = split.map((s) => preload(s, t)) as [typeof all, typeof all]
    const mark = t === Preload.DEFAULT_THRESHOLD ? "*" : " "
    console.log(
      `  ${mark}${t.toFixed(2).padEnd(10)}| ${f(all.coverage).padEnd(11)}${f(all.precision).padEnd(11)}${f(all.saved).padEnd(17)}|` +
        ` ${f(a.precision).padStart(12)}  ${f(a.saved)} | ${f(b.precision).padStart(12)}  ${f(b.saved)}`
    )
  }

  // The examples' catalog: each manifest example is a turn, ranked as if it had never been written.
  const catalogIndex = CapabilityIndex.forCatalog(exampleCatalog)
  const examples: Array<{ ok: boolean; confidence: number }> = []
  for (const entry of exampleCatalog.entries) {
    if (!entry.discoverable || entry.visibility === "always") continue
    for (const [i, example] of (entry.manifest.examples ?? []).entries()) {
      const p = Preload.predict(CapabilityIndex.leaveOneOut(catalogIndex, entry.name, i), example.user)
      examples.push({ ok: p?.plugin === entry.name, confidence: p?.confidence ?? 0 })
    }
  }
  const ex = preload(examples, Preload.DEFAULT_THRESHOLD)
  console.log(
    `  examples' catalog, ${examples.length} examples of on-demand plugins (leave-one-out), threshold ${Preload.DEFAULT_THRESHOLD}:` +
      ` preloaded ${f(ex.coverage)}, precision ${f(ex.precision)}, calls saved/turn ${f(ex.saved)}`
  )
}
