/**
 * The manifest a source's own words give (`CatalogSource` re-exports each function): an MCP
 * server's `initialize` answer and tools, or a skill's front matter. The words are the source
 * author's, written for people reading a README, not for routing; so they are read as prose:
 * markdown and install paths are dropped, a title loses its package name, a long sentence is
 * split at its clauses rather than cut, and "do not use it for…" goes to `whenNotToUse`
 * (docs/mounting.md#the-derived-manifest).
 */
import type { PluginManifest } from "../PluginManifest.js"
import { cutAtWord } from "./text.js"

/** What an MCP server says about itself: its `initialize` answer and its tools. */
export interface McpServerFacts {
  readonly serverInfo?:
    | {
        readonly name?: string | undefined
        readonly title?: string | undefined
        readonly version?: string | undefined
      }
    | undefined
  readonly instructions?: string | undefined
  readonly tools: ReadonlyArray<{
    readonly name: string
    readonly title?: string | undefined
    readonly description?: string | undefined
  }>
}

/** What a skill's `SKILL.md` front matter says. */
export interface SkillFacts {
  readonly name: string
  readonly description: string
}

// The manifest rules' soft limits (`ManifestLimits`): a derived manifest raises no warning of its own.
const SUMMARY_MAX = 120
const WHEN_MAX = 100
const WHEN_ENTRIES = 8

/** Text on one line: runs of whitespace as one space, trimmed; anything not a string is empty. */
export const clean = (text: string | undefined): string =>
  typeof text === "string" ? text.replace(/\s+/g, " ").trim() : ""

/** The first sentence of a text, or its start cut at a word, within `max` characters. */
export const firstSentence = (text: string, max: number): string => {
  const flat = clean(text)
  if (flat.length === 0) return ""
  const end = flat.search(/[.!?](\s|$)/)
  return cutAtWord(end >= 0 ? flat.slice(0, end + 1) : flat, max)
}

/**
 * Markdown as plain sentences: headings, code fences and tables are not prose and are dropped; a
 * list item or a line ending without punctuation ends its sentence; emphasis and inline-code
 * marks go, their words stay.
 */
const plainText = (text: string): string => {
  const lines: string[] = []
  let fenced = false
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line.startsWith("```")) {
      fenced = !fenced
      continue
    }
    if (fenced || line.startsWith("#") || line.startsWith("|") || /^[-=*_]{3,}$/.test(line)) continue
    const item = line.replace(/^([-*+]|\d+[.)])\s+/, "")
    if (item.length === 0) continue
    const words = item.replace(/\*\*|__|`/g, "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    lines.push(/[.!?:;]$/.test(words) ? words : `${words}.`)
  }
  return lines.join(" ")
}

/** A sentence naming a local path says where the source is installed, not what it does. */
const LOCAL_PATH = /(^|[\s("'`])(~\/|\.{1,2}\/|\/(usr|home|opt|var|etc|tmp|Users|nix|snap)\/|[A-Za-z]:\\)/
/** A sentence that says when not to use the source. */
const NEGATIVE = /^(do not|don't|never|avoid|not for)\b|\b(do not|don't|never) (use|trigger|call|invoke)\b/i

/**
 * The sentences of a text, each within `max` characters: a longer one is split at its clauses
 * (`;`, `:`, ` — `, `, `) into pieces that fit, so none of its words is lost; only a clause
 * longer than `max` by itself is cut, at a word.
 */
const sentencesOf = (text: string, max: number): ReadonlyArray<string> =>
  plainText(text)
    .split(/(?<=[.!?])\s+/)
    .map(clean)
    .filter((s) => s.length > 0 && !LOCAL_PATH.test(s))
    .flatMap((s) => fitted(s, max))

const fitted = (sentence: string, max: number): ReadonlyArray<string> => {
  if (sentence.length <= max) return [sentence]
  const clauses = sentence.split(/(?<=[;:,])\s+|\s+(?=—\s)/)
  const out: string[] = []
  let current = ""
  for (const clause of clauses) {
    const joined = current.length === 0 ? clause : `${current} ${clause}`
    if (joined.length <= max) current = joined
    else {
      if (current.length > 0) out.push(current)
      current = clause
    }
  }
  if (current.length > 0) out.push(current)
  return out.map((piece) => cutAtWord(piece.replace(/[,;:]$/, ""), max))
}

/** Words a package name adds to a title, saying nothing about what the source does. */
const PACKAGING = new Set(["mcp", "server", "servers"])
/** Words spelled in capitals, or in their brand's casing, whatever the source wrote. */
const SPELLED: Readonly<Record<string, string>> = Object.fromEntries(
  [
    "ai api aws cli csv css dns docx gcp html http id json jwt llm ocr pdf pptx sdk sql ssh ui url xlsx xml yaml",
    "GitHub GitLab SQLite PostgreSQL arXiv OpenAI"
  ]
    .join(" ")
    .split(" ")
    .map((w) => [w.toLowerCase(), /^[a-z]+$/.test(w) ? w.toUpperCase() : w])
)

/**
 * A title from a name or a server's own title: the last segment of a package path
 * (`Example Servers/postgres` → `postgres`), without `mcp` and a trailing `server`, each word
 * capitalised unless the source cased it (`Calc MCP` → `Calc`, `pdf` → `PDF`, `mcp-git` → `Git`).
 */
export const titleOf = (name: string): string => {
  const words = clean(name.split(/[\\/]/).pop())
    .split(/[-_\s]+/)
    .filter((w) => w.length > 0)
  const kept = words.filter((w, i) => w.toLowerCase() !== "mcp" && !(i > 0 && PACKAGING.has(w.toLowerCase())))
  const named = (kept.length > 0 ? kept : words).filter(
    (w) => !(kept.length > 1 && w.toLowerCase() === "server")
  )
  return named
    .map((w) => SPELLED[w.toLowerCase()] ?? (w === w.toLowerCase() ? w[0]!.toUpperCase() + w.slice(1) : w))
    .join(" ")
}

/** Distinct words of tool names (`get_issue`, `list-issues` → `issue`, `list`, ...), for tags. */
const toolWords = (tools: McpServerFacts["tools"]): ReadonlyArray<string> => {
  const counts = new Map<string, number>()
  for (const t of tools) {
    for (const w of t.name.toLowerCase().split(/[^a-z0-9]+/)) {
      if (w.length > 2 && !STOP.has(w)) counts.set(w, (counts.get(w) ?? 0) + 1)
    }
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 6)
    .map(([w]) => w)
}
const STOP = new Set(["get", "set", "the", "and", "for", "with", "tool", "new", "mcp", "api"])

/** Sentences split into those that say when to use a source and those that say when not to. */
const byUse = (sentences: ReadonlyArray<string>) => ({
  use: sentences.filter((s) => !NEGATIVE.test(s)),
  notToUse: sentences.filter((s) => NEGATIVE.test(s))
})

/**
 * The manifest an MCP server's facts give:
 * - the title from `serverInfo.title`, else its `name`, else the config key (`titleOf`);
 * - the summary from the first sentence of `instructions`, else the lone tool's description, else
 *   the tool names (never their count: a number in the summary matches numbers in requests);
 * - `whenToUse` from the instructions' other sentences, else one entry per tool description (at
 *   most 8; every tool's description is indexed for the ranking anyway, `CapabilityIndex`);
 * - `whenNotToUse` from the sentences that say when not to;
 * - tags from the words of the tool names.
 * Visibility is left out: `on-demand`, the default.
 */
export const deriveMcpManifest = (name: string, facts: McpServerFacts): PluginManifest => {
  const info = facts.serverInfo
  // A server name of separators only (`_`) titles nothing: then the plugin's own name does.
  const title = titleOf(clean(info?.title)) || titleOf(clean(info?.name)) || titleOf(name) || name
  const tools = facts.tools
  // What each tool says of itself; a tool that says nothing is named (its name is all there is).
  const said = tools.map((t) => clean(t.description) || clean(t.title))
  const described = tools.flatMap((t, i) =>
    fitted(firstSentence(said[i] || `Does ${t.name}.`, 400), WHEN_MAX).slice(0, 1)
  )
  const { use, notToUse } = byUse(sentencesOf(facts.instructions ?? "", WHEN_MAX))
  const listed = tools
    .slice(0, 6)
    .map((t) => t.name)
    .join(", ")
  const summary =
    firstSentence(
      plainText(facts.instructions ?? "")
        .split(/(?<=[.!?])\s+/)
        .find((s) => !LOCAL_PATH.test(s) && !NEGATIVE.test(s)) ?? "",
      SUMMARY_MAX
    ) ||
    (tools.length === 1 && said[0]!.length > 0
      ? firstSentence(described[0]!, SUMMARY_MAX)
      : tools.length === 0
        ? `Tools of the MCP server '${name}'.`
        : firstSentence(`${title}: ${listed}${tools.length > 6 ? ", …" : ""}.`, SUMMARY_MAX))
  const whenToUse = (
    use.length > 1 ? use.slice(1) : use.length === 1 && described.length === 0 ? use : described
  ).slice(0, WHEN_ENTRIES)
  return {
    title,
    summary,
    whenToUse:
      whenToUse.length > 0
        ? whenToUse
        : [cutAtWord(`The user needs what the '${name}' server does: ${summary}`, WHEN_MAX)],
    ...(notToUse.length > 0 ? { whenNotToUse: notToUse.slice(0, WHEN_ENTRIES) } : {}),
    ...(tools.length > 0 ? { tags: toolWords(tools) } : {}),
    category: "integration"
  }
}

/**
 * The manifest a skill's front matter gives: the title from its name, the summary from the first
 * sentence of its description (its first clauses when that sentence is long), and `whenToUse` from
 * the rest, every clause kept (the Agent Skills format puts "what it does and when to use it"
 * there); its "do not use it for…" sentences become `whenNotToUse`.
 */
export const deriveSkillManifest = (facts: SkillFacts): PluginManifest => {
  const { use, notToUse } = byUse(sentencesOf(facts.description, WHEN_MAX))
  const first =
    sentencesOf(facts.description, SUMMARY_MAX).find((s) => !NEGATIVE.test(s)) ?? clean(facts.description)
  // The summary's words are not repeated in whenToUse: the pieces of `use` it covers are skipped.
  const rest = use.filter((piece) => !first.includes(piece)).slice(0, WHEN_ENTRIES)
  return {
    title: titleOf(facts.name),
    summary: cutAtWord(first, SUMMARY_MAX),
    whenToUse:
      rest.length > 0 ? rest : use.slice(0, 1).length > 0 ? use.slice(0, 1) : [cutAtWord(first, WHEN_MAX)],
    ...(notToUse.length > 0 ? { whenNotToUse: notToUse.slice(0, WHEN_ENTRIES) } : {})
  }
}

/** A manifest for a server known only by its config (unreachable at boot, never cached). */
export const placeholderManifest = (name: string): PluginManifest => ({
  title: titleOf(name) || name,
  summary: `Tools of the MCP server '${name}'.`,
  whenToUse: [cutAtWord(`The user needs the tools of the '${name}' server.`, WHEN_MAX)],
  category: "integration"
})
