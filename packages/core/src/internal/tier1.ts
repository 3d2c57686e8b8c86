/**
 * How the Tier-1 block is rendered from entries (docs/spec/tiers.md#the-tier-1-block); `Tier1`
 * re-exports these names and renders a catalog's block from its `CatalogIndex`.
 */
import type { CatalogEntry } from "./catalog/entry.js"
import { LIST_CAPABILITIES, LOAD_CAPABILITY } from "./metaTools.js"

/** The block's heading. */
export const HEADING = "## Available Capabilities"

/** The closing hint, worded as docs/spec/tiers.md#the-tier-1-block has it. */
export const HINT =
  `For more capabilities, call ${LIST_CAPABILITIES} to discover what else\n` +
  `you can use, then ${LOAD_CAPABILITY} to make tools available.`

/** A summary on one line: the block's shape is one line per plugin, whatever the manifest holds. */
const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

/** The `- name: summary` line of one plugin. */
export const line = (entry: CatalogEntry): string => `- ${entry.name}: ${oneLine(entry.manifest.summary)}`

/**
 * Renders the block for the given entries: the `always` ones, sorted by name (code-point order,
 * not locale, so every host renders the same bytes), whatever order they come in.
 */
export const renderEntries = (entries: Iterable<CatalogEntry>): string => {
  const always: Array<CatalogEntry> = []
  for (const e of entries) if (e.visibility === "always") always.push(e)
  always.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  // With no always plugin the list is simply absent: the heading and the hint remain, because
  // the hint is how the model learns that discovery exists at all.
  const parts = always.length === 0 ? [HEADING, HINT] : [HEADING, always.map(line).join("\n"), HINT]
  return parts.join("\n\n")
}
