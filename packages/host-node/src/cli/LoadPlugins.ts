/**
 * Loads the module `plugboard serve [module]` runs: a file exporting plugins as its default export
 * or as `plugins` (an array, or one plugin), or any named exports that are plugins. Every failure
 * says what was looked for and what was found.
 */
import { existsSync, statSync } from "node:fs"
import { dirname, isAbsolute, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import type { Plugin } from "@plugboard/core"
import { importModule } from "./ImportModule.js"

/** The module is missing, fails to import, or exports no plugins. */
export class ModuleError extends Error {
  readonly _tag = "ModuleError"
  constructor(
    readonly reason: "NotFound" | "ImportFailed" | "NoPlugins",
    message: string
  ) {
    super(message)
    this.name = "ModuleError"
  }
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..")

/**
 * The default module: the examples' catalog when it exists, else the seed's weather plugin.
 * Both live in the repository this CLI runs from.
 */
export const defaultModule = (): string => {
  for (const candidate of ["examples/catalog/index.ts", "examples/plugins/weather.ts"]) {
    const file = join(REPO_ROOT, candidate)
    if (existsSync(file)) return file
  }
  return join(REPO_ROOT, "examples/catalog/index.ts")
}

const EXTENSIONS = ["", ".ts", ".mts", ".js", ".mjs", "/index.ts", "/index.js"]

/** The file a module argument names (relative to `cwd`; extension and `/index` optional). */
export const resolveModuleFile = (spec: string, cwd: string): string => {
  const base = isAbsolute(spec) ? spec : resolve(cwd, spec)
  for (const ext of EXTENSIONS) {
    const file = base + ext
    if (existsSync(file) && statSync(file).isFile()) return file
  }
  throw new ModuleError(
    "NotFound",
    `Module not found: ${base} (also tried ${EXTENSIONS.filter((e) => e !== "").join(", ")}).`
  )
}

const isPlugin = (value: unknown): value is Plugin =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as { name?: unknown }).name === "string" &&
  typeof (value as { manifest?: unknown }).manifest === "object"

const pluginsIn = (value: unknown): ReadonlyArray<Plugin> | undefined => {
  if (Array.isArray(value)) return value.length > 0 ? (value as ReadonlyArray<Plugin>) : undefined
  return isPlugin(value) ? [value] : undefined
}

/** Takes the plugins out of a module namespace; the catalog checks each one later. */
export const extractPlugins = (
  namespace: Record<string, unknown>,
  shownAs: string
): ReadonlyArray<Plugin> => {
  for (const key of ["default", "plugins", "catalog", "examplePlugins"]) {
    const found = pluginsIn(namespace[key])
    if (found !== undefined) return found
  }
  const named = Object.values(namespace).filter(isPlugin)
  if (named.length > 0) return named
  const exported = Object.keys(namespace)
  throw new ModuleError(
    "NoPlugins",
    `${shownAs} exports no plugins: expected a default export or a 'plugins' export (an array of plugins, or one plugin), or named plugin exports; found ${
      exported.length === 0 ? "no exports" : `exports ${exported.map((k) => `'${k}'`).join(", ")}`
    }.`
  )
}

/** Imports the module and returns its plugins. */
export const loadPlugins = async (
  spec: string | undefined,
  cwd: string
): Promise<{ readonly file: string; readonly plugins: ReadonlyArray<Plugin> }> => {
  const file = spec === undefined ? defaultModule() : resolveModuleFile(spec, cwd)
  if (!existsSync(file)) throw new ModuleError("NotFound", `Module not found: ${file}.`)
  let namespace: Record<string, unknown>
  try {
    namespace = await importModule(file)
  } catch (error) {
    throw new ModuleError(
      "ImportFailed",
      `Could not import ${file}: ${error instanceof Error ? error.message : String(error)}`
    )
  }
  return { file, plugins: extractPlugins(namespace, file) }
}
