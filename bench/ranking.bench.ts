/**
 * Routing quality of `list_capabilities`' query ranking (`CapabilityIndex`) on an external
 * benchmark: MetaTool's 199 ChatGPT plugins and the labelled dev queries in
 * `../shared/benchmarks/metatool/` (MIT). Each plugin becomes a document the way a manifest
 * would carry it: name → name, `nameForHuman` → title, `description` → summary, the sentences of
 * `descriptionForModel` → whenToUse; no examples, no tags (the queries are the test). Plain BM25
 * (Okapi k1 1.2, b 0.75, a small stop list, over name + description + descriptionForModel — the
 * benchmark README's baseline, recall@5 0.548 on all queries) runs in the same process for
 * comparison. Skipped when the data is absent.
 *
 * Every figure is given on the whole dev split and on its two halves (even and odd lines): the
 * ranking's parameters and the preload threshold are general (never per query), and the preload
 * threshold was chosen on half A only, so half B is a held-out check of that choice.
 *
 * Predictive preload (core's `Preload`, README "Predictive preload"): each query is a turn that
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
import { CapabilityIndex, Preload } from "@plugboard/core"
import { exampleCatalog } from "../examples/catalog/index.js"

const here = dirname(fileURLToPath(import.meta.url))
const DATA = join(here, "..", "..", "shared", "benchmarks", "metatool")

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
