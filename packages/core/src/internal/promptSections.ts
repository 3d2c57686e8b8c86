/**
 * The plugins' parts of the system prompt (docs/plugins.md#operating-guides); `SystemPrompt` re-exports
 * the public names and composes the prompt, `CatalogIndex` keeps the always-tier sections.
 */
import type { CatalogEntry } from "./catalog/entry.js"

/** Sections are separated by one blank line. */
export const SEPARATOR = "\n\n"

/** A plugin's `prompt`, trimmed; absent when empty. */
export const section = (entry: CatalogEntry): string | undefined => {
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

/**
 * An always-tier plugin's part of the prompt: its `prompt`, then its bounded operating guide —
 * what any plugin's part would be were it bound up front (the budget's all-bound baseline).
 */
export const alwaysSection = (entry: CatalogEntry): string | undefined => {
  const parts = [
    section(entry),
    entry.operatingGuide === undefined ? undefined : boundedGuide(entry.operatingGuide)
  ]
  const present = parts.filter((p): p is string => p !== undefined)
  return present.length === 0 ? undefined : present.join(SEPARATOR)
}

/**
 * The sections of the always-tier plugins among `entries`, by plugin name, leaving out those
 * `denied` names (a user's view).
 */
export const alwaysSections = (
  entries: ReadonlyArray<CatalogEntry>,
  denied?: ReadonlyMap<string, string>
): ReadonlyArray<string> =>
  entries
    .filter((e) => e.visibility === "always" && denied?.has(e.name) !== true)
    .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
    .flatMap((e) => alwaysSection(e) ?? [])
