/**
 * Boot cost of a 5,000-plugin catalog.
 *
 * 1. Manifest validation, ours vs the published QiForge runtime's zod-based validator, on the
 *    same manifests in the same process (rounds alternate so drift hits both alike). Both sides
 *    do what boot does per plugin: the manifest rules plus examples checked against tool names.
 * 2. Our full `Catalog.make`: validation, tool resolution, JSON Schema derivation, collision and
 *    dependency checks. "cold" uses fresh tool schemas each round (JSON Schema derived for every
 *    tool); "warm" rebuilds from the same plugins (derived schemas are cached per schema object).
 */
import {
  Catalog,
  Category,
  isCleanManifest,
  type Plugin,
  type PluginManifest,
  type PluginTool,
  validateManifest
} from "@plugboard/core"
import { Either, Schema } from "effect"
import { loadQiForgeValidator } from "./reference-qiforge.js"

const PLUGINS = 5_000
const ROUNDS = 60

/** Deterministic PRNG (mulberry32) so every run measures the same catalog. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const NOUNS = [
  "weather",
  "ledger",
  "invoice",
  "climate",
  "sensor",
  "ticket",
  "contract",
  "wallet",
  "report",
  "map"
]
const NOUNS2 = ["data", "sync", "hub", "search", "index", "store", "feed", "bridge", "audit", "notes"]
const VERBS = ["get", "list", "create", "update", "search", "delete", "summarise", "export"]
const CATEGORIES = Category.literals
const STABILITIES = ["stable", "beta", "experimental"] as const

interface Generated {
  readonly plugins: ReadonlyArray<Plugin>
  readonly manifests: ReadonlyArray<{ name: string; manifest: PluginManifest; toolNames: string[] }>
}

/** A tool input, and args that fit it (boot checks each example's args against its tool). */
const makeInput = (
  next: () => number
): {
  readonly input: Schema.Schema<unknown, unknown, never>
  readonly args: (query: string) => Readonly<Record<string, unknown>>
} => {
  const fields: Record<string, Schema.Schema.Any | Schema.PropertySignature.Any> = {
    query: Schema.String.annotations({ description: "What to look up." })
  }
  if (next() < 0.6) fields.limit = Schema.optional(Schema.Number.annotations({ description: "Max results." }))
  if (next() < 0.4) fields.format = Schema.Literal("json", "text", "table")
  if (next() < 0.3) fields.ids = Schema.Array(Schema.String)
  if (next() < 0.3) fields.includeArchived = Schema.optional(Schema.Boolean)
  return {
    input: Schema.Struct(fields as Schema.Struct.Fields) as unknown as Schema.Schema<unknown, unknown, never>,
    args: (query) => ({
      query,
      ...("limit" in fields ? { limit: 5 } : {}),
      ...("format" in fields ? { format: "json" } : {}),
      ...("ids" in fields ? { ids: ["a1"] } : {})
    })
  }
}

/** 5,000 plugins shaped like real ones: 2–4 tools, 1–3 examples, a few dependencies. */
export const generate = (seed: number): Generated => {
  const next = rng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(next() * xs.length)] as A
  const plugins: Plugin[] = []
  const manifests: Array<{ name: string; manifest: PluginManifest; toolNames: string[] }> = []
  for (let i = 0; i < PLUGINS; i++) {
    const noun = pick(NOUNS)
    const name = `${noun}-${pick(NOUNS2)}-${i}`
    const toolCount = 2 + Math.floor(next() * 3)
    const verbs = [...VERBS].sort(() => next() - 0.5).slice(0, toolCount)
    const inputs = verbs.map(() => makeInput(next))
    const tools: PluginTool[] = verbs.map((verb, t) => ({
      name: `${verb}_${noun}_${i}`,
      description: `${verb[0]?.toUpperCase()}${verb.slice(1)} ${noun} records from the ${name} service.`,
      input: inputs[t]?.input as PluginTool["input"],
      handler: () => "ok"
    }))
    const toolNames = tools.map((t) => t.name)
    const roll = next()
    const visibility = roll < 0.01 ? "always" : roll < 0.03 ? "silent" : "on-demand"
    const manifest: PluginManifest = {
      title: `${noun[0]?.toUpperCase()}${noun.slice(1)} ${i}`,
      summary:
        next() < 0.05
          ? `A deliberately verbose summary for ${name} that keeps going well past the recommended length so that the validator emits a warning.`
          : `${noun} lookups and updates through the ${name} API.`,
      whenToUse: Array.from(
        { length: 1 + Math.floor(next() * 4) },
        (_, k) => `When the user asks about ${noun} ${pick(NOUNS2)} (case ${k}).`
      ),
      ...(next() < 0.5 ? { whenNotToUse: [`Questions unrelated to ${noun}.`] } : {}),
      examples: Array.from({ length: 1 + Math.floor(next() * 3) }, (_, k) => ({
        user: `Show me the ${noun} for case ${k}.`,
        thought: next() < 0.5 ? `Direct lookup: call ${toolNames[0]}.` : undefined,
        tool: toolNames[k % toolNames.length] as string,
        args: inputs[k % inputs.length]?.args(`${noun} ${k}`) ?? {}
      })).map((e) => (e.thought === undefined ? { user: e.user, tool: e.tool, args: e.args } : e)),
      tags: [noun, pick(NOUNS2), "generated"],
      category: pick(CATEGORIES),
      visibility,
      stability: pick(STABILITIES)
    }
    const dependsOn = i > 10 && next() < 0.1 ? [plugins[Math.floor(next() * i)]?.name as string] : undefined
    plugins.push({ name, manifest, tools, ...(dependsOn ? { dependsOn } : {}) })
    manifests.push({ name, manifest, toolNames })
  }
  return { plugins, manifests }
}

interface Sample {
  readonly wall: number
  readonly cpu: number
}

/**
 * Wall time, plus this process's CPU time: on a shared, loaded machine wall time swings with
 * the neighbours while CPU time mostly tracks the work done (GC helper threads included).
 */
const time = (fn: () => void): Sample => {
  const cpu = process.cpuUsage()
  const start = performance.now()
  fn()
  const wall = performance.now() - start
  const used = process.cpuUsage(cpu)
  return { wall, cpu: (used.user + used.system) / 1000 }
}

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

const stats = (samples: ReadonlyArray<Sample>) => ({
  median: median(samples.map((s) => s.wall)),
  min: Math.min(...samples.map((s) => s.wall)),
  cpu: median(samples.map((s) => s.cpu))
})

const fmt = (ms: number) => `${ms.toFixed(2)} ms`
const line = (label: string, samples: ReadonlyArray<Sample>) => {
  const s = stats(samples)
  console.log(
    `${label.padEnd(52)} median ${fmt(s.median)}  min ${fmt(s.min)}  cpu median ${fmt(s.cpu)}  (${samples.length} rounds)`
  )
  return s
}

export default async () => {
  const { plugins, manifests } = generate(1)
  const tools = plugins.reduce((n, p) => n + (p.tools?.length ?? 0), 0)
  console.log(`catalog: ${PLUGINS} plugins, ${tools} tools (2-4 per plugin, Effect Schema inputs)`)

  // Sanity: our verdicts on the generated catalog, so the timed work is the realistic case.
  let ourWarnings = 0
  let clean = 0
  for (const m of manifests) {
    if (isCleanManifest(m.manifest, m.toolNames)) clean++
    const r = validateManifest(m.manifest, m.name, m.toolNames)
    if (!r.valid) throw new Error(`generated manifest rejected: ${r.errors[0]}`)
    ourWarnings += r.warnings.length
  }

  const ours = () => {
    for (const m of manifests) validateManifest(m.manifest, m.name, m.toolNames)
  }
  const reference = await loadQiForgeValidator()
  const theirs =
    typeof reference === "string"
      ? undefined
      : () => {
          for (const m of manifests) {
            reference.validateManifest(m.manifest, m.name)
            reference.validateExamplesAgainstTools(m.manifest, m.toolNames, m.name)
          }
        }
  if (theirs !== undefined && typeof reference !== "string") {
    let theirWarnings = 0
    for (const m of manifests) {
      const r = reference.validateManifest(m.manifest, m.name)
      const x = reference.validateExamplesAgainstTools(m.manifest, m.toolNames, m.name)
      if (!r.valid || x.errors.length > 0)
        throw new Error(`reference rejected ${m.name}: ${r.errors[0] ?? x.errors[0]}`)
      theirWarnings += r.warnings.length
    }
    console.log(
      `both validators accept all ${PLUGINS}; warnings: ours ${ourWarnings}, QiForge ${theirWarnings}`
    )
  } else {
    console.log(`QiForge reference skipped: ${reference as string}`)
  }
  console.log(`${clean} of ${PLUGINS} manifests are clean (no warning) and take our allocation-free path`)

  // Warm-up both (JIT), then alternate rounds so drift on the machine hits both alike.
  for (let i = 0; i < 20; i++) {
    ours()
    theirs?.()
  }
  const ourSamples: Sample[] = []
  const theirSamples: Sample[] = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) ourSamples.push(time(ours))
    if (theirs) theirSamples.push(time(theirs))
    if (round % 2 === 1) ourSamples.push(time(ours))
  }
  const o = line(`validate ${PLUGINS} manifests, ours`, ourSamples)
  if (theirSamples.length > 0) {
    const t = line(`validate ${PLUGINS} manifests, QiForge 1.95.0 (zod)`, theirSamples)
    console.log(
      `ratio ours/QiForge (< 1 = ours faster): median ${(o.median / t.median).toFixed(2)}x  min ${(o.min / t.min).toFixed(2)}x  cpu ${(o.cpu / t.cpu).toFixed(2)}x`
    )
  }

  // Full catalog build. Cold rounds get their own freshly generated plugins (generation untimed).
  const cold: Sample[] = []
  for (let round = 0; round < 5; round++) {
    const fresh = generate(100 + round).plugins
    cold.push(
      time(() => {
        if (Either.isLeft(Catalog.make(fresh))) throw new Error("catalog failed to boot")
      })
    )
  }
  // The generated examples fit their tools: a misfit would take the slow, message-building path.
  const booted = Catalog.make(plugins)
  if (Either.isLeft(booted)) throw new Error("catalog failed to boot")
  const misfits = booted.right.warnings.filter((w) => w.includes("): args ")).length
  if (misfits > 0) throw new Error(`${misfits} generated examples do not fit their tools`)
  for (let round = 0; round < 3; round++) Catalog.make(plugins)
  const warm: Sample[] = []
  for (let round = 0; round < 15; round++) {
    warm.push(
      time(() => {
        if (Either.isLeft(Catalog.make(plugins))) throw new Error("catalog failed to boot")
      })
    )
  }
  line(`Catalog.make ${PLUGINS} plugins, cold (JSON Schemas derived)`, cold)
  line(`Catalog.make ${PLUGINS} plugins, warm (JSON Schemas cached)`, warm)
}
