/**
 * Who may use what (docs/plugins.md#requiring-capabilities): a plugin, or a single tool, `requires`
 * UCAN capabilities, `{ can, with }` pairs as ucanto writes them; a user holds the capabilities
 * their verified UCAN grants (`Auth.Verified.capabilities`). One rule, applied by every query
 * that shows the catalog to a user: a plugin whose requirements the user lacks is listed as
 * unavailable with the reason, refused by `load_capability` and its tools are never offered
 * (always-tier included); a tool whose own requirements the user lacks is hidden altogether
 * (an admin tool is not even named to users who were not granted it).
 *
 * A `View` is the catalog as one user's grants see it. Views are kept on the catalog's index per
 * set of grants (`CatalogIndex.views`), each with its own `ViewIndex`, so the offer's prefix and
 * the Tier-1 block are built once per kind of user, not per turn.
 */
import * as CatalogIndex from "./CatalogIndex.js"
import { type Capability, deniedReason, type Grants, missing } from "./internal/capability.js"
import type { CatalogEntry } from "./internal/catalog/entry.js"
import type { Catalog } from "./internal/catalog/model.js"
import type { View } from "./internal/view.js"

export {
  Capability,
  covers,
  deniedReason,
  format,
  type Grants,
  missing,
  readRequires
} from "./internal/capability.js"
export type { View } from "./internal/view.js"

// ---------------------------------------------------------------------------------------------
// Views

const EMPTY: ReadonlyArray<Capability> = []

/** The view of a catalog without requirements, or of a user who lacks none. */
const openView = (grants: Grants): View => ({
  grants,
  open: true,
  denied: new Map(),
  hiddenTools: new Set()
})

const OPEN = openView(EMPTY)

/**
 * The view that denies nothing, whatever the catalog requires: the operator's view, which
 * `TokenBudget` and `plugboard inspect` price (the most a turn can cost is for a user granted
 * everything). Never hand it to a user's turn.
 */
export const unrestricted: View = openView(EMPTY)
// Restricted views are kept on the catalog's index (`CatalogIndex.views`), keyed by the
// canonical grants; bounded (a host sees few kinds of user).
const MAX_VIEWS = 256

const keyOf = (grants: Grants): string =>
  grants
    .map((g) => `${g.can}\u0000${g.with}`)
    .sort()
    .join("\u0001")

const build = (catalog: Catalog, grants: Grants): View => {
  const denied = new Map<string, string>()
  const hiddenTools = new Set<string>()
  for (const entry of catalog.entries) {
    const absent = missing(grants, entry.requires ?? EMPTY)
    if (absent.length > 0) {
      denied.set(entry.name, deniedReason(absent))
      for (const t of entry.tools) hiddenTools.add(t.name)
      for (const s of entry.subAgents) hiddenTools.add(s.tool.name)
      continue
    }
    for (const t of entry.tools) {
      if (t.requires !== undefined && missing(grants, t.requires).length > 0) hiddenTools.add(t.name)
    }
  }
  return denied.size === 0 && hiddenTools.size === 0
    ? openView(grants)
    : { grants, open: false, denied, hiddenTools, index: CatalogIndex.makeView(catalog, denied, hiddenTools) }
}

/**
 * The catalog as `grants` see it. Absent grants are no grants: a plugin that requires anything
 * is denied to a caller who proved nothing (the safe default for an embedder that passes none).
 */
export const view = (catalog: Catalog, grants: Grants | undefined = EMPTY): View => {
  if (!catalog.index.gated) return grants.length === 0 ? OPEN : openView(grants)
  const byKey = catalog.index.views
  const key = keyOf(grants)
  let v = byKey.get(key)
  if (v === undefined) {
    v = build(catalog, grants)
    if (byKey.size >= MAX_VIEWS) byKey.clear()
    byKey.set(key, v)
  }
  return v
}

/**
 * The manifest examples a user of the view may read: an example of a tool hidden from them
 * would name it, so it is left out (every answer that shows a manifest to a user goes through
 * this: `load_capability`, `/health/plugins`, the dev console). The same array when nothing is
 * hidden.
 */
export const shownExamples = <E extends { readonly tool?: unknown }>(
  v: View,
  examples: ReadonlyArray<E>
): ReadonlyArray<E> => {
  if (v.hiddenTools.size === 0) return examples
  const shown = examples.filter((e) => !v.hiddenTools.has(String(e.tool)))
  return shown.length === examples.length ? examples : shown
}

/** Whether the view lets the user use `entry` (its own requirements are granted). */
export const allowsPlugin = (v: View, entry: Pick<CatalogEntry, "name">): boolean =>
  v.open || !v.denied.has(entry.name)

/**
 * Whether the view lets the user be offered a tool of `plugin`: the plugin is allowed and the
 * tool is not hidden; `requires` is the tool's own (a per-request tool's, not in the catalog).
 */
export const allowsTool = (
  v: View,
  plugin: string,
  tool: string,
  requires?: ReadonlyArray<Capability> | undefined
): boolean => {
  if (v.open && (requires === undefined || requires.length === 0)) return true
  if (v.denied.has(plugin) || v.hiddenTools.has(tool)) return false
  return requires === undefined || missing(v.grants, requires).length === 0
}
