/**
 * Capabilities and the requirements read from a manifest (docs/plugins.md#requiring-capabilities): the
 * leaf of `Access`, which re-exports every name here. Kept apart so that `Plugin`,
 * `RuntimeContext` and the catalog's boot can name a capability without importing the views.
 */
import { Schema } from "effect"

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
