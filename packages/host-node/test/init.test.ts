import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Catalog } from "@plugboard/core"
import { afterAll, describe, expect, it } from "vitest"
import {
  packageJson,
  plugboardVersions,
  projectName,
  scaffoldFiles,
  TOOL_VERSIONS
} from "../src/init/Init.js"
import { plugins } from "../template/src/index.js"
import { spawnServe } from "./helpers.js"
import { workspaceTarballs } from "./initTarballs.js"
import { ROOT, runCli } from "./runCli.js"

const cwd = mkdtempSync(join(tmpdir(), "plugboard-init-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const plugboard = (...args: ReadonlyArray<string>) => runCli(cwd, ...args)

const readJson = (file: string) => JSON.parse(readFileSync(file, "utf8"))

describe("plugboard init", () => {
  it("scaffolds a new folder: package.json, tsconfig, a plugin, its test, a README", async () => {
    // Stand-ins for the packages' tarballs (initInstall.test.ts checks what init does with them).
    workspaceTarballs(join(cwd, "tarballs"))
    const { code, stdout, stderr } = await plugboard("init", "My Plugins", "--from", "tarballs")
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    const dir = join(cwd, "My Plugins")
    const files = (sub = ""): Array<string> =>
      readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(`${sub}${e.name}/`) : [`${sub}${e.name}`]
      )
    expect(
      files()
        .filter((f) => !f.startsWith("vendor/"))
        .sort()
    ).toEqual(
      [
        ".gitignore",
        "README.md",
        "package.json",
        "src/index.ts",
        "src/tip.ts",
        "test/tip.test.ts",
        "tsconfig.json"
      ].sort()
    )
    expect(stdout).toContain(`Created the plugin project 'my-plugins' in ${dir}:`)
    // Quoted, so that the line runs as printed.
    expect(stdout).toContain("  cd 'My Plugins'\n  npm install\n  npm test")
    const manifest = readJson(join(dir, "package.json"))
    expect(manifest.name).toBe("my-plugins")
    expect(manifest.type).toBe("module")
    expect(manifest.scripts).toMatchObject({ test: "vitest run", inspect: "plugboard inspect src/index.ts" })
    expect(readFileSync(join(dir, "README.md"), "utf8").split("\n")[0]).toBe("# my-plugins")
    expect(readFileSync(join(dir, "src/tip.ts"), "utf8")).toBe(
      readFileSync(join(ROOT, "packages/host-node/template/src/tip.ts"), "utf8")
    )
  }, 60_000)

  it("depends on the plugboard packages at their own versions, and on the workspace's tool versions", () => {
    const own = (dir: string) => readJson(join(ROOT, "packages", dir, "package.json")).version
    const manifest = JSON.parse(packageJson("x", plugboardVersions()))
    expect(manifest.dependencies).toEqual({
      "@plugboard/core": own("core"),
      "@plugboard/host-node": own("host-node"),
      effect: TOOL_VERSIONS.effect
    })
    expect(manifest.devDependencies["@plugboard/langgraph"]).toBe(own("adapters/langgraph"))
    expect(manifest.devDependencies["@plugboard/models"]).toBe(own("adapters/models"))
    const workspace = readJson(join(ROOT, "package.json")).devDependencies
    for (const [name, version] of Object.entries(TOOL_VERSIONS)) expect(workspace[name], name).toBe(version)
  })

  it("a published host pins the versions its package.json names", () => {
    const versions = {
      "@plugboard/core": "1.2.3",
      "@plugboard/host-node": "1.2.4",
      "@plugboard/langgraph": "1.2.5",
      "@plugboard/models": "1.2.6"
    }
    const manifest = JSON.parse(packageJson("x", versions))
    expect(manifest.dependencies["@plugboard/core"]).toBe("1.2.3")
    expect(manifest.devDependencies["@plugboard/models"]).toBe("1.2.6")
  })

  it("the template's plugin passes core's checks with no warning", () => {
    const catalog = Catalog.unsafeMake(plugins)
    expect(catalog.warnings).toEqual([])
    expect(catalog.entries.map((e) => e.plugin.name)).toEqual(["tip"])
  })

  it("the template ships: host-node's package.json lists it in files, and .gitignore is written from gitignore", () => {
    expect(readJson(join(ROOT, "packages/host-node/package.json")).files).toContain("template")
    expect(scaffoldFiles("x").get(".gitignore")).toBe("node_modules/\n.plugboard/\n")
  })

  it("serve suggests a chat the project's catalog answers, as typed where the user is", async () => {
    const template = join(ROOT, "packages/host-node/template/src/index.ts")
    for (const [env, cli] of [
      [{}, "npx plugboard"],
      [{ npm_lifecycle_event: "plugboard" }, "pnpm plugboard"]
    ] as const) {
      const dir = mkdtempSync(join(cwd, "serve-"))
      const serve = spawnServe(
        [
          process.execPath,
          "--conditions=@plugboard/source",
          join(ROOT, "scripts/plugboard.mjs"),
          "serve",
          template,
          "--port",
          "0"
        ],
        dir,
        { HOME: dir, ...env }
      )
      try {
        await serve.url
        expect(serve.output()).toContain(`\nTry: ${cli} chat "What is a 15% tip on a bill of 80?"\n`)
      } finally {
        serve.child.kill("SIGTERM")
        await serve.exited
      }
    }
  }, 120_000)

  it("names a folder npm accepts", () => {
    expect(projectName("/a/My Plugins")).toBe("my-plugins")
    expect(projectName("/a/.hidden_")).toBe("hidden")
    expect(projectName("/a/***")).toBe("plugboard-plugins")
  })

  it("refuses a folder that is not empty, and writes nothing", async () => {
    const dir = join(cwd, "taken")
    mkdirSync(dir)
    writeFileSync(join(dir, "notes.txt"), "mine")
    const { code, stdout, stderr } = await plugboard("init", "taken")
    expect({ code, stdout }).toEqual({ code: 1, stdout: "" })
    expect(stderr).toBe(
      "Cannot scaffold into 'taken': it is not empty (notes.txt). plugboard init writes only into a new or " +
        "empty folder and never overwrites a file: name a new folder, e.g. plugboard init my-plugins.\n"
    )
    expect(readdirSync(dir)).toEqual(["notes.txt"])
  }, 60_000)

  it("refuses a file, and bad arguments name the help", async () => {
    writeFileSync(join(cwd, "a-file"), "")
    expect((await plugboard("init", "a-file")).stderr).toBe(
      "Cannot scaffold into 'a-file': it is a file, not a folder.\n"
    )
    const bad = await plugboard("init", "--force")
    expect({ code: bad.code, stderr: bad.stderr }).toEqual({
      code: 2,
      stderr: "Unknown option --force. Run 'plugboard init --help' for its options.\n"
    })
    const two = await plugboard("init", "a", "b")
    expect(two.stderr).toBe("init takes at most one folder. Run 'plugboard init --help' for its options.\n")
  }, 60_000)
})
