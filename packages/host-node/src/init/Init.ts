/**
 * `plugboard init [dir] [--from DIR]`: scaffolds a plugin project from the template shipped with
 * this package (`template/`): a package.json depending on the plugboard packages at the versions
 * this host was built with, a tsconfig, one plugin, its test, and a README saying how to test,
 * inspect and serve it. The @plugboard packages are not on the npm registry, so the project
 * installs them from tarballs in its `vendor/` (`Vendor.ts`): packed from the checkout this host
 * runs from, or copied from `--from DIR`; a host installed as a package, with no `--from`, keeps
 * registry versions (docs/cli.md#the-scaffolds-plugboard-packages). It writes only into a new or
 * empty folder, nothing is ever overwritten, and a refusal writes nothing.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync
} from "node:fs"
import { basename, dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { InitError } from "./InitError.js"
import {
  checkoutRoot,
  neededTarballs,
  packCheckout,
  type Tarball,
  tarballsFrom,
  tarballsIn,
  VENDOR_DIR
} from "./Vendor.js"

export { InitError }

/** Where `init` writes and reports. */
export interface InitIO {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly cwd: string
  /**
   * The checkout whose packages the project installs when there is no `--from`: by default the
   * one this host runs from, none (`null`) when it was installed as a package. Tests name another.
   */
  readonly checkout?: string | null
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

/**
 * The scaffold's package.json. `vendored` (name → `file:vendor/<tarball>`) replaces the version of
 * each package it names and becomes npm `overrides` too, so that a @plugboard package one of them
 * depends on installs from its tarball as well, not from the registry.
 */
export const packageJson = (
  name: string,
  versions: Record<string, string>,
  vendored: Readonly<Record<string, string>> = {}
): string => {
  const pick = (names: ReadonlyArray<string>) =>
    Object.fromEntries(names.map((n) => [n, vendored[n] ?? versions[n]!]))
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
      dependencies: { ...pick(RUNTIME), effect: TOOL_VERSIONS.effect },
      devDependencies: {
        ...pick(TEST_KIT),
        "@types/node": TOOL_VERSIONS["@types/node"],
        tsx: TOOL_VERSIONS.tsx,
        typescript: TOOL_VERSIONS.typescript,
        vitest: TOOL_VERSIONS.vitest
      },
      ...(Object.keys(vendored).length === 0 ? {} : { overrides: vendored })
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
export const scaffoldFiles = (
  name: string,
  versions = plugboardVersions(),
  vendored: Readonly<Record<string, string>> = {}
): Map<string, string> => {
  const files = new Map<string, string>([["package.json", packageJson(name, versions, vendored)]])
  for (const file of templateFiles()) {
    const text = readFileSync(join(TEMPLATE_DIR, file), "utf8")
    files.set(file === "gitignore" ? ".gitignore" : file, text.replaceAll("{{name}}", name))
  }
  return files
}

/** `InitError` when `dir` is a file or a folder that is not empty; checked before anything is written. */
const checkTarget = (dir: string, shownAs: string): void => {
  if (!existsSync(dir)) return
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

/**
 * Writes the scaffold into `dir` (created when missing), with `tarballs` copied into its
 * `vendor/` and named by its package.json. Throws `InitError` when `dir` is a file or a folder that
 * is not empty, before writing anything; a write that fails halfway takes back what it wrote.
 */
export const scaffold = (
  dir: string,
  shownAs: string,
  tarballs: ReadonlyArray<Tarball> = []
): ReadonlyArray<string> => {
  checkTarget(dir, shownAs)
  const vendored = Object.fromEntries(tarballs.map((t) => [t.name, `file:${VENDOR_DIR}/${basename(t.file)}`]))
  const files = scaffoldFiles(projectName(dir), plugboardVersions(), vendored)
  const existed = existsSync(dir)
  try {
    for (const [file, text] of files) {
      mkdirSync(dirname(join(dir, file)), { recursive: true })
      writeFileSync(join(dir, file), text, { flag: "wx" })
    }
    if (tarballs.length > 0) mkdirSync(join(dir, VENDOR_DIR))
    for (const t of tarballs) copyFileSync(t.file, join(dir, VENDOR_DIR, basename(t.file)))
  } catch (error) {
    if (existed)
      for (const entry of readdirSync(dir)) rmSync(join(dir, entry), { recursive: true, force: true })
    else rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return [...files.keys(), ...tarballs.map((t) => `${VENDOR_DIR}/${basename(t.file)}`)]
}

/** `init`'s arguments: at most one folder, and `--from DIR` / `--from=DIR`. */
const parseArgs = (argv: ReadonlyArray<string>): { readonly dir?: string; readonly from?: string } => {
  const positional: Array<string> = []
  let from: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--from" || arg.startsWith("--from=")) {
      if (from !== undefined) throw new InitError("usage", "Option --from is given more than once.")
      from = arg === "--from" ? argv[++i] : arg.slice("--from=".length)
      if (from === undefined || from === "") throw new InitError("usage", "Option --from needs a folder.")
    } else if (arg.startsWith("-")) throw new InitError("usage", `Unknown option ${arg}.`)
    else positional.push(arg)
  }
  if (positional.length > 1) throw new InitError("usage", "init takes at most one folder.")
  return {
    ...(positional[0] === undefined ? {} : { dir: positional[0] }),
    ...(from === undefined ? {} : { from })
  }
}

/** Where the project's @plugboard packages come from, as the output says it. */
type Source =
  | { readonly kind: "registry" }
  | { readonly kind: "from"; readonly dir: string; readonly tarballs: ReadonlyArray<Tarball> }
  | { readonly kind: "checkout"; readonly root: string; readonly tarballs: ReadonlyArray<Tarball> }

/** `--from`'s tarballs, else the checkout's, packed (`packed` is the temporary folder to remove), else the registry. */
const packagesFor = (from: string | undefined, io: InitIO, packed: Array<string>): Source => {
  const versions = plugboardVersions()
  const wanted = Object.fromEntries([...RUNTIME, ...TEST_KIT].map((n) => [n, versions[n]!]))
  if (from !== undefined) {
    return { kind: "from", dir: from, tarballs: neededTarballs(tarballsFrom(io.cwd, from), wanted, from) }
  }
  const root = io.checkout === undefined ? checkoutRoot(PACKAGE_ROOT) : io.checkout
  if (root === undefined || root === null) return { kind: "registry" }
  io.out(`Packing the @plugboard packages of the checkout ${root} (scripts/pack.sh)…\n`)
  const dir = packCheckout(root)
  packed.push(dir)
  return { kind: "checkout", root, tarballs: neededTarballs(tarballsIn(dir), wanted, dir) }
}

/** What the output says of where the packages come from. */
const sourceLines = (source: Source): ReadonlyArray<string> => {
  switch (source.kind) {
    case "registry":
      return [
        "package.json names the @plugboard packages at their versions on the npm registry. If npm",
        "install cannot find them there, run plugboard init from a plugboard checkout, or with",
        "--from <folder> of the tarballs scripts/pack.sh packs (docs/cli.md)."
      ]
    case "from":
    case "checkout":
      return [
        `The @plugboard packages are not on the npm registry: package.json installs them from ${VENDOR_DIR}/,`,
        `${source.kind === "from" ? `copied from ${source.dir}` : `packed from ${source.root}`}. Keep ${VENDOR_DIR}/ with the project.`
      ]
  }
}

/** `word` as a shell reads it back: as it is when it is plain, else in single quotes. */
const shellWord = (word: string): string =>
  /^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`

/** `plugboard init [dir] [--from DIR]`: 0 when scaffolded, 1 when refused (nothing written), 2 on a usage error. */
export const init = (argv: ReadonlyArray<string>, io: InitIO): number => {
  const packed: Array<string> = []
  try {
    const { dir, from } = parseArgs(argv)
    const target = resolve(io.cwd, dir ?? ".")
    checkTarget(target, dir ?? ".")
    const source = packagesFor(from, io, packed)
    const written = scaffold(target, dir ?? ".", source.kind === "registry" ? [] : source.tarballs)
    const cd = relative(io.cwd, target)
    io.out(
      [
        `Created the plugin project '${projectName(target)}' in ${target}:`,
        ...written.map((f) => `  ${f}`),
        "",
        ...sourceLines(source),
        "",
        "Next:",
        ...(cd === "" ? [] : [`  cd ${shellWord(cd.startsWith("..") ? target : cd)}`]),
        "  npm install",
        "  npm test            # the plugin's tests, offline",
        "  npm run inspect     # manifests, warnings, token costs",
        "  npm run serve       # the oracle on http://127.0.0.1:3000 (scripted model, no key needed)",
        ""
      ].join("\n")
    )
    return 0
  } catch (error) {
    if (!(error instanceof InitError)) throw error
    io.err(
      error.reason === "usage"
        ? `${error.message} Run 'plugboard init --help' for its options.\n`
        : `${error.message}\n`
    )
    return error.reason === "usage" ? 2 : 1
  } finally {
    for (const dir of packed) rmSync(dir, { recursive: true, force: true })
  }
}
