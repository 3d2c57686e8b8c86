/**
 * The system prompt of one model call: the host's base prompt, the Tier-1 block, then the
 * `prompt` sections of the plugins whose tools are offered (always-tier by name, then loaded
 * plugins in load order), so that, like the tool list, loading only appends.
 *
 * An always-tier plugin is never loaded, so its `operatingGuide` (which `load_capability` returns
 * for on-demand plugins) goes here, after its `prompt`, within `ALWAYS_GUIDE_MAX_CHARS`
 * (docs/plugins.md#operating-guides). What a user's grants deny (`Access`) is left out.
 */
import * as Access from "./Access.js"
import * as CatalogIndex from "./CatalogIndex.js"
import type { Catalog } from "./internal/catalog/model.js"
import { SEPARATOR, section } from "./internal/promptSections.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import * as Tier1 from "./Tier1.js"

export { ALWAYS_GUIDE_MAX_CHARS, boundedGuide, GUIDE_CUT_NOTE, SEPARATOR } from "./internal/promptSections.js"

/**
 * The sections of always-tier plugins, by plugin name: each plugin's `prompt`, then its operating
 * guide (`boundedGuide`). With a `view`, the plugins it denies are left out. Built once per
 * catalog (`CatalogIndex.alwaysSections`) and per view.
 */
export const alwaysPromptSections = (catalog: Catalog, view?: Access.View): ReadonlyArray<string> =>
  view !== undefined && !view.open
    ? CatalogIndex.ofView(catalog, view).alwaysSections
    : catalog.index.alwaysSections

/**
 * The `prompt` sections of loaded plugins, in load order; unknown, silent, always-tier (already
 * in the always sections) and repeated names are skipped, and so are those a `view` denies.
 */
export const loadedPromptSections = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  view?: Access.View
): ReadonlyArray<string> => {
  const out: Array<string> = []
  const seen = new Set<string>()
  for (const name of loadedPlugins) {
    if (seen.has(name)) continue
    seen.add(name)
    const entry = catalog.byName.get(name)
    if (entry === undefined || !entry.discoverable || entry.visibility === "always") continue
    if (view?.denied.has(name) === true) continue
    const s = section(entry)
    if (s !== undefined) out.push(s)
  }
  return out
}

/**
 * Composes the system prompt; an empty base prompt is left out rather than leaving a gap. What
 * the user's `view` (`Access.view`; default: no grants, as `Offer.offer`) denies is left out of
 * the Tier-1 block and of the plugin sections.
 */
export const compose = (options: {
  readonly basePrompt: string
  readonly catalog: Catalog
  readonly loadedPlugins: LoadedPlugins.LoadedPlugins
  readonly view?: Access.View | undefined
}): string => {
  const parts: Array<string> = []
  const base = options.basePrompt.trimEnd()
  if (base.trim().length > 0) parts.push(base)
  const view = options.view ?? Access.view(options.catalog)
  parts.push(Tier1.renderFor(options.catalog, view))
  parts.push(...alwaysPromptSections(options.catalog, view))
  parts.push(...loadedPromptSections(options.catalog, options.loadedPlugins, view))
  return parts.join(SEPARATOR)
}
