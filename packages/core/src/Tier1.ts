/**
 * The Tier-1 prompt block (docs/spec/tiers.md#the-tier-1-block): one line per `always` plugin, then the hint that the rest
 * is discovered with the meta-tools. On-demand and silent plugins never appear in it.
 */
import type * as Access from "./Access.js"
import type { Catalog, CatalogEntry } from "./Catalog.js"
import { LIST_CAPABILITIES, LOAD_CAPABILITY } from "./MetaTools.js"

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

const cache = new WeakMap<Catalog, string>()

/**
 * The Tier-1 block of a catalog: deterministic and independent of registration order. With
 * zero always plugins it is the heading and the hint only. Cached per catalog.
 */
export const render = (catalog: Catalog): string => {
  let text = cache.get(catalog)
  if (text === undefined) {
    text = renderEntries(catalog.entries)
    cache.set(catalog, text)
  }
  return text
}

const viewCache = new WeakMap<Access.View, string>()

/**
 * The Tier-1 block as a user's `view` (`Access.view`) sees it: an always plugin the user may not
 * use is left out (its tools are not offered to them either). Cached per view.
 */
export const renderFor = (catalog: Catalog, view: Access.View | undefined): string => {
  if (view === undefined || view.open) return render(catalog)
  let text = viewCache.get(view)
  if (text === undefined) {
    text = renderEntries(catalog.entries.filter((e) => !view.denied.has(e.name)))
    viewCache.set(view, text)
  }
  return text
}
