/**
 * `importModule` under plain Node, as the compiled `plugboard` bin runs it (vitest would load
 * TypeScript itself and hide the point): ImportModule.ts is transpiled to JavaScript and run by
 * a child `node` with no loader. Placed inside the repository, `tsx` resolves and a `.ts` module
 * loads; placed in the system's temporary folder, `tsx` cannot resolve and the error says what
 * to install. JavaScript modules never need the loader; a module's own failure stays its own.
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

  it("rethrows a TypeScript module's own failure, not a loader error", () => {
    const outcome = run(inRepo, "broken.ts")
    expect(outcome).toMatchObject({ ok: false, name: "Error", message: "broken at 1" })
  })
})
