/**
 * The system prompt of one model call: the host's base prompt, the Tier-1 block, then the
 * `prompt` sections of the plugins whose tools are offered (always-tier by name, then loaded
 * plugins in load order), so that, like the tool list, loading only appends.
 */
import type { Catalog, CatalogEntry } from "./Catalog.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import * as Tier1 from "./Tier1.js"

/** Sections are separated by one blank line. */
export const SEPARATOR = "\n\n"

const section = (entry: CatalogEntry): string | undefined => {
  const prompt = entry.plugin.prompt
  return typeof prompt === "string" && prompt.trim().length > 0 ? prompt.trim() : undefined
}

const alwaysSections = new WeakMap<Catalog, ReadonlyArray<string>>()

/** The `prompt` sections of always-tier plugins, by plugin name. Cached per catalog. */
export const alwaysPromptSections = (catalog: Catalog): ReadonlyArray<string> => {
  let out = alwaysSections.get(catalog)
  if (out === undefined) {
    out = catalog.entries
      .filter((e) => e.visibility === "always")
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .flatMap((e) => section(e) ?? [])
    alwaysSections.set(catalog, out)
  }
  return out
}

/**
 * The `prompt` sections of loaded plugins, in load order; unknown, silent, always-tier (already
 * in the always sections) and repeated names are skipped.
 */
export const loadedPromptSections = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins
): ReadonlyArray<string> => {
  const out: Array<string> = []
  const seen = new Set<string>()
  for (const name of loadedPlugins) {
    if (seen.has(name)) continue
    seen.add(name)
    const entry = catalog.byName.get(name)
    if (entry === undefined || !entry.discoverable || entry.visibility === "always") continue
    const s = section(entry)
    if (s !== undefined) out.push(s)
  }
  return out
}

/** Composes the system prompt; an empty base prompt is left out rather than leaving a gap. */
export const compose = (options: {
  readonly basePrompt: string
  readonly catalog: Catalog
  readonly loadedPlugins: LoadedPlugins.LoadedPlugins
}): string => {
  const parts: Array<string> = []
  const base = options.basePrompt.trimEnd()
  if (base.trim().length > 0) parts.push(base)
  parts.push(Tier1.render(options.catalog))
  parts.push(...alwaysPromptSections(options.catalog))
  parts.push(...loadedPromptSections(options.catalog, options.loadedPlugins))
  return parts.join(SEPARATOR)
}
