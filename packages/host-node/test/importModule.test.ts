/**
 * `importModule` under plain Node, as the compiled `plugboard` bin runs it (vitest would load
 * TypeScript itself and hide the point): ImportModule.ts is transpiled to JavaScript and run by
 * a child `node` with no loader. Placed inside the repository, `tsx` resolves and a `.ts` module
 * loads; placed in the system's temporary folder, `tsx` cannot resolve and the error says what
 * to install. JavaScript modules never need the loader; a module's own failure stays its own.
 * Node 24 strips types itself, but only from a module that needs nothing more: a `./x.js` import
 * of `./x.ts` (NodeNext style, as `plugboard init` writes) or an enum still needs tsx.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..")
const source = readFileSync(join(root, "packages/host-node/src/cli/ImportModule.ts"), "utf8")
const compiled = ts.transpileModule(source, {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }
}).outputText

interface Outcome {
  readonly ok: boolean
  readonly value?: unknown
  readonly name?: string
  readonly message?: string
}

const dirs: Array<string> = []
let inRepo: string
let outside: string

/** A folder with the compiled importer and a module of each kind. */
const stage = (dir: string): string => {
  mkdirSync(dir, { recursive: true })
  dirs.push(dir)
  writeFileSync(join(dir, "ImportModule.mjs"), compiled)
  writeFileSync(join(dir, "typed.ts"), "const answer: number = 42\nexport const value = { answer }\n")
  writeFileSync(join(dir, "plain.mjs"), "export const value = { plain: true }\n")
  writeFileSync(join(dir, "broken.ts"), 'const x: number = 1\nthrow new Error("broken at " + x)\n')
  writeFileSync(
    join(dir, "sibling.ts"),
    'import { value as typed } from "./typed.js"\nexport const value = { sibling: typed.answer }\n'
  )
  writeFileSync(
    join(dir, "shaped.ts"),
    'enum Tier { Always = "always" }\nexport const value = { tier: Tier.Always }\n'
  )
  writeFileSync(
    join(dir, "missing.ts"),
    'import { x } from "@plugboard/not-installed"\nexport const value = { x }\n'
  )
  writeFileSync(
    join(dir, "harness.mjs"),
    [
      'import { importModule } from "./ImportModule.mjs"',
      "const file = process.argv[2]",
      "try {",
      "  const ns = await importModule(file)",
      "  console.log(JSON.stringify({ ok: true, value: ns.value }))",
      "} catch (e) {",
      "  console.log(JSON.stringify({ ok: false, name: e.name, message: e.message }))",
      "}"
    ].join("\n")
  )
  return dir
}

const run = (dir: string, module: string): Outcome => {
  const out = execFileSync(process.execPath, [join(dir, "harness.mjs"), join(dir, module)], {
    encoding: "utf8",
    // A clean environment: no loader inherited through NODE_OPTIONS.
    env: { PATH: process.env.PATH ?? "" }
  })
  return JSON.parse(out.trim().split("\n").at(-1)!) as Outcome
}

beforeAll(() => {
  // Inside the repository (its ignored .tmp folder): resolution walks up to the root's tsx.
  // Not under node_modules, where tsx leaves TypeScript untransformed.
  mkdirSync(join(root, ".tmp"), { recursive: true })
  inRepo = stage(mkdtempSync(join(root, ".tmp", "import-module-")))
  outside = stage(mkdtempSync(join(tmpdir(), "plugboard-import-")))
  // Outside too, but in a package that declares ES modules: Node itself tries the `.ts` file.
  writeFileSync(join(stage(join(outside, "esm")), "package.json"), '{ "type": "module" }\n')
})
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe("importModule under plain Node", () => {
  it("imports a TypeScript module by registering tsx when no loader is active", () => {
    expect(run(inRepo, "typed.ts")).toMatchObject({ ok: true, value: { answer: 42 } })
  })

  it("imports a JavaScript module as it is", () => {
    expect(run(outside, "plain.mjs")).toMatchObject({ ok: true, value: { plain: true } })
  })

  it("says what to install when a TypeScript module needs tsx and tsx is not there", () => {
    const outcome = run(outside, "typed.ts")
    expect(outcome.ok).toBe(false)
    expect(outcome.name).toBe("NoTypeScriptLoader")
    expect(outcome.message).toContain("typed.ts' is TypeScript and no TypeScript loader is available")
    expect(outcome.message).toContain("npm install --save-dev tsx")
  })

  it("imports a TypeScript module whose imports name `.js` siblings (NodeNext), through tsx", () => {
    expect(run(inRepo, "sibling.ts")).toMatchObject({ ok: true, value: { sibling: 42 } })
  })

  it("imports a TypeScript module with an enum, which type stripping alone refuses, through tsx", () => {
    expect(run(inRepo, "shaped.ts")).toMatchObject({ ok: true, value: { tier: "always" } })
  })

  it("says what to install when an ES module package's TypeScript needs tsx and tsx is not there", () => {
    const outcome = run(join(outside, "esm"), "shaped.ts")
    expect(outcome).toMatchObject({ ok: false, name: "NoTypeScriptLoader" })
    expect(outcome.message).toContain("shaped.ts' is TypeScript and no TypeScript loader is available")
  })

  it("keeps Node's error for a package that is not installed, with tsx and without", () => {
    const withTsx = run(inRepo, "missing.ts")
    expect(withTsx.ok).toBe(false)
    expect(withTsx.message).toContain("Cannot find package '@plugboard/not-installed'")
    // Without tsx, a Node that strips types reaches the import; one that does not (before 22.18)
    // stops at the extension.
    const without = run(join(outside, "esm"), "missing.ts")
    expect(without.ok).toBe(false)
    if ((process.features as { typescript?: unknown }).typescript) {
      expect(without.message).toContain("Cannot find package '@plugboard/not-installed'")
    } else expect(without.name).toBe("NoTypeScriptLoader")
  })

  it("rethrows a TypeScript module's own failure, not a loader error", () => {
    const outcome = run(inRepo, "broken.ts")
    expect(outcome).toMatchObject({ ok: false, name: "Error", message: "broken at 1" })
  })
})
