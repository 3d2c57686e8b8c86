import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "./runCli.js"

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-load-"))
  const files: Record<string, string> = {
    // No package.json around it: tsx takes it for CommonJS (see cli/ImportModule.ts).
    "loose/plugins.ts":
      'import { definePlugin } from "@plugboard/core"\nexport const plugins = [definePlugin({} as never)]\n',
    "loose/ok.ts":
      'const title: string = "Hello"\nexport const plugins = [{ name: "hello", manifest: { title, summary: "Says hello.", whenToUse: ["The user greets."] }, tools: [] }]\n',
    "loose/syntax.ts":
      'export const plugins = [\n  { name: "x", manifest: { title: "X" summary: "x" } }\n]\n',
    "loose/throws.ts":
      'const load = () => {\n  throw new Error("config missing", { cause: new Error("ENOENT: keys.json") })\n}\nexport const plugins = load()\n',
    "project/package.json": '{ "type": "module" }\n',
    // A project made by `plugboard init` before `npm install`.
    "inited/package.json": '{ "type": "module", "dependencies": { "@plugboard/core": "0.1.0" } }\n',
    "inited/src/index.ts":
      'import { definePlugin } from "@plugboard/core"\nexport const plugins = [definePlugin({} as never)]\n',
    "project/plugins.ts":
      'import { definePlugin } from "@plugboard/core"\nexport const plugins = [definePlugin({} as never)]\n',
    "project/throws.ts":
      'const load = () => {\n  throw new Error("config missing", { cause: new Error("ENOENT: keys.json", { cause: new Error("disk") }) })\n}\nexport const plugins = load()\n'
  }
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true })
    writeFileSync(join(dir, name), text)
  }
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** `plugboard inspect <file>` from `dir`: its exit code and output. */
const inspect = (file: string) => runCli(dir, "inspect", file)

const fix =
  'A plugin module resolves its packages from its own project: put it in a folder whose package.json has "type": "module", and there run npm install @plugboard/core effect (plugboard init <folder> scaffolds such a project).'

describe("a plugin module that fails to load", () => {
  it("(a TypeScript file outside any project that needs no package loads: the loader's CommonJS reading is handled)", async () => {
    const { code, stdout } = await inspect("loose/ok.ts")
    expect(code).toBe(0)
    expect(stdout).toContain("hello")
  }, 60_000)

  it("outside any project: names the package that does not resolve, and how to fix it (not the loader's require cycle)", async () => {
    const { code, stderr } = await inspect("loose/plugins.ts")
    expect(code).toBe(2)
    expect(stderr.trim()).toBe(
      `plugboard inspect: Module 'loose/plugins.ts' failed to load: it imports '@plugboard/core', which cannot be resolved from loose. ${fix}`
    )
  }, 60_000)

  it("in an ES module project without the package: the same diagnosis", async () => {
    const { stderr } = await inspect("project/plugins.ts")
    expect(stderr.trim()).toBe(
      `plugboard inspect: Module 'project/plugins.ts' failed to load: it imports '@plugboard/core', which cannot be resolved from project. ${fix}`
    )
  }, 60_000)

  it("in a project that declares the package but was not installed: run npm install there", async () => {
    const { code, stderr } = await inspect("inited/src/index.ts")
    expect(code).toBe(2)
    expect(stderr.trim()).toBe(
      "plugboard inspect: Module 'inited/src/index.ts' failed to load: it imports '@plugboard/core', which " +
        "cannot be resolved from inited/src. Its project's package.json (inited/package.json) declares it, " +
        "but it is not installed: run npm install in inited."
    )
  }, 60_000)

  it("a syntax error: every line of it, with file:line:column", async () => {
    const { code, stderr } = await inspect("loose/syntax.ts")
    expect(code).toBe(2)
    expect(stderr.trim()).toBe(
      [
        "plugboard inspect: Module 'loose/syntax.ts' failed to load: Transform failed with 1 error:",
        `  ${join(dir, "loose/syntax.ts")}:2:38: ERROR: Expected "}" but found "summary"`
      ].join("\n")
    )
  }, 60_000)

  it("an error thrown while loading: its message, where, and the chain of causes", async () => {
    const { code, stderr } = await inspect("project/throws.ts")
    expect(code).toBe(2)
    expect(stderr.trim()).toBe(
      [
        "plugboard inspect: Module 'project/throws.ts' failed to load: config missing",
        "  at project/throws.ts:2:9",
        "  caused by: ENOENT: keys.json",
        "  caused by: disk"
      ].join("\n")
    )
    // Outside any project: Node 22+ detects the module syntax and loads it as ESM, with the
    // position; Node 20 loads it as CommonJS, whose position is the transpiled code's (left out).
    const esm = Number(process.versions.node.split(".")[0]) >= 22
    expect((await inspect("loose/throws.ts")).stderr.trim()).toBe(
      [
        "plugboard inspect: Module 'loose/throws.ts' failed to load: config missing",
        ...(esm ? ["  at loose/throws.ts:2:9"] : []),
        "  caused by: ENOENT: keys.json"
      ].join("\n")
    )
  }, 60_000)
})
