#!/usr/bin/env node
/**
 * Each package's tests on the oldest Node its own `engines.node` admits (semver's minVersion:
 * 20.19.0 for the packages that keep Node 20, 22.14.0 for those on better-sqlite3 13;
 * docs/packages.md). The workspace itself runs on Node 24; this is what keeps the lower bounds true.
 * Node is fetched from the npm registry by scripts/node24.sh (`PLUGBOARD_NODE_VERSION=<v> bash
 * scripts/node24.sh path`) and put first on PATH, so that the processes the tests start run on it
 * too. One vitest run per lower bound, the packages' test folders as filters.
 *
 * Not run on their lower bound (and why) — `SKIP` below:
 *   - @plugboard/host-node: its suite is most of `pnpm test` (the console in Chromium, the
 *     QiForge SDK, many servers); its lower bound is checked by scripts/install-alone.mjs (its
 *     entry point imports on Node 22.14.0);
 *   - @plugboard/langgraph's `test/sqlite/`, tests of its loop on the SQLite saver (its dev
 *     dependency @plugboard/sqlite): better-sqlite3 13 crashes a Node below 22.14 when it opens a
 *     database. The scenarios shared by both savers (test/harness.ts) run on `MemorySaver` there.
 *     The published package does not depend on SQLite.
 *
 *   node scripts/lower-bound-tests.mjs [--only a,b]    (names without the scope; services as for
 *                                                     `pnpm test`: a suite without its service skips)
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import semver from "semver"

const root = resolve(import.meta.dirname, "..")
const SKIP = new Map([
  ["@plugboard/host-node", ["**"]],
  ["@plugboard/langgraph", ["test/sqlite/**"]]
])

const args = process.argv.slice(2)
const onlyAt = args.indexOf("--only")
const only = onlyAt >= 0 ? new Set(args[onlyAt + 1]?.split(",")) : undefined

const dirs = [
  "packages/core",
  ...readdirSync(join(root, "packages/adapters"))
    .map((d) => `packages/adapters/${d}`)
    .filter((d) => existsSync(join(root, d, "package.json"))),
  "packages/host-node",
  "packages/testing"
]

/** Lower bound → the packages' test folders and the globs left out. */
const groups = new Map()
for (const dir of dirs) {
  const manifest = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"))
  if (only !== undefined && !only.has(manifest.name.replace("@plugboard/", ""))) continue
  const skip = SKIP.get(manifest.name) ?? []
  if (skip.includes("**") || !existsSync(join(root, dir, "test"))) continue
  const lowest = semver.minVersion(manifest.engines?.node ?? "")?.version
  if (lowest === undefined) throw new Error(`${manifest.name}: no usable engines.node`)
  const group = groups.get(lowest) ?? { names: [], filters: [], excludes: [] }
  group.names.push(manifest.name)
  group.filters.push(`${dir}/test/`)
  for (const glob of skip) group.excludes.push(`${dir}/${glob}`)
  groups.set(lowest, group)
}

let failed = false
for (const [version, group] of [...groups].sort(([a], [b]) => semver.compare(a, b))) {
  const bin = join(
    execFileSync("bash", [join(root, "scripts/node24.sh"), "path"], {
      encoding: "utf8",
      env: { ...process.env, PLUGBOARD_NODE_VERSION: version },
      stdio: ["ignore", "pipe", "inherit"]
    }).trim(),
    "bin"
  )
  console.error(`[lower-bound] Node ${version}: ${group.names.join(", ")}`)
  for (const e of group.excludes) console.error(`[lower-bound]   left out: ${relative(root, join(root, e))}`)
  const started = Date.now()
  const run = spawnSync(
    join(bin, "node"),
    [
      join(root, "node_modules/vitest/vitest.mjs"),
      "run",
      ...group.filters,
      ...group.excludes.flatMap((e) => ["--exclude", e])
    ],
    { cwd: root, stdio: "inherit", env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } }
  )
  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  if (run.status !== 0) {
    failed = true
    console.error(
      `[lower-bound] Node ${version}: FAILED (${run.signal ?? `exit ${run.status}`}, ${seconds} s)`
    )
  } else console.error(`[lower-bound] Node ${version}: passed (${seconds} s)`)
}
if (failed) process.exit(1)
