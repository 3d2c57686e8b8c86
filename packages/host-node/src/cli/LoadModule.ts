/**
 * Finds and imports the module of plugins a CLI command runs on (`serve`, `inspect`), and takes
 * the plugins out of it.
 * A module may export them as its default export, `plugins` or `examplePlugins` (an array of
 * plugins or a single plugin), or export a built catalog (`catalog`, or a default export that is
 * one). Every way this can fail says what was looked for and what was found.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { dirname, isAbsolute, join, relative, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { Catalog, Plugin } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { Data } from "effect"
import { importModule } from "./ImportModule.js"

/** The module cannot be found, fails to import, or exports nothing inspect can use. */
export class ModuleLoadError extends Data.TaggedError("ModuleLoadError")<{
  readonly reason: "not-found" | "import-failed" | "no-plugins" | "bad-aliases"
  readonly message: string
}> {
  // Thrown to the CLI's plain code: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(reason: ModuleLoadError["reason"], message: string) {
    super({ reason, message })
  }
}

/** What a module gave: plugins to build a catalog from, or a catalog already built. */
export type Loaded =
  | { readonly kind: "plugins"; readonly plugins: ReadonlyArray<Plugin>; readonly exportName: string }
  | { readonly kind: "catalog"; readonly catalog: Catalog.Catalog; readonly exportName: string }

const EXTENSIONS = [".ts", ".mts", ".js", ".mjs"]

/** `file` relative to `cwd` when it lies under it (reports stay the same on every machine), else absolute. */
export const displayPath = (file: string, cwd: string): string => {
  const rel = relative(cwd, file)
  return rel.length > 0 && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file
}

/**
 * The examples' catalog, relative to this file in the repository (`src/cli` or `dist/cli` →
 * `examples/catalog`): the module when none is given.
 */
export const defaultModule = (): string =>
  fileURLToPath(new URL("../../../../examples/catalog/index.ts", import.meta.url))

/** Resolves `spec` against `cwd` to a file: as given, with an extension, or a folder's index. */
export const resolveModule = (spec: string, cwd: string): string => {
  const base = isAbsolute(spec) ? spec : resolve(cwd, spec)
  const tried: Array<string> = []
  const isFile = (p: string) => {
    tried.push(p)
    return existsSync(p) && statSync(p).isFile()
  }
  if (isFile(base)) return base
  for (const ext of EXTENSIONS) if (isFile(base + ext)) return base + ext
  if (existsSync(base) && statSync(base).isDirectory()) {
    for (const ext of EXTENSIONS) if (isFile(join(base, `index${ext}`))) return join(base, `index${ext}`)
  }
  throw new ModuleLoadError(
    "not-found",
    `Cannot find module '${spec}' (looked for ${tried.map((p) => `'${displayPath(p, cwd)}'`).join(", ")}).`
  )
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null

const looksLikePlugin = (v: unknown): v is Plugin =>
  isRecord(v) && typeof v.name === "string" && "manifest" in v

const looksLikeCatalog = (v: unknown): v is Catalog.Catalog =>
  isRecord(v) && Array.isArray(v.entries) && v.byName instanceof Map && v.toolsByName instanceof Map

/**
 * Plugins (or a catalog) from a module's namespace, by the first export that has them: default,
 * `plugins`, `examplePlugins`, `catalog`; failing those, every named export that is a plugin. An
 * array is taken as it is (the catalog then reports every entry that is not a valid plugin).
 */
export const extract = (namespace: Record<string, unknown>, shownAs: string): Loaded => {
  for (const exportName of ["default", "plugins", "examplePlugins", "catalog"]) {
    const value = namespace[exportName]
    if (value === undefined) continue
    if (Array.isArray(value)) return { kind: "plugins", plugins: value as ReadonlyArray<Plugin>, exportName }
    if (looksLikeCatalog(value)) return { kind: "catalog", catalog: value, exportName }
    if (looksLikePlugin(value)) return { kind: "plugins", plugins: [value], exportName }
    if (exportName === "default" && isRecord(value)) {
      // `export default { plugins }`: one level down, same rules.
      const inner = extractOrUndefined(value)
      if (inner !== undefined) return { ...inner, exportName: `default.${inner.exportName}` }
    }
  }
  // Last resort: a module of named plugin exports (`export const weather = definePlugin(...)`).
  const named = Object.entries(namespace).filter(([, v]) => looksLikePlugin(v))
  if (named.length > 0) {
    return {
      kind: "plugins",
      plugins: named.map(([, v]) => v as Plugin),
      exportName: named.map(([n]) => n).join(", ")
    }
  }
  const names = Object.keys(namespace)
  throw new ModuleLoadError(
    "no-plugins",
    `Module '${shownAs}' exports no plugins: expected a default export, 'plugins' or 'examplePlugins' ` +
      `(an array of plugins or one plugin), a 'catalog', or named plugin exports; it exports ${
        names.length === 0 ? "nothing" : names.map((n) => `'${n}'`).join(", ")
      }.`
  )
}

const extractOrUndefined = (value: Record<string, unknown>): Loaded | undefined => {
  for (const exportName of ["plugins", "examplePlugins", "catalog"]) {
    const v = value[exportName]
    if (Array.isArray(v)) return { kind: "plugins", plugins: v as ReadonlyArray<Plugin>, exportName }
    if (looksLikeCatalog(v)) return { kind: "catalog", catalog: v, exportName }
  }
  return undefined
}

/**
 * The module's `aliases` export, if any: query label → plugin name, for `--queries` files that
 * label queries with names other than the plugins' (a data set's original names). A `Map` or a
 * plain object of strings; anything else is an error rather than a silently wrong score.
 */
export const extractAliases = (
  namespace: Record<string, unknown>,
  shownAs: string
): ReadonlyMap<string, string> | undefined => {
  const value = namespace.aliases
  if (value === undefined) return undefined
  const entries =
    value instanceof Map ? [...value.entries()] : isRecord(value) ? Object.entries(value) : undefined
  if (entries === undefined || entries.some(([k, v]) => typeof k !== "string" || typeof v !== "string")) {
    throw new ModuleLoadError(
      "bad-aliases",
      `Module '${shownAs}' exports 'aliases', but it is not a map of query labels to plugin names (strings).`
    )
  }
  return new Map(entries as Array<[string, string]>)
}

const MAX_CAUSES = 5

const messageOf = (thrown: unknown): string =>
  describe(thrown)
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim().length > 0)
    .join("\n  ")

/** The package a failed import could not resolve (`@scope/name` or `name`), when it is a package. */
const missingPackage = (thrown: unknown): string | undefined => {
  const code = (thrown as { code?: unknown } | null)?.code
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined
  const spec = /Cannot find (?:module|package) '([^']+)'/.exec(messageOf(thrown))?.[1]
  if (spec === undefined || spec.startsWith(".") || isAbsolute(spec) || spec.startsWith("file:"))
    return undefined
  return spec
    .split("/")
    .slice(0, spec.startsWith("@") ? 2 : 1)
    .join("/")
}

/** The folder of the nearest package.json above `file`, when it declares `name` as a dependency. */
const declaringProject = (file: string, name: string): string | undefined => {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json")
    if (existsSync(manifest)) {
      try {
        const m = JSON.parse(readFileSync(manifest, "utf8")) as Record<string, unknown>
        const declared = ["dependencies", "devDependencies", "peerDependencies"].some(
          (field) => isRecord(m[field]) && name in (m[field] as Record<string, unknown>)
        )
        return declared ? dir : undefined
      } catch {
        return undefined
      }
    }
    if (dirname(dir) === dir) return undefined
  }
}

/** `file:line:column` of the first stack frame in `file`, unless `message` already names it. */
const locationIn = (thrown: unknown, file: string, cwd: string, message: string): string | undefined => {
  const stack = thrown instanceof Error ? (thrown.stack ?? "") : ""
  if (message.includes(`${file}:`)) return undefined
  for (const written of [pathToFileURL(file).href, file]) {
    const at = stack.indexOf(`${written}:`)
    if (at < 0) continue
    const position = /^:(\d+):(\d+)/.exec(stack.slice(at + written.length))
    if (position !== null) return `${displayPath(file, cwd)}:${position[1]}:${position[2]}`
  }
  return undefined
}

/**
 * Why a module failed to import, whole: every line of the error (a syntax error's
 * `file:line:column` among them), where in the module it was thrown, and the chain of causes. A
 * package that does not resolve from the module's folder (a plugin file outside any project)
 * says so and how to fix it, instead of the loader's symptom.
 */
export const describeImportFailure = (thrown: unknown, file: string, cwd: string): string => {
  const shown = displayPath(file, cwd)
  const missing = missingPackage(thrown)
  if (missing !== undefined) {
    const head =
      `Module '${shown}' failed to load: it imports '${missing}', which cannot be resolved from ` +
      `${displayPath(dirname(file), cwd)}.`
    const project = declaringProject(file, missing)
    if (project !== undefined) {
      // A project that declares the package but was never installed (a fresh `plugboard init`).
      const where = displayPath(project, cwd)
      return `${head} Its project's package.json (${displayPath(join(project, "package.json"), cwd)}) declares it, but it is not installed: run npm install in ${where === "" ? "." : where}.`
    }
    return (
      `${head} A plugin module resolves its packages from its own ` +
      `project: put it in a folder whose package.json has "type": "module", and there run ` +
      `npm install ${missing.startsWith("@plugboard/") ? `${missing} effect` : missing}` +
      ` (plugboard init <folder> scaffolds such a project).`
    )
  }
  const message = messageOf(thrown)
  const lines = [`Module '${shown}' failed to load: ${message}`]
  const at = locationIn(thrown, file, cwd, message)
  if (at !== undefined) lines.push(`  at ${at}`)
  let cause = (thrown as { cause?: unknown } | null)?.cause
  for (let depth = 0; cause !== undefined && cause !== null && depth < MAX_CAUSES; depth++) {
    lines.push(`  caused by: ${messageOf(cause)}`)
    cause = (cause as { cause?: unknown }).cause
  }
  return lines.join("\n")
}

/** Resolves, imports and extracts. Throws `ModuleLoadError`. */
export const loadModule = async (
  spec: string | undefined,
  cwd: string
): Promise<{ readonly file: string; readonly aliases: ReadonlyMap<string, string> | undefined } & Loaded> => {
  if (spec === undefined && !existsSync(defaultModule())) {
    throw new ModuleLoadError(
      "not-found",
      "No module given, and the default (the examples' catalog) is not here: it ships with the " +
        "plugboard repository, not with the package. Pass the module that exports your plugins, " +
        "or name MCP servers or skills alone (--mcp servers.json, --skills DIR)."
    )
  }
  const file = resolveModule(spec ?? defaultModule(), cwd)
  let namespace: Record<string, unknown>
  try {
    namespace = await importModule(file)
  } catch (thrown) {
    throw new ModuleLoadError("import-failed", describeImportFailure(thrown, file, cwd))
  }
  const shownAs = displayPath(file, cwd)
  return { file, ...extract(namespace, shownAs), aliases: extractAliases(namespace, shownAs) }
}

/**
 * What a command mounts when given no module: the default (the examples' catalog) when no other
 * source is named, and nothing when `--mcp` / `--skills` (or `MCP_CONFIG` / `SKILLS_DIR`) name
 * one, so `inspect --mcp servers.json` means those servers alone, the same inside the repository
 * and outside it, where the default does not exist (issue 36 item 16, docs/cli.md).
 */
export const loadModuleOrSources = async (
  spec: string | undefined,
  cwd: string,
  otherSources: boolean
): Promise<
  | ({ readonly file: string; readonly aliases: ReadonlyMap<string, string> | undefined } & Loaded)
  | {
      readonly file: undefined
      readonly aliases: undefined
      readonly kind: "plugins"
      readonly plugins: ReadonlyArray<Plugin>
      readonly exportName: string
    }
> =>
  spec === undefined && otherSources
    ? { file: undefined, aliases: undefined, kind: "plugins", plugins: [], exportName: "none" }
    : loadModule(spec, cwd)
