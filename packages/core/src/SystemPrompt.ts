/**
 * The system prompt of one model call: the host's base prompt, the Tier-1 block, then the
 * `prompt` sections of the plugins whose tools are offered (always-tier by name, then loaded
 * plugins in load order), so that, like the tool list, loading only appends.
 *
 * An always-tier plugin is never loaded, so its `operatingGuide` (which `load_capability` returns
 * for on-demand plugins) goes here, after its `prompt`, within `ALWAYS_GUIDE_MAX_CHARS`
 * (README "Operating guides"). What a user's grants deny (`Access`) is left out.
 */
import * as Access from "./Access.js"
import type { Catalog, CatalogEntry } from "./Catalog.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import * as Tier1 from "./Tier1.js"

/** Sections are separated by one blank line. */
export const SEPARATOR = "\n\n"

const section = (entry: CatalogEntry): string | undefined => {
  const prompt = entry.plugin.prompt
  return typeof prompt === "string" && prompt.trim().length > 0 ? prompt.trim() : undefined
}

/**
 * Most characters of an always-tier plugin's operating guide the system prompt carries (about
 * 3,000 tokens, the size `plugboard inspect` warns above): it is paid on every model call.
 */
export const ALWAYS_GUIDE_MAX_CHARS = 12_000

/** The note that ends a guide cut to `ALWAYS_GUIDE_MAX_CHARS`. */
export const GUIDE_CUT_NOTE = "[operating guide cut: it is longer than the system prompt carries]"

/**
 * An always-tier plugin's guide as the system prompt carries it: whole within the bound, else cut
 * at the last line break (or space) before it and ended with `GUIDE_CUT_NOTE`.
 */
export const boundedGuide = (guide: string): string => {
  if (guide.length <= ALWAYS_GUIDE_MAX_CHARS) return guide
  const room = ALWAYS_GUIDE_MAX_CHARS - GUIDE_CUT_NOTE.length - 2
  const head = guide.slice(0, room)
  const cut = Math.max(head.lastIndexOf("\n"), head.lastIndexOf(" "))
  return `${(cut > room / 2 ? head.slice(0, cut) : head).trimEnd()}\n${GUIDE_CUT_NOTE}`
}

/** An always-tier plugin's part of the prompt: its `prompt`, then its bounded operating guide. */
const alwaysSection = (entry: CatalogEntry): string | undefined => {
  const parts = [
    section(entry),
    entry.operatingGuide === undefined ? undefined : boundedGuide(entry.operatingGuide)
  ]
  const present = parts.filter((p): p is string => p !== undefined)
  return present.length === 0 ? undefined : present.join(SEPARATOR)
}

const alwaysSections = new WeakMap<Catalog, ReadonlyArray<string>>()
const alwaysSectionsByView = new WeakMap<Access.View, ReadonlyArray<string>>()

const alwaysOf = (catalog: Catalog, view: Access.View | undefined): ReadonlyArray<string> =>
  catalog.entries
    .filter((e) => e.visibility === "always" && (view === undefined || !view.denied.has(e.name)))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => alwaysSection(e) ?? [])

/**
 * The sections of always-tier plugins, by plugin name: each plugin's `prompt`, then its operating
 * guide (`boundedGuide`). With a `view`, the plugins it denies are left out. Cached per catalog
 * (and per view).
 */
export const alwaysPromptSections = (catalog: Catalog, view?: Access.View): ReadonlyArray<string> => {
  if (view !== undefined && !view.open) {
    let out = alwaysSectionsByView.get(view)
    if (out === undefined) {
      out = alwaysOf(catalog, view)
      alwaysSectionsByView.set(view, out)
    }
    return out
  }
  let out = alwaysSections.get(catalog)
  if (out === undefined) {
    out = alwaysOf(catalog, undefined)
    alwaysSections.set(catalog, out)
  }
  return out
}

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
