/**
 * `plugboard init`'s project installs as written: the @plugboard packages, not on the npm
 * registry, come from tarballs in its `vendor/` (docs/cli.md#the-scaffolds-plugboard-packages).
 * scripts/init-smoke.sh runs the real `npm install` and the printed steps; these check what init
 * writes and refuses, with stand-in tarballs so that no `pnpm build` is needed.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { init } from "../src/init/Init.js"
import { packedManifest } from "../src/init/Vendor.js"
import {
  fakeCheckout,
  packedManifests,
  tarballName,
  workspaceTarballs,
  writeTarball
} from "./initTarballs.js"
import { runCli } from "./runCli.js"

const cwd = mkdtempSync(join(tmpdir(), "plugboard-init-install-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const plugboard = (...args: ReadonlyArray<string>) => runCli(cwd, ...args)
const readJson = (file: string) => JSON.parse(readFileSync(file, "utf8"))

/** `init` in-process, its output collected. */
const initIn = (argv: ReadonlyArray<string>, checkout: string | null) => {
  let stdout = ""
  let stderr = ""
  const code = init(argv, { out: (t) => (stdout += t), err: (t) => (stderr += t), cwd, checkout })
  return { code, stdout, stderr }
}

/**
 * The @plugboard packages npm installs for a manifest: its dependencies and required peers, and
 * for the project itself its dev dependencies too.
 */
const needs = (m: Record<string, Record<string, string> | undefined>, root = false): Array<string> => {
  const optional = (m.peerDependenciesMeta ?? {}) as unknown as Record<string, { optional?: boolean }>
  return [
    ...Object.keys(m.dependencies ?? {}),
    ...(root ? Object.keys(m.devDependencies ?? {}) : []),
    ...Object.keys(m.peerDependencies ?? {}).filter((n) => optional[n]?.optional !== true)
  ].filter((n) => n.startsWith("@plugboard/"))
}

describe("plugboard init: the project's @plugboard packages", () => {
  it("issue 36 item 15: the scaffold installs as written: init --from a folder of tarballs vendors every @plugboard package the project installs, and package.json installs each from vendor/", async () => {
    const tarballs = workspaceTarballs(join(cwd, "tarballs"))
    writeFileSync(join(tarballs, "notes.tgz"), "not a tarball")
    const { code, stdout, stderr } = await plugboard("init", "app", "--from", "tarballs")
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    const dir = join(cwd, "app")
    const manifest = readJson(join(dir, "package.json"))
    const vendored = readdirSync(join(dir, "vendor")).sort()

    // Every @plugboard package npm would look up, from the project down through the tarballs'
    // own package.json, is a file: spec on a tarball in vendor/, in the dependencies and overrides.
    const byName = new Map(packedManifests().map((m) => [m.name, m]))
    const reached = new Set<string>()
    const walk = (names: ReadonlyArray<string>) => {
      for (const name of names) {
        if (reached.has(name)) continue
        reached.add(name)
        walk(needs(byName.get(name) as never))
      }
    }
    walk(needs(manifest, true))
    const fileOf = (spec: string) => /^file:vendor\/([^/]+\.tgz)$/.exec(spec)?.[1]
    for (const name of reached) {
      const file = fileOf(manifest.overrides?.[name] ?? "")
      expect(file, `${name} in overrides`).toBeDefined()
      const inside = packedManifest(readFileSync(join(dir, "vendor", file!)))
      expect(inside?.name).toBe(name)
    }
    for (const field of ["dependencies", "devDependencies"])
      for (const [name, spec] of Object.entries(manifest[field] as Record<string, string>))
        if (name.startsWith("@plugboard/")) expect(spec, name).toBe(manifest.overrides[name])
    // Only what the project installs: no optional peer (embeddings), no unrelated adapter (ai-sdk).
    expect(vendored).toEqual([...reached].map((n) => tarballName(n, byName.get(n)!.version)).sort())
    expect(vendored).not.toContain(tarballName("@plugboard/ai-sdk", byName.get("@plugboard/ai-sdk")!.version))

    expect(stdout).toContain(`  vendor/${vendored[0]}\n`)
    expect(stdout).toContain(
      "The @plugboard packages are not on the npm registry: package.json installs them from vendor/,\n" +
        `copied from tarballs. Keep vendor/ with the project.\n`
    )
    expect(stdout.slice(stdout.indexOf("\nNext:\n"))).toBe(
      [
        "",
        "Next:",
        "  cd app",
        "  npm install",
        "  npm test            # the plugin's tests, offline",
        "  npm run inspect     # manifests, warnings, token costs",
        "  npm run serve       # the oracle on http://127.0.0.1:3000 (scripted model, no key needed)",
        ""
      ].join("\n")
    )
  }, 60_000)

  it("--from a folder that is not there, or that lacks a tarball the project needs, is refused and nothing is written", async () => {
    const none = await plugboard("init", "a", "--from", "nowhere")
    expect({ code: none.code, stdout: none.stdout }).toEqual({ code: 1, stdout: "" })
    expect(none.stderr).toContain("Cannot scaffold: --from 'nowhere' is not a folder.")

    const versions = new Map(packedManifests().map((m) => [m.name, m.version]))
    const v = (name: string) => versions.get(name)!
    workspaceTarballs(join(cwd, "partial"), ["@plugboard/host-node", "@plugboard/serde"])
    // A tarball of another version is not the one asked for.
    writeTarball(join(cwd, "partial"), "plugboard-host-node-9.9.9.tgz", {
      name: "@plugboard/host-node",
      version: "9.9.9"
    })
    const partial = await plugboard("init", "b", "--from=partial")
    expect(partial.code).toBe(1)
    expect(partial.stderr).toContain(
      `Cannot scaffold: 'partial' has no tarball of @plugboard/host-node ${v("@plugboard/host-node")} (only 9.9.9 there). `
    )
    // serde is not asked for by the project but by a package it installs: named with that package.
    expect(partial.stderr).not.toContain("@plugboard/serde")
    workspaceTarballs(join(cwd, "no-serde"), ["@plugboard/serde"])
    const noSerde = await plugboard("init", "b", "--from=no-serde")
    expect(noSerde.stderr).toMatch(
      new RegExp(
        `has no tarball of @plugboard/serde ${v("@plugboard/serde")} \\(needed by @plugboard/(postgres|sqlite)\\)\\. `
      )
    )
    expect(partial.stderr).toContain("bash scripts/pack.sh <folder>")

    const bare = await plugboard("init", "c", "--from")
    expect({ code: bare.code, stderr: bare.stderr }).toEqual({
      code: 2,
      stderr: "Option --from needs a folder. Run 'plugboard init --help' for its options.\n"
    })
    for (const d of ["a", "b", "c"]) expect(existsSync(join(cwd, d)), d).toBe(false)
  }, 60_000)

  it("scripts/pack.sh refuses a tree that is not built: it names pnpm build, exits 1 and writes nothing", async () => {
    const root = fakeCheckout(join(cwd, "unbuilt-pack"), false)
    const run = await new Promise<{ code: number | null; stderr: string }>((done) =>
      execFile("bash", [join(root, "scripts/pack.sh"), join(root, "out")], (error, _stdout, stderr) =>
        done({ code: error === null ? 0 : ((error as { code?: number }).code ?? null), stderr })
      )
    )
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(
      `[pack] the packages of ${root} are not built (packages/core/dist/index.js, ` +
        "packages/adapters/langgraph/dist/index.js, packages/adapters/models/dist/index.js and 1 more " +
        "missing): run `pnpm build` there first.\n"
    )
    expect(existsSync(join(root, "out"))).toBe(false)
  })

  it("from a checkout that is not built, init says to run pnpm build there and writes nothing", () => {
    const root = fakeCheckout(join(cwd, "unbuilt"), false)
    const { code, stdout, stderr } = initIn(["from-unbuilt"], root)
    expect(code).toBe(1)
    expect(stderr).toContain("packing failed; nothing was written:\n[pack] the packages of")
    expect(stderr).toContain("run `pnpm build` there first.")
    expect(stdout).toBe(`Packing the @plugboard packages of the checkout ${root} (scripts/pack.sh)…\n`)
    expect(existsSync(join(cwd, "from-unbuilt"))).toBe(false)
  })

  it("from a built checkout, init packs it with its scripts/pack.sh and vendors the tarballs", () => {
    const root = fakeCheckout(join(cwd, "built"), true)
    mkdirSync(join(cwd, "empty"))
    const { code, stdout, stderr } = initIn(["empty"], root)
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    const vendored = readdirSync(join(cwd, "empty/vendor")).sort()
    expect(vendored.map((f) => f.replace(/-\d[^-]*\.tgz$/, ""))).toEqual([
      "plugboard-core",
      "plugboard-host-node",
      "plugboard-langgraph",
      "plugboard-models"
    ])
    const manifest = readJson(join(cwd, "empty/package.json"))
    expect(Object.keys(manifest.overrides)).toEqual([
      "@plugboard/core",
      "@plugboard/host-node",
      "@plugboard/langgraph",
      "@plugboard/models"
    ])
    expect(stdout).toContain(`package.json installs them from vendor/,\npacked from ${root}.`)
  }, 60_000)

  it("a host installed as a package, with no --from, keeps the registry versions and says what to do if they are not there", () => {
    const { code, stdout } = initIn(["registry"], null)
    expect(code).toBe(0)
    const manifest = readJson(join(cwd, "registry/package.json"))
    expect(manifest.overrides).toBeUndefined()
    expect(manifest.dependencies["@plugboard/core"]).toMatch(/^\d+\.\d+\.\d+$/)
    expect(existsSync(join(cwd, "registry/vendor"))).toBe(false)
    expect(stdout).toContain("--from <folder> of the tarballs scripts/pack.sh packs (docs/cli.md).")
  })
})
