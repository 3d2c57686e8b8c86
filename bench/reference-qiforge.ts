/**
 * Fetches the published QiForge runtime on demand, for benchmarks that compare against it.
 * Its code is never committed: `npm pack` + `tar` unpack it into the ignored `.tmp/reference/`,
 * and `zod` (the only import of its `dist/manifest/validator.js`) is installed beside it.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const VERSION = "1.95.0"
const root = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  ".tmp",
  "reference",
  `oracle-runtime-${VERSION}`
)
const validatorPath = join(root, "package", "dist", "manifest", "validator.js")

/** The two functions of `@ixo/oracle-runtime/dist/manifest/validator.js` that boot calls. */
export interface QiForgeValidator {
  readonly version: string
  readonly validateManifest: (
    manifest: unknown,
    pluginName: string
  ) => { valid: boolean; errors: string[]; warnings: string[] }
  readonly validateExamplesAgainstTools: (
    manifest: unknown,
    registeredToolNames: readonly string[],
    pluginName: string
  ) => { errors: string[] }
}

const run = (command: string, args: ReadonlyArray<string>) =>
  execFileSync(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 })

/** Loads the reference validator, fetching it first if needed; a string says why it cannot. */
export const loadQiForgeValidator = async (): Promise<QiForgeValidator | string> => {
  try {
    mkdirSync(root, { recursive: true })
    // Without its own package.json, npm would walk up and install into the workspace root.
    const pkg = join(root, "package.json")
    if (!existsSync(pkg)) writeFileSync(pkg, '{ "name": "qiforge-reference", "private": true }\n')
    if (!existsSync(validatorPath)) {
      run("npm", ["pack", `@ixo/oracle-runtime@${VERSION}`, "--silent"])
      const tarball = readdirSync(root).find((f) => f.endsWith(".tgz"))
      if (tarball === undefined) return "npm pack produced no tarball"
      run("tar", ["xzf", tarball])
    }
    if (!existsSync(join(root, "node_modules", "zod"))) {
      // The range the package itself declares; installed beside it, never into the workspace.
      run("npm", ["install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "zod@^4.4.3"])
    }
    const mod = (await import(pathToFileURL(validatorPath).href)) as Omit<QiForgeValidator, "version">
    return { version: VERSION, ...mod }
  } catch (error) {
    return error instanceof Error ? (error.message.split("\n")[0] ?? String(error)) : String(error)
  }
}
