/**
 * `plugboard init [dir]`: scaffolds a plugin project from the template shipped with this package
 * (`template/`): a package.json depending on the published plugboard packages at the versions
 * this host was built with, a tsconfig, one plugin, its test, and a README saying how to test,
 * inspect and serve it. It writes only into a new or empty folder: nothing is ever overwritten.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { basename, dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Data } from "effect"

/** Where `init` writes and reports. */
export interface InitIO {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly cwd: string
}

/** The folder cannot be scaffolded into; `message` says why and what to do. */
export class InitError extends Data.TaggedError("InitError")<{
  readonly reason: "not-empty" | "not-a-directory" | "usage"
  readonly message: string
}> {
  // Thrown to the CLI's plain code: a `Data.TaggedError` is a real `Error` whose `name` is its tag,
  // so plain callers see the same name, message and stack as before.
  constructor(reason: InitError["reason"], message: string) {
    super({ reason, message })
  }
}

/** This package's folder: `src/init` and `dist/init` are both two levels below it. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** The template folder shipped in the package (`files` in its package.json). */
export const TEMPLATE_DIR = join(PACKAGE_ROOT, "template")

/**
 * Versions of the tools the scaffold's scripts run, the ones the plugboard repository itself is
 * tested with (a test keeps them equal to the workspace's own).
 */
export const TOOL_VERSIONS = {
  "@types/node": "^24.19.4",
  effect: "^3.22.4",
  tsx: "^4.23.15",
  typescript: "~6.0.3",
  vitest: "~4.1.12"
} as const

/** The plugboard packages the scaffold depends on: the runtime and host, and the test's adapters. */
const RUNTIME = ["@plugboard/core", "@plugboard/host-node"] as const
const TEST_KIT = ["@plugboard/langgraph", "@plugboard/models"] as const

interface Manifest {
  readonly name: string
  readonly version: string
  readonly dependencies?: Readonly<Record<string, string>>
}

const readManifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))

/**
 * The version of each plugboard package the scaffold needs: this package's own, and for the
 * others the version this package depends on (a published package names it exactly). In the
 * repository, where the dependency is `workspace:*`, the sibling package's own version.
 */
export const plugboardVersions = (): Record<string, string> => {
  const self = readManifest(PACKAGE_ROOT)
  const versions: Record<string, string> = { [self.name]: self.version }
  for (const name of [...RUNTIME, ...TEST_KIT]) {
    if (name === self.name) continue
    const spec = self.dependencies?.[name]
    if (spec === undefined) throw new Error(`${self.name} does not depend on ${name}`)
    if (!spec.startsWith("workspace:")) {
      versions[name] = spec
      continue
    }
    const short = name.slice("@plugboard/".length)
    const sibling = [join(PACKAGE_ROOT, "..", short), join(PACKAGE_ROOT, "..", "adapters", short)].find((d) =>
      existsSync(join(d, "package.json"))
    )
    if (sibling === undefined) throw new Error(`cannot find the workspace package ${name}`)
    versions[name] = readManifest(sibling).version
  }
  return versions
}

/** A package name npm accepts, from a folder name: lowercase, URL-safe, `plugboard-plugins` if nothing is left. */
export const projectName = (dir: string): string => {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[._-]+|[._-]+$/g, "")
    .slice(0, 214)
  return name.length > 0 ? name : "plugboard-plugins"
}

/** The scaffold's package.json. */
export const packageJson = (name: string, versions: Record<string, string>): string => {
  const pick = (names: ReadonlyArray<string>, from: Record<string, string>) =>
    Object.fromEntries(names.map((n) => [n, from[n]!]))
  return `${JSON.stringify(
    {
      name,
      version: "0.1.0",
      private: true,
      type: "module",
      engines: { node: ">=22.14" },
      scripts: {
        test: "vitest run",
        typecheck: "tsc",
        inspect: "plugboard inspect src/index.ts",
        // `exec`: the shell npm runs a script in becomes the server, so the SIGTERM a supervisor
        // sends to npm reaches it (issue 36 item 17, docs/cli.md).
        serve: "exec plugboard serve src/index.ts"
      },
      dependencies: { ...pick(RUNTIME, versions), effect: TOOL_VERSIONS.effect },
      devDependencies: {
        ...pick(TEST_KIT, versions),
        "@types/node": TOOL_VERSIONS["@types/node"],
        tsx: TOOL_VERSIONS.tsx,
        typescript: TOOL_VERSIONS.typescript,
        vitest: TOOL_VERSIONS.vitest
      }
    },
    null,
    2
  )}\n`
}

/** Every file of the template, relative to it (`gitignore` is shipped without its dot: npm drops `.gitignore`). */
const templateFiles = (dir = TEMPLATE_DIR, prefix = ""): Array<string> =>
  readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) =>
      e.isDirectory() ? templateFiles(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]
    )

/** The project's files: path relative to the project → contents. */
export const scaffoldFiles = (name: string, versions = plugboardVersions()): Map<string, string> => {
  const files = new Map<string, string>([["package.json", packageJson(name, versions)]])
  for (const file of templateFiles()) {
    const text = readFileSync(join(TEMPLATE_DIR, file), "utf8")
    files.set(file === "gitignore" ? ".gitignore" : file, text.replaceAll("{{name}}", name))
  }
  return files
}

/**
 * Writes the scaffold into `dir` (created when missing). Throws `InitError` when `dir` is a file
 * or a folder that is not empty, before writing anything.
 */
export const scaffold = (dir: string, shownAs: string): ReadonlyArray<string> => {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) {
      throw new InitError("not-a-directory", `Cannot scaffold into '${shownAs}': it is a file, not a folder.`)
    }
    const entries = readdirSync(dir).sort()
    if (entries.length > 0) {
      const shown =
        entries.slice(0, 5).join(", ") + (entries.length > 5 ? `, …and ${entries.length - 5} more` : "")
      throw new InitError(
        "not-empty",
        `Cannot scaffold into '${shownAs}': it is not empty (${shown}). plugboard init writes only ` +
          "into a new or empty folder and never overwrites a file: name a new folder, e.g. plugboard init my-plugins."
      )
    }
  }
  const files = scaffoldFiles(projectName(dir))
  for (const [file, text] of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), text, { flag: "wx" })
  }
  return [...files.keys()]
}

/** `plugboard init [dir]`: 0 when scaffolded, 1 when the folder is refused, 2 on a usage error. */
export const init = (argv: ReadonlyArray<string>, io: InitIO): number => {
  const unknown = argv.find((a) => a.startsWith("-"))
  const positional = argv.filter((a) => !a.startsWith("-"))
  if (unknown !== undefined || positional.length > 1) {
    io.err(
      `${unknown === undefined ? "init takes at most one folder." : `Unknown option ${unknown}.`} Run 'plugboard init --help' for its options.\n`
    )
    return 2
  }
  const target = resolve(io.cwd, positional[0] ?? ".")
  const shownAs = positional[0] ?? "."
  let written: ReadonlyArray<string>
  try {
    written = scaffold(target, shownAs)
  } catch (error) {
    if (!(error instanceof InitError)) throw error
    io.err(`${error.message}\n`)
    return 1
  }
  const cd = relative(io.cwd, target)
  io.out(
    [
      `Created the plugin project '${projectName(target)}' in ${target}:`,
      ...written.map((f) => `  ${f}`),
      "",
      "Next:",
      ...(cd === "" ? [] : [`  cd ${cd.startsWith("..") ? target : cd}`]),
      "  npm install",
      "  npm test            # the plugin's tests, offline",
      "  npm run inspect     # manifests, warnings, token costs",
      "  npm run serve       # the oracle on http://127.0.0.1:3000 (scripted model, no key needed)",
      ""
    ].join("\n")
  )
  return 0
}
