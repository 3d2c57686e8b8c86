/**
 * Reads the operator's manifest overrides (docs/plugins.md#manifest-overrides, `MANIFEST_OVERRIDES`): a
 * JSON file, or a JavaScript/TypeScript module whose default export (or `manifestOverrides`
 * export) is the object. The overrides themselves are checked and merged by core
 * (`Catalog.make({ manifestOverrides })`); this file only reads them, and words what cannot be
 * read as a boot error.
 */
import { readFile } from "node:fs/promises"
import { resolve } from "node:path"
import { describe } from "@plugboard/core"
import { importModule } from "./cli/ImportModule.js"

/** Overrides as `createOracleApp({ manifestOverrides })` takes them: a file, or the object. */
export type ManifestOverridesInput = string | Readonly<Record<string, unknown>>

/** What was read: the overrides, or the `[boot-error]` lines saying why they could not be. */
export interface ReadOverrides {
  readonly overrides?: Readonly<Record<string, unknown>> | undefined
  readonly errors: ReadonlyArray<string>
}

/** Reads `input` (a path is resolved against `cwd`); nothing given, nothing read. */
export const readManifestOverrides = async (
  input: ManifestOverridesInput | undefined,
  cwd: string
): Promise<ReadOverrides> => {
  if (input === undefined) return { errors: [] }
  if (typeof input !== "string") return { overrides: input, errors: [] }
  const file = resolve(cwd, input)
  const fail = (why: string): ReadOverrides => ({
    errors: [`[boot-error] Manifest overrides (${file}): ${why}`]
  })
  let value: unknown
  if (/\.json$/i.test(file)) {
    let text: string
    try {
      text = await readFile(file, "utf8")
    } catch (error) {
      return fail(`cannot be read (${describe(error)}).`)
    }
    try {
      value = JSON.parse(text)
    } catch (error) {
      return fail(`is not JSON (${describe(error)}).`)
    }
  } else {
    let mod: Record<string, unknown>
    try {
      mod = await importModule(file)
    } catch (error) {
      return fail(`cannot be imported (${describe(error)}).`)
    }
    value = mod.default ?? mod.manifestOverrides
    // A TypeScript file Node reads as CommonJS comes back as `{ default: { default: … } }`.
    const inner = (value as { default?: unknown } | undefined)?.default
    if (mod.default !== undefined && inner !== undefined && Object.keys(value as object).length === 1)
      value = inner
    if (value === undefined) return fail("exports neither a default nor `manifestOverrides`.")
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return fail("must hold an object: plugin name → manifest fields.")
  }
  return { overrides: value as Readonly<Record<string, unknown>>, errors: [] }
}
