/**
 * Imports a user's module for the CLI (`serve`, `inspect`), TypeScript included.
 *
 * The `plugboard` bin is compiled JavaScript; Node 20 cannot import `.ts` on its own. Rather
 * than start every run under a TypeScript loader (which puts each of the CLI's own imports,
 * Effect's hundreds of modules among them, through the loader's hooks), the loader is
 * registered only when a TypeScript module is actually imported and no loader is active yet.
 * `tsx` is an optional peer dependency: without it, a `.ts` module gets an error saying what to
 * install, and JavaScript modules need nothing.
 */
import { pathToFileURL } from "node:url"

const TYPESCRIPT = /\.(?:ts|mts|cts|tsx)$/

/** A TypeScript module was given, and neither a loader is active nor `tsx` installed. */
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

const isUnknownExtension = (thrown: unknown): boolean =>
  (thrown as { code?: unknown } | null)?.code === "ERR_UNKNOWN_FILE_EXTENSION"

/**
 * `import()` of an absolute file path; a TypeScript file that the running Node cannot load gets
 * tsx registered and is imported again. Any other failure is the module's own and is rethrown.
 */
export const importModule = async (file: string): Promise<Record<string, unknown>> => {
  const url = pathToFileURL(file).href
  try {
    return (await import(url)) as Record<string, unknown>
  } catch (thrown) {
    if (!TYPESCRIPT.test(file) || !isUnknownExtension(thrown)) throw thrown
  }
  await registerTypeScript(file)
  // Node remembers the failed import of `url`; the query makes it a new module for the loader.
  return (await import(`${url}?typescript`)) as Record<string, unknown>
}
