/**
 * BENCHMARK FIXTURE, not a working catalog: the 199 real ChatGPT plugins of the MetaTool
 * benchmark (Huang et al., 2023; MIT) turned into plugboard plugins, so that routing can be
 * measured on manifests no one here wrote:
 *
 *   pnpm plugboard inspect examples/metatool/index.ts --eval --queries ../shared/benchmarks/metatool/queries-dev.jsonl
 *
 * Every plugin has exactly one tool, and every tool returns the same fixed "not available
 * offline" result: the real plugins are remote services this repository neither has nor calls.
 *
 * How each benchmark entry becomes a manifest (nothing is invented):
 * - `name` → a kebab-case plugin name (`FinanceTool` → `finance-tool`); the rare collision gets
 *   `-2`, `-3`, ... in file order. `metatoolAliases` maps each original name to its plugin name,
 *   so labelled queries (which use the original names) can be scored.
 * - `nameForHuman` → `title` (or the name's words, capitalised, when absent);
 * - `description` → `summary`, cut at a word boundary to the recommended 120 characters;
 * - the sentences of `descriptionForModel` (or of `description`) → `whenToUse`, each long
 *   sentence split at word boundaries into pieces of at most 100 characters, at most 8 pieces;
 * - the words of the name → `tags` (without the generic "tool" and "plugin").
 *
 * The data lives outside the repository, in `../shared/benchmarks/metatool/plugins.json` from the
 * repository root (CI clones `shared/` beside the repository). Importing this module without it
 * throws a `MetaToolDataMissingError` saying where it looked.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Catalog, definePlugin, defineTool, ManifestLimits, type Plugin } from "@plugboard/core"
import { Schema } from "effect"

/** One entry of the benchmark's `plugins.json`. */
export interface MetaToolEntry {
  readonly name: string
  readonly description: string
  readonly nameForHuman?: string
  readonly descriptionForModel?: string
}

const here = dirname(fileURLToPath(import.meta.url))

/** Where the benchmark data is looked for: `<repo>/../shared/benchmarks/metatool/`. */
export const METATOOL_DIR = resolve(here, "..", "..", "..", "shared", "benchmarks", "metatool")

/** The default `plugins.json`. */
export const METATOOL_PLUGINS_PATH = join(METATOOL_DIR, "plugins.json")

/** The benchmark data is not where it should be. */
export class MetaToolDataMissingError extends Error {
  readonly _tag = "MetaToolDataMissingError"
  constructor(readonly path: string) {
    super(
      `MetaTool benchmark data not found at ${path}. This catalog is a benchmark fixture built from ` +
        "../shared/benchmarks/metatool/plugins.json (relative to the repository root): clone or copy the " +
        "shared/ directory beside the repository, or pass another path to loadMetaToolPlugins()."
    )
    this.name = "MetaToolDataMissingError"
  }
}

/** What every tool of this catalog returns. */
export const NOT_AVAILABLE_OFFLINE = "not available offline"

const GENERIC_WORDS = new Set(["tool", "plugin"])

/** The words of a benchmark name: split on case changes, digits kept with their word, `_`/`&`/spaces dropped. */
export const nameWords = (name: string): Array<string> =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0)

/** The kebab-case plugin name of a benchmark name (before collisions are resolved). */
export const kebabName = (name: string): string => {
  const base = nameWords(name).join("-")
  if (base.length === 0) return "plugin"
  return /^[a-z]/.test(base) ? base : `plugin-${base}`
}

/** `text` cut at a word boundary to at most `max` characters, with an ellipsis when cut. */
export const clip = (text: string, max: number): string => {
  const t = text.replace(/\s+/g, " ").trim()
  if (t.length <= max) return t
  const cut = t.slice(0, max - 1)
  const space = cut.lastIndexOf(" ")
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.-]+$/, "")}…`
}

/** Sentences of `text`, each split into word-bounded pieces of at most `max` characters. */
export const pieces = (text: string, max: number): Array<string> => {
  const out: Array<string> = []
  for (const sentence of text.replace(/\s+/g, " ").split(/(?<=[.!?])\s+/)) {
    let current = ""
    for (const word of sentence.trim().split(" ")) {
      if (word.length === 0) continue
      const next = current.length === 0 ? word : `${current} ${word}`
      if (next.length <= max) current = next
      else {
        if (current.length > 0) out.push(current)
        current = word.slice(0, max)
      }
    }
    if (current.length > 0) out.push(current)
  }
  return out
}

const Request = Schema.Struct({
  request: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)).annotations({
    description: "What the user asked, in their words"
  })
})

/** Plugin names for `entries`, unique, in order: a collision gets `-2`, `-3`, ... */
const uniqueNames = (entries: ReadonlyArray<MetaToolEntry>): Array<string> => {
  const taken = new Set<string>()
  return entries.map((e) => {
    const base = kebabName(e.name)
    let name = base
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`
    taken.add(name)
    return name
  })
}

/** The plugin of one benchmark entry, named `name`. */
export const toPlugin = (entry: MetaToolEntry, name: string): Plugin => {
  const words = nameWords(entry.name)
  const title =
    entry.nameForHuman?.trim() || words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(" ") || name
  const summary = clip(entry.description, ManifestLimits.summaryMaxChars)
  const whenToUse = pieces(
    entry.descriptionForModel ?? entry.description,
    ManifestLimits.whenToUseEntryMaxChars
  ).slice(0, ManifestLimits.whenToUseMaxEntries)
  const tags = [...new Set(words.filter((w) => !GENERIC_WORDS.has(w)))]
  return definePlugin({
    name,
    manifest: {
      title,
      summary: summary.length > 0 ? summary : title,
      whenToUse: whenToUse.length > 0 ? whenToUse : [summary],
      tags,
      category: "integration",
      visibility: "on-demand",
      stability: "experimental"
    },
    tools: [
      defineTool({
        name: name.replace(/-/g, "_").slice(0, 64),
        description: `Benchmark fixture: stands in for the '${entry.name}' ChatGPT plugin and always returns "${NOT_AVAILABLE_OFFLINE}".`,
        input: Request,
        handler: () => ({
          plugin: name,
          benchmark: "MetaTool",
          available: false,
          result: NOT_AVAILABLE_OFFLINE
        })
      })
    ]
  })
}

const isEntry = (u: unknown): u is MetaToolEntry => {
  const e = u as Partial<Record<keyof MetaToolEntry, unknown>>
  return (
    typeof u === "object" &&
    u !== null &&
    typeof e.name === "string" &&
    typeof e.description === "string" &&
    (e.nameForHuman === undefined || typeof e.nameForHuman === "string") &&
    (e.descriptionForModel === undefined || typeof e.descriptionForModel === "string")
  )
}

/** Reads and checks `plugins.json`; a missing file or a malformed entry is a clear error. */
export const readMetaToolEntries = (path: string = METATOOL_PLUGINS_PATH): ReadonlyArray<MetaToolEntry> => {
  if (!existsSync(path)) throw new MetaToolDataMissingError(path)
  const data: unknown = JSON.parse(readFileSync(path, "utf8"))
  if (!Array.isArray(data)) throw new Error(`${path}: expected a JSON array of plugins.`)
  data.forEach((e, i) => {
    if (!isEntry(e)) throw new Error(`${path}: entry #${i} needs string 'name' and 'description'.`)
  })
  return data as ReadonlyArray<MetaToolEntry>
}

/** The benchmark's plugins and the map from each original name to its plugin name. */
export const loadMetaToolPlugins = (
  path: string = METATOOL_PLUGINS_PATH
): { readonly plugins: ReadonlyArray<Plugin>; readonly aliases: ReadonlyMap<string, string> } => {
  const entries = readMetaToolEntries(path)
  const names = uniqueNames(entries)
  return {
    plugins: entries.map((e, i) => toPlugin(e, names[i]!)),
    aliases: new Map(entries.map((e, i) => [e.name, names[i]!]))
  }
}

const loaded = loadMetaToolPlugins()

/** The benchmark's 199 plugins (a fixture: every tool answers "not available offline"). */
export const metatoolPlugins: ReadonlyArray<Plugin> = loaded.plugins

/** Original benchmark name (as the labelled queries spell it) → plugin name. */
export const metatoolAliases: ReadonlyMap<string, string> = loaded.aliases

/** The catalog of the benchmark's plugins. */
export const metatoolCatalog: Catalog.Catalog = Catalog.unsafeMake(metatoolPlugins)

/** What `plugboard inspect` reads from a plugin module. */
export const plugins = metatoolPlugins
/** Label aliases for `inspect --queries`: a query labelled with an original name scores its plugin. */
export const aliases: Readonly<Record<string, string>> = Object.fromEntries(metatoolAliases)
export default metatoolPlugins
