/**
 * The operator's manifest overrides (docs/plugins.md#manifest-overrides): per-plugin manifest fields
 * merged over the plugin's own, so a deployment retitles, re-tiers or re-describes a plugin
 * without forking it. One rule for every source: the `manifestOverrides` config (applied by
 * `Catalog.make`), an MCP server's `manifest` key and a skill's `metadata.plugboard`
 * (`CatalogSource.toPlugins`) all go through `apply`. The merged manifest is then validated like
 * any manifest (`validateManifest`, in `Catalog.make`), and every change is kept for
 * `plugboard inspect`.
 */
import { Category, MANIFEST_FIELDS, type PluginManifest, Stability, Visibility } from "./PluginManifest.js"

/** One field an override changed. */
export interface ManifestChange {
  readonly field: (typeof MANIFEST_FIELDS)[number]
  /** The field before the override (`undefined`: unset). */
  readonly from: unknown
  readonly to: unknown
  /** Where the override was written, e.g. `manifestOverrides.weather` or `mcpServers.github.manifest`. */
  readonly by: string
}

/** What `apply` gives: the merged manifest, the problems, and what changed. */
export interface Applied {
  readonly manifest: PluginManifest
  /** A field of the wrong type or value: boot stops, each a `[boot-error]`. */
  readonly errors: ReadonlyArray<string>
  /** An unknown field (ignored): each a `[boot-warning]`. */
  readonly warnings: ReadonlyArray<string>
  /** Fields whose value the override changed, in the order it gives them. */
  readonly changes: ReadonlyArray<ManifestChange>
}

/** The manifest fields that take one of a fixed set of words. */
const LITERAL_FIELDS = { category: Category, visibility: Visibility, stability: Stability } as const

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const isStringArray = (u: unknown): u is ReadonlyArray<string> =>
  Array.isArray(u) && u.every((s) => typeof s === "string")

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/**
 * The operator's fields over `base`: every field the override gives replaces the field whole
 * (lists are replaced, not merged: an operator who writes `whenToUse` means those entries). A field
 * of the wrong type is an error naming it (`where` says where it was written); an unknown field is
 * a warning. `null` or `undefined` overrides nothing. The result is validated with the rest of the
 * catalog by `Catalog.make`, like any manifest.
 */
export const apply = (base: PluginManifest, override: unknown, where: string): Applied => {
  if (override === undefined || override === null)
    return { manifest: base, errors: [], warnings: [], changes: [] }
  if (!isRecord(override)) {
    return {
      manifest: base,
      errors: [`${where} must be an object of manifest fields.`],
      warnings: [],
      changes: []
    }
  }
  const errors: string[] = []
  const warnings: string[] = []
  const changes: ManifestChange[] = []
  const out: Record<string, unknown> = { ...base }
  const set = (field: (typeof MANIFEST_FIELDS)[number], value: unknown) => {
    const from = (base as unknown as Record<string, unknown>)[field]
    out[field] = value
    if (!same(from, value)) changes.push({ field, from, to: value, by: where })
  }
  for (const [key, value] of Object.entries(override)) {
    const at = `${where}.${key}`
    switch (key) {
      case "title":
      case "summary":
        if (typeof value !== "string") errors.push(`${at} must be a string.`)
        else set(key, value)
        break
      case "whenToUse":
      case "whenNotToUse":
      case "tags":
        if (!isStringArray(value)) errors.push(`${at} must be a list of strings.`)
        else set(key, value)
        break
      case "examples":
        if (!Array.isArray(value) || !value.every(isRecord)) errors.push(`${at} must be a list of objects.`)
        else set(key, value)
        break
      case "category":
      case "visibility":
      case "stability": {
        const allowed: ReadonlyArray<string> = LITERAL_FIELDS[key].literals
        if (!allowed.includes(value as never)) errors.push(`${at} must be one of ${allowed.join(", ")}.`)
        else set(key, value)
        break
      }
      default:
        warnings.push(`${at} is not a manifest field and is ignored (fields: ${MANIFEST_FIELDS.join(", ")}).`)
    }
  }
  return { manifest: out as unknown as PluginManifest, errors, warnings, changes }
}

/**
 * Checks the shape of a `manifestOverrides` config: an object whose keys are plugin names and
 * whose values are objects. Returns the problems (`where` prefixes each); the fields themselves
 * are checked by `apply`, plugin names by `Catalog.make` (a name no plugin has is an error: a
 * typo would otherwise override nothing, silently).
 */
export const checkShape = (overrides: unknown, where = "manifestOverrides"): ReadonlyArray<string> => {
  if (overrides === undefined) return []
  if (!isRecord(overrides)) return [`${where} must be an object: plugin name → manifest fields.`]
  const errors: string[] = []
  for (const [name, value] of Object.entries(overrides)) {
    if (!isRecord(value)) errors.push(`${where}.${name} must be an object of manifest fields.`)
  }
  return errors
}
