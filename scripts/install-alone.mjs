#!/usr/bin/env node
/**
 * Every package installs from its tarball alone with npm (docs/packages.md). For each package:
 * `npm install` of its tarball plus only the tarballs of the @plugboard packages it depends on,
 * into an empty folder, as a user without the workspace would; then
 *   - its entry point imports (`await import("@plugboard/x")`; @plugboard/models with no
 *     provider SDK installed, they are optional peers), on the Node running this script and on
 *     the package's lower bound: the oldest Node its own `engines.node` admits (semver's
 *     minVersion: 20.19.0 for most, 22.14.0 for those on better-sqlite3 13), fetched from the npm
 *     registry by scripts/node24.sh (`PLUGBOARD_NODE_VERSION=<v> bash scripts/node24.sh path`);
 *   - npm printed no EBADENGINE warning (npm checks the Node running it), and every installed
 *     package's `engines.node` (when it has one) admits the package's lower bound;
 *   - no package brings an LLM provider SDK, and only @plugboard/matrix (and host-node, which
 *     depends on it) brings matrix-js-sdk; @plugboard/langgraph installs at most 40 packages.
 * Prints a table: package, its Node lower bound, packages installed (npm's "added N"), size of
 * node_modules, install time.
 *
 * better-sqlite3 13 ships its Node-API binaries for every major platform inside the npm package
 * and has no install script: nothing is compiled.
 *
 *   node scripts/install-alone.mjs [tarball folder]    (after `pnpm build`; packs when no folder)
 *   --markdown   print the table as README's Markdown table
 *   --only a,b   only these packages (names without the scope)
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import semver from "semver"

const root = resolve(import.meta.dirname, "..")
const LANGGRAPH_MAX = 40
const PROVIDER_SDKS = [
  "openai",
  "@anthropic-ai/sdk",
  "ollama",
  "@langchain/openai",
  "@langchain/anthropic",
  "@langchain/ollama"
]
const MATRIX_SDK = "matrix-js-sdk"

const args = process.argv.slice(2)
const markdown = args.includes("--markdown")
const onlyAt = args.indexOf("--only")
const only = onlyAt >= 0 ? new Set(args[onlyAt + 1]?.split(",")) : undefined
const folderArg = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--only")

const keep = process.env.KEEP_INSTALL_ALONE === "1"
const scratch = mkdtempSync(join(tmpdir(), "plugboard-alone-"))
const tarballs = folderArg === undefined ? join(scratch, "tarballs") : resolve(folderArg)
if (folderArg === undefined)
  execFileSync("bash", [join(root, "scripts/pack.sh"), tarballs], { stdio: "inherit" })

/** Workspace packages: name → { dir, deps (the @plugboard packages it depends on), tarball }. */
const packageDirs = [
  "core",
  ...readdirSync(join(root, "packages/adapters"))
    .filter((d) => existsSync(join(root, "packages/adapters", d, "package.json")))
    .map((d) => `adapters/${d}`),
  "host-node",
  "testing"
]
const packages = new Map()
for (const dir of packageDirs) {
  const manifest = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8"))
  const short = manifest.name.replace("@plugboard/", "")
  const tarball = join(tarballs, `plugboard-${short}-${manifest.version}.tgz`)
  if (!existsSync(tarball)) throw new Error(`no tarball ${tarball}: run pnpm build, then scripts/pack.sh`)
  const deps = Object.keys(manifest.dependencies ?? {}).filter((d) => d.startsWith("@plugboard/"))
  const engines = manifest.engines?.node
  const lowest = engines === undefined ? null : semver.minVersion(engines)
  if (lowest === null) throw new Error(`${manifest.name} declares no usable engines.node ("${engines}")`)
  packages.set(manifest.name, { short, tarball, deps, engines, lowest: lowest.version })
}

/** The folder of Node `version`'s binary, installed from the npm registry once (scripts/node24.sh). */
const nodeBinaries = new Map()
const nodeAt = (version) => {
  if (version === process.versions.node) return process.execPath
  if (!nodeBinaries.has(version)) {
    const dir = execFileSync("bash", [join(root, "scripts/node24.sh"), "path"], {
      encoding: "utf8",
      env: { ...process.env, PLUGBOARD_NODE_VERSION: version },
      stdio: ["ignore", "pipe", "inherit"]
    }).trim()
    nodeBinaries.set(version, join(dir, "bin/node"))
  }
  return nodeBinaries.get(version)
}

/** The package and every @plugboard package it depends on, transitively. */
const closure = (name, seen = new Set()) => {
  if (seen.has(name)) return seen
  seen.add(name)
  for (const d of packages.get(name).deps) closure(d, seen)
  return seen
}

/** Every installed package under `modules` (nested node_modules included): { name, version, engines, path }. */
const installed = (modules) => {
  const found = []
  const visit = (dir) => {
    if (!existsSync(dir)) return
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith(".")) continue
      const path = join(dir, entry)
      if (entry.startsWith("@")) {
        for (const scoped of readdirSync(path)) take(join(path, scoped))
      } else take(path)
    }
  }
  const take = (path) => {
    const file = join(path, "package.json")
    if (!existsSync(file)) return
    const m = JSON.parse(readFileSync(file, "utf8"))
    found.push({ name: m.name, version: m.version, engines: m.engines?.node, path })
    visit(join(path, "node_modules"))
  }
  visit(modules)
  return found
}

// onnxruntime-node (@plugboard/embeddings) ships its CPU binary in the npm package; its install
// script would also fetch CUDA binaries from nuget.org, which CI does not reach: skipped, the
// switch its script documents.
const npmEnv = {
  ...process.env,
  ONNXRUNTIME_NODE_INSTALL: process.env.ONNXRUNTIME_NODE_INSTALL ?? "skip"
}

const rows = []
const failures = []
for (const [name, pkg] of packages) {
  if (only !== undefined && !only.has(pkg.short)) continue
  const dir = join(scratch, pkg.short)
  execFileSync("mkdir", ["-p", dir])
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `alone-${pkg.short}`, private: true }))
  const wanted = [...closure(name)].map((n) => packages.get(n).tarball)
  const started = Date.now()
  const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=warn", ...wanted], {
    cwd: dir,
    encoding: "utf8",
    env: npmEnv
  })
  const seconds = (Date.now() - started) / 1000
  const output = `${npm.stdout}\n${npm.stderr}`
  const problems = []
  if (npm.status !== 0) problems.push(`npm install failed:\n${output}`)
  if (/EBADENGINE/.test(output)) {
    problems.push(
      `EBADENGINE warning:\n${output
        .split("\n")
        .filter((l) => /engine|EBADENGINE|package|required|current/i.test(l))
        .join("\n")}`
    )
  }
  const added = Number(/added (\d+) packages?/.exec(output)?.[1] ?? Number.NaN)
  const list = installed(join(dir, "node_modules"))
  const names = new Set(list.map((p) => p.name))
  const kb = existsSync(join(dir, "node_modules"))
    ? Number(execFileSync("du", ["-sk", join(dir, "node_modules")], { encoding: "utf8" }).split("\t")[0])
    : Number.NaN
  if (npm.status === 0) {
    for (const version of new Set([process.versions.node, pkg.lowest])) {
      const load = spawnSync(
        nodeAt(version),
        ["--input-type=module", "-e", `await import(${JSON.stringify(name)})`],
        { cwd: dir, encoding: "utf8" }
      )
      if (load.status !== 0) {
        problems.push(
          `import('${name}') failed on Node ${version} (${load.signal ?? `exit ${load.status}`}):\n${load.stderr}`
        )
      }
    }
  }
  for (const p of list) {
    if (p.engines === undefined) continue
    if (semver.validRange(p.engines) === null || !semver.satisfies(pkg.lowest, p.engines)) {
      problems.push(
        `${p.name}@${p.version} declares engines.node "${p.engines}", which excludes Node ${pkg.lowest} (${name}'s lower bound, engines.node "${pkg.engines}")`
      )
    }
  }
  for (const sdk of PROVIDER_SDKS) if (names.has(sdk)) problems.push(`brings the provider SDK ${sdk}`)
  const mayHaveMatrix = name === "@plugboard/matrix" || closure(name).has("@plugboard/matrix")
  if (!mayHaveMatrix && names.has(MATRIX_SDK)) problems.push(`brings ${MATRIX_SDK}`)
  if (name === "@plugboard/langgraph" && !(added <= LANGGRAPH_MAX)) {
    problems.push(`installs ${added} packages, more than ${LANGGRAPH_MAX}`)
  }
  const row = { name, node: pkg.engines, with: wanted.length - 1, added, mb: kb / 1024, seconds }
  rows.push(row)
  console.error(
    `[alone] ${name} (node ${pkg.engines}): ${Number.isNaN(added) ? "?" : added} packages, ${row.mb.toFixed(0)} MB, ${seconds.toFixed(1)} s${problems.length > 0 ? " FAIL" : ""}`
  )
  for (const p of problems) {
    failures.push(`${name}: ${p}`)
    console.error(`[alone]   ${p.split("\n")[0]}`)
  }
  if (!keep) rmSync(dir, { recursive: true, force: true })
}

const table = [
  ["package", "node", "+ @plugboard deps", "packages installed", "node_modules (MB)", "install (s)"],
  ...rows.map((r) => [r.name, r.node, String(r.with), String(r.added), r.mb.toFixed(0), r.seconds.toFixed(1)])
]
if (markdown) {
  console.log(`| ${table[0].join(" | ")} |`)
  console.log(`|${table[0].map(() => "---").join("|")}|`)
  for (const r of table.slice(1)) console.log(`| \`${r[0]}\` | ${r.slice(1).join(" | ")} |`)
} else {
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)))
  for (const r of table)
    console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  "))
}
if (!keep) rmSync(scratch, { recursive: true, force: true })
else console.error(`[alone] kept ${scratch}`)
if (failures.length > 0) {
  for (const f of failures) console.error(`[alone] ${f}`)
  process.exit(1)
}
