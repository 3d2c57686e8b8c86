/**
 * Who may use what (README "Requiring capabilities"): a plugin, or a single tool, `requires`
 * UCAN capabilities, `{ can, with }` pairs as ucanto writes them; a user holds the capabilities
 * their verified UCAN grants (`Auth.Verified.capabilities`). One rule, applied by every query
 * that shows the catalog to a user: a plugin whose requirements the user lacks is listed as
 * unavailable with the reason, refused by `load_capability` and its tools are never offered
 * (always-tier included); a tool whose own requirements the user lacks is hidden altogether
 * (an admin tool is not even named to users who were not granted it).
 *
 * A `View` is the catalog as one user's grants see it. Views are cached per catalog and per set of
 * grants, so the offer's prefix and the Tier-1 block are built once per kind of user, not per turn.
 */
import { Schema } from "effect"
import type { Catalog, CatalogEntry } from "./Catalog.js"

/** A UCAN capability: an ability (`can`) on a resource (`with`), as ucanto writes one. */
export const Capability = Schema.Struct({ can: Schema.String, with: Schema.String })
/** @see Capability */
export interface Capability extends Schema.Schema.Type<typeof Capability> {}

/** The capabilities a user's verified UCAN proves (empty: none beyond signing in). */
export type Grants = ReadonlyArray<Capability>

/**
 * Whether `held` covers `required`, by UCAN's ability rules (those ucanto applies to a proof):
 * the same ability, `*` (every ability), or `ns/*` (every ability under `ns/`); the resource
 * must be the same.
 */
export const covers = (held: Capability, required: Capability): boolean => {
  if (held.with !== required.with) return false
  if (held.can === required.can || held.can === "*") return true
  return held.can.endsWith("/*") && required.can.startsWith(held.can.slice(0, -1))
}

/** The requirements of `required` that no capability of `grants` covers, in order. */
export const missing = (grants: Grants, required: ReadonlyArray<Capability>): ReadonlyArray<Capability> =>
  required.filter((r) => !grants.some((g) => covers(g, r)))

/** A capability as messages show it: `{ can: 'admin/read', with: 'ixo:oracle' }`. */
export const format = (c: Capability): string => `{ can: '${c.can}', with: '${c.with}' }`

/** The reason a plugin is unavailable to a user who lacks `absent` (listed and refused with it). */
export const deniedReason = (absent: ReadonlyArray<Capability>): string =>
  `It requires ${absent.map(format).join(" and ")}, which your credentials do not grant.`

/** A required ability: `ns/action` segments (no wildcard: a requirement names one ability). */
const ABILITY = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)+$/
/** A resource: a URI-like `scheme:rest`, no whitespace. */
const RESOURCE = /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/
const MAX_LENGTH = 256

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const clip = (s: string): string => (s.length > 80 ? `${s.slice(0, 80)}…` : s)

/**
 * Reads a `requires` value (a plugin's, a tool's, an override's): absent → none; else a list of
 * `{ can, with }` where `can` is one ability (`ns/action`, no wildcard) and `with` a resource
 * (`scheme:…`). Each problem is pushed to `errors`, worded with `where` (e.g.
 * `Plugin 'admin' field 'requires'`); duplicates are dropped.
 */
export const readRequires = (
  value: unknown,
  where: string,
  errors: Array<string>
): ReadonlyArray<Capability> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) {
    errors.push(`${where} must be a list of { can, with } capabilities.`)
    return []
  }
  const out: Array<Capability> = []
  value.forEach((item: unknown, i) => {
    if (!isRecord(item) || typeof item.can !== "string" || typeof item.with !== "string") {
      errors.push(`${where} #${i} must be { can: string, with: string }.`)
      return
    }
    const can = item.can
    const resource = item.with
    if (can.length > MAX_LENGTH || !ABILITY.test(can)) {
      errors.push(
        `${where} #${i} has ability '${clip(can)}': an ability is 'namespace/action' (letters, digits, '.', '_', '-'; no wildcard).`
      )
      return
    }
    if (resource.length > MAX_LENGTH || !RESOURCE.test(resource)) {
      errors.push(
        `${where} #${i} has resource '${clip(resource)}': a resource is a URI such as 'ixo:oracle'.`
      )
      return
    }
    if (!out.some((c) => c.can === can && c.with === resource)) out.push({ can, with: resource })
  })
  return out
}

// ---------------------------------------------------------------------------------------------
// Views

/** The catalog as one user's grants see it. */
export interface View {
  /** The grants this view was made for. */
  readonly grants: Grants
  /** True when nothing is denied or hidden: every query behaves as without requirements. */
  readonly open: boolean
  /** Plugins whose own requirements the user lacks: name → the reason (`deniedReason`). */
  readonly denied: ReadonlyMap<string, string>
  /**
   * Tool names the user may not be offered: every tool of a denied plugin, and each tool whose
   * own `requires` the user lacks.
   */
  readonly hiddenTools: ReadonlySet<string>
}

const EMPTY: ReadonlyArray<Capability> = []

/** The view of a catalog without requirements, or of a user who lacks none. */
const openView = (grants: Grants): View => ({
  grants,
  open: true,
  denied: new Map(),
  hiddenTools: new Set()
})

/** Whether any plugin or tool of the catalog declares `requires` (computed once per catalog). */
const gatedCache = new WeakMap<Catalog, boolean>()
const isGated = (catalog: Catalog): boolean => {
  let gated = gatedCache.get(catalog)
  if (gated === undefined) {
    gated = catalog.entries.some(
      (e) => (e.requires?.length ?? 0) > 0 || e.tools.some((t) => (t.requires?.length ?? 0) > 0)
    )
    gatedCache.set(catalog, gated)
  }
  return gated
}

const OPEN = openView(EMPTY)

/**
 * The view that denies nothing, whatever the catalog requires: the operator's view, which
 * `TokenBudget` and `plugboard inspect` price (the most a turn can cost is for a user granted
 * everything). Never hand it to a user's turn.
 */
export const unrestricted: View = openView(EMPTY)
// Views per catalog, keyed by the canonical grants; bounded (a host sees few kinds of user).
const MAX_VIEWS = 256
const views = new WeakMap<Catalog, Map<string, View>>()

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
    : { grants, open: false, denied, hiddenTools }
}

/**
 * The catalog as `grants` see it. Absent grants are no grants: a plugin that requires anything
 * is denied to a caller who proved nothing (the safe default for an embedder that passes none).
 */
export const view = (catalog: Catalog, grants: Grants | undefined = EMPTY): View => {
  if (!isGated(catalog)) return grants.length === 0 ? OPEN : openView(grants)
  let byKey = views.get(catalog)
  if (byKey === undefined) {
    byKey = new Map()
    views.set(catalog, byKey)
  }
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
