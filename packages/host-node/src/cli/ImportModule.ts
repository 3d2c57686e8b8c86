/**
 * Imports a user's module for the CLI (`serve`, `inspect`), TypeScript included.
 *
 * The `plugboard` bin is compiled JavaScript; Node 20 cannot import `.ts` on its own, and Node 24
 * strips types only from a module that needs nothing else: it neither maps `./tip.js` to
 * `./tip.ts` (how a NodeNext project, `plugboard init`'s among them, writes its imports) nor
 * takes syntax that must be transformed (enums, parameter properties). Rather than start every
 * run under a TypeScript loader (which puts each of the CLI's own imports,
 * Effect's hundreds of modules among them, through the loader's hooks), the loader is
 * registered only when a TypeScript module is actually imported and no loader is active yet.
 * `tsx` is an optional peer dependency: without it, a `.ts` module gets an error saying what to
 * install, and JavaScript modules need nothing.
 *
 * A TypeScript file that Node reads as CommonJS (`.cts`, or `.ts` outside any package that
 * declares `"type": "module"`, such as a plugin file in the home folder) does not load through
 * tsx's ESM hooks alone: Node 20.19 refuses it ("Cannot require() ES Module … in a cycle"), or
 * compiles it untransformed ("Missing initializer in const declaration"), whatever the file
 * holds. Such a file is imported through tsx's `tsImport`, which loads it with tsx's CommonJS
 * and ESM hooks in a namespace of their own; its own errors (a syntax error's location, a
 * package that does not resolve from there) then come through as they are.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"

const TYPESCRIPT = /\.(?:ts|mts|cts|tsx)$/

/**
 * A TypeScript module was given, and neither a loader is active nor `tsx` installed. A plain class
 * with its own `_tag`, not a `Data.TaggedError`: this module imports nothing but Node's own, so it
 * runs where no package resolves (its test runs it outside the repository, with no `tsx` nearby).
 */
export class NoTypeScriptLoader extends Error {
  readonly _tag = "NoTypeScriptLoader"
  constructor(readonly file: string) {
    super(
      `'${file}' is TypeScript and no TypeScript loader is available: install tsx next to ` +
        "@plugboard/host-node (npm install --save-dev tsx), or point at the compiled JavaScript."
    )
    this.name = "NoTypeScriptLoader"
  }
}

let registered: Promise<void> | undefined

/** Registers tsx's ESM hooks once per process. Rejects with `NoTypeScriptLoader` when tsx is absent. */
const registerTypeScript = (file: string): Promise<void> => {
  registered ??= import("tsx/esm/api").then(
    (api) => {
      api.register()
    },
    () => {
      registered = undefined
      throw new NoTypeScriptLoader(file)
    }
  )
  return registered
}

const codeOf = (thrown: unknown): unknown => (thrown as { code?: unknown } | null)?.code

/**
 * Node's own failures on a TypeScript module that tsx loads: an unknown extension (Node 20, or
 * type stripping turned off), a `./x.js` import of a `./x.ts` file, syntax Node's type stripping
 * refuses (Node >= 22.18). A module not found may also be a package that is not installed: tsx
 * then fails the same way, and that failure is the one thrown.
 */
const NEEDS_LOADER: ReadonlySet<unknown> = new Set([
  "ERR_UNKNOWN_FILE_EXTENSION",
  "ERR_MODULE_NOT_FOUND",
  "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX",
  "ERR_INVALID_TYPESCRIPT_SYNTAX"
])

/** Node's module type for `file` from its nearest package.json (`.cts`/`.mts` decide alone). */
const readsAsCommonJs = (file: string): boolean => {
  if (file.endsWith(".cts")) return true
  if (file.endsWith(".mts")) return false
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json")
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type !== "module"
      } catch {
        return true // Node fails on it too; tsImport's error will say why
      }
    }
    if (dirname(dir) === dir) return true
  }
}

/** The file through tsx's `tsImport` (see the module doc for when). */
const importIsolated = async (file: string): Promise<Record<string, unknown>> => {
  let api: typeof import("tsx/esm/api")
  try {
    api = await import("tsx/esm/api")
  } catch {
    throw new NoTypeScriptLoader(file)
  }
  return (await api.tsImport(pathToFileURL(file).href, import.meta.url)) as Record<string, unknown>
}

/**
 * `import()` of an absolute file path. A TypeScript file Node reads as CommonJS goes through
 * `tsImport` (see the module doc); any other TypeScript file that the running Node cannot load
 * (`NEEDS_LOADER`) gets tsx registered, once, and is imported again. Any other failure is the
 * module's own and is rethrown. Without tsx, a module Node could not load for want of a loader is
 * a `NoTypeScriptLoader`, a module not found stays Node's error.
 */
export const importModule = async (file: string): Promise<Record<string, unknown>> => {
  if (TYPESCRIPT.test(file) && readsAsCommonJs(file)) return importIsolated(file)
  const url = pathToFileURL(file).href
  try {
    return (await import(url)) as Record<string, unknown>
  } catch (thrown) {
    if (!TYPESCRIPT.test(file) || registered !== undefined || !NEEDS_LOADER.has(codeOf(thrown))) throw thrown
    try {
      await registerTypeScript(file)
    } catch (noLoader) {
      throw codeOf(thrown) === "ERR_MODULE_NOT_FOUND" ? thrown : noLoader
    }
  }
  // Node remembers the failed import of `url`; the query makes it a new module for the loader.
  return (await import(`${url}?typescript`)) as Record<string, unknown>
}
