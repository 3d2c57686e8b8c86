/**
 * The public API of each package, read from its entry points by the TypeScript compiler: every
 * export (namespace members included), its kind and the first sentence of its doc comment.
 *
 * `pnpm api` writes the reports to `docs/api/<package>.md`; each package's `publicApi` test
 * rebuilds its report and fails when an export has no doc comment or when the committed report
 * differs, so the surface only changes on purpose and the reference never drifts from the code.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")
/** Every published package, by the folder name its report takes; adapter families live under packages/adapters. */
export const PACKAGES = [
  "core",
  "ai-sdk",
  "codemode",
  "embeddings",
  "langgraph",
  "ledger",
  "matrix",
  "mcp",
  "models",
  "postgres",
  "redis",
  "serde",
  "skills",
  "sqlite",
  "tokenizers",
  "ucan",
  "host-node",
  "testing"
] as const
export type PackageDir = (typeof PACKAGES)[number]

/** The folder a package lives in. */
export const packageFolder = (pkg: PackageDir): string =>
  join(
    ROOT,
    "packages",
    pkg === "core" || pkg === "host-node" || pkg === "testing" ? pkg : join("adapters", pkg)
  )

/** Where a package's committed report lives. */
export const reportPath = (pkg: PackageDir): string => join(ROOT, "docs", "api", `${pkg}.md`)

interface Entry {
  readonly specifier: string
  readonly file: string
}

const entriesOf = (pkg: PackageDir): ReadonlyArray<Entry> => {
  const manifest = JSON.parse(readFileSync(join(packageFolder(pkg), "package.json"), "utf8")) as {
    exports: Record<string, Record<string, string>>
  }
  return Object.entries(manifest.exports).map(([key, conditions]) => ({
    specifier: `@plugboard/${pkg}${key === "." ? "" : key.slice(1)}`,
    file: join(packageFolder(pkg), conditions["@plugboard/source"]!)
  }))
}

const kindOf = (symbol: ts.Symbol): string => {
  const f = symbol.flags
  if (f & ts.SymbolFlags.Class) return "class"
  if (f & ts.SymbolFlags.Function) return "function"
  if (f & ts.SymbolFlags.Interface) return "interface"
  if (f & ts.SymbolFlags.TypeAlias) return f & ts.SymbolFlags.Value ? "const + type" : "type"
  if (f & ts.SymbolFlags.Enum) return "enum"
  if (f & ts.SymbolFlags.Variable) {
    const decl = symbol.valueDeclaration
    const init = decl !== undefined && ts.isVariableDeclaration(decl) ? decl.initializer : undefined
    const isFunction = init !== undefined && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))
    return isFunction ? "function" : "const"
  }
  return "value"
}

/** The first sentence of a doc comment, on one line (a period inside backticks does not end it). */
const summary = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  let code = false
  for (let i = 0; i < flat.length; i++) {
    const c = flat[i]
    if (c === "`") code = !code
    else if (c === "." && !code && (i + 1 === flat.length || flat[i + 1] === " ")) return flat.slice(0, i + 1)
  }
  return flat
}

/**
 * The doc comments (`/** … *\/`) right before `pos` in `source`, without their stars. At the
 * start of a file the first one is the file's header.
 */
const docsBefore = (source: ts.SourceFile, pos: number): ReadonlyArray<string> =>
  (ts.getLeadingCommentRanges(source.text, pos) ?? [])
    .map((r) => source.text.slice(r.pos, r.end))
    .filter((c) => c.startsWith("/**"))
    .map((c) =>
      c
        .replace(/^\/\*\*|\*\/$/g, "")
        .split("\n")
        .map((l) => l.replace(/^\s*\* ?/, ""))
        .join("\n")
        .trim()
    )

/** A file's header comment. */
const headerOf = (source: ts.SourceFile): string => docsBefore(source, 0)[0] ?? ""

export interface ApiReport {
  readonly markdown: string
  /** Exports without a doc comment, as `specifier: name`. */
  readonly undocumented: ReadonlyArray<string>
}

/** Builds the report of one package from its sources. */
export const apiReport = (pkg: PackageDir): ApiReport => {
  const entries = entriesOf(pkg)
  const program = ts.createProgram(
    entries.map((e) => e.file),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      customConditions: ["@plugboard/source"],
      noEmit: true,
      skipLibCheck: true
    }
  )
  const checker = program.getTypeChecker()
  const resolve = (s: ts.Symbol) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s)
  const docOf = (exported: ts.Symbol): string => {
    const target = resolve(exported)
    for (const s of [exported, target]) {
      const text = ts.displayPartsToString(s.getDocumentationComment(checker)).trim()
      if (text.length > 0) return text
    }
    // `/** … */ export { X } from "…"`: the comment sits on the export declaration.
    for (const decl of exported.declarations ?? []) {
      const statement = ts.isExportSpecifier(decl) ? decl.parent.parent : decl
      const docs = docsBefore(statement.getSourceFile(), statement.getFullStart())
      const own = statement.getFullStart() === 0 ? docs.slice(1) : docs
      if (own.length > 0) return own.at(-1)!
    }
    // A namespace (`export * as Catalog from "./Catalog.js"`): the module's own header comment.
    const moduleFile = target.declarations?.find(ts.isSourceFile)
    return moduleFile === undefined ? "" : headerOf(moduleFile)
  }
  const byName = (a: ts.Symbol, b: ts.Symbol) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

  const lines: Array<string> = [
    `# \`@plugboard/${pkg}\` API`,
    "",
    "Generated by `pnpm api` from the package's entry points (`scripts/api-report.ts`); the",
    "`publicApi` test fails when this file and the code disagree. Each line: the export, its kind,",
    "the first sentence of its doc comment (the full comment is in the source and the `.d.ts`).",
    ""
  ]
  const undocumented: Array<string> = []
  const row = (label: string, symbol: ts.Symbol, exported: ts.Symbol, specifier: string) => {
    const doc = docOf(exported)
    if (doc === "") undocumented.push(`${specifier}: ${label}`)
    lines.push(`- \`${label}\` (${kindOf(symbol)})${doc === "" ? "" : ` — ${summary(doc)}`}`)
  }
  for (const entry of entries) {
    const source = program.getSourceFile(entry.file)
    const moduleSymbol = source === undefined ? undefined : checker.getSymbolAtLocation(source)
    if (moduleSymbol === undefined) throw new Error(`cannot read the entry point ${entry.file}`)
    lines.push(`## \`${entry.specifier}\``, "")
    const header = headerOf(source!)
    if (header !== "") lines.push(summary(header), "")
    for (const exported of [...checker.getExportsOfModule(moduleSymbol)].sort(byName)) {
      const target = resolve(exported)
      if (target.flags & ts.SymbolFlags.ValueModule && !(target.flags & ts.SymbolFlags.Class)) {
        row(exported.name, target, exported, entry.specifier)
        lines[lines.length - 1] = lines[lines.length - 1]!.replace("(value)", "(namespace)")
        for (const member of [...checker.getExportsOfModule(target)].sort(byName)) {
          const label = `${exported.name}.${member.name}`
          const doc = docOf(member)
          if (doc === "") undocumented.push(`${entry.specifier}: ${label}`)
          lines.push(`  - \`${label}\` (${kindOf(resolve(member))})${doc === "" ? "" : ` — ${summary(doc)}`}`)
        }
      } else row(exported.name, target, exported, entry.specifier)
    }
    lines.push("")
  }
  return { markdown: `${lines.join("\n").trimEnd()}\n`, undocumented }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const pkg of PACKAGES) {
    const report = apiReport(pkg)
    writeFileSync(reportPath(pkg), report.markdown)
    console.log(
      `docs/api/${pkg}.md written${report.undocumented.length > 0 ? `; undocumented: ${report.undocumented.join(", ")}` : ""}`
    )
  }
}
