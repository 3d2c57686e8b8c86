/**
 * `plugboard inspect` end to end on a 5,000-plugin catalog (generated, real-shaped: 2–4 tools
 * each with its own Effect Schema input; packages/host-node/test/inspect/fixtures/large-catalog.ts)
 * with the exact o200k tokenizer. Issue 5's target: < 3 s.
 *
 * Three views, every run a new process (nothing cached in memory):
 * - phases: the catalog module's import (generating the plugins: 15,000 Effect Schemas, the
 *   module's own cost, whoever loads it) and `runInspect` (build the catalog: validation and JSON
 *   Schemas; load the o200k ranks; the budget report; render), timed apart in wall-clock and CPU
 *   time; then `--json` and `--eval` (on 1,000 plugins);
 * - as typed in this repository: `pnpm plugboard inspect <module>` (pnpm, the TypeScript sources);
 * - the installed bin: `plugboard inspect <module>`, i.e. `node packages/host-node/dist/cli/main.js`
 *   (built first when `dist` is missing or older than the sources).
 * The target is judged on the last two: what a user waits for. The machine is shared; the load
 * average is printed with the figures.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { loadavg } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { runInspect } from "../packages/host-node/src/inspect/index.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const MODULE = "packages/host-node/test/inspect/fixtures/large-catalog.ts"
const PLUGINS = 5000
const CHILD = "PLUGBOARD_INSPECT_BENCH_CHILD"
const RUNS = 3

interface Phase {
  readonly wall: number
  readonly cpu: number
}
interface ChildFigures {
  readonly importModule: Phase
  readonly inspect: Phase
  readonly code: number
  readonly bytes: number
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const verdict = (ms: number) => (ms < 3000 ? "MET" : "MISSED")
const env = (plugins: number) => ({ ...process.env, PLUGBOARD_INSPECT_PLUGINS: String(plugins) })

/** Runs this file as a child process measuring the phases of one inspect run with `args`. */
const phases = (args: ReadonlyArray<string>, plugins = PLUGINS): ChildFigures => {
  const out = execFileSync(
    process.execPath,
    ["--conditions=@plugboard/source", "--import", "tsx", fileURLToPath(import.meta.url), ...args],
    { cwd: root, env: { ...env(plugins), [CHILD]: "1" }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }
  )
  const figures = JSON.parse(out.trim().split("\n").at(-1)!) as ChildFigures
  if (figures.code !== 0) throw new Error(`inspect ${args.join(" ")} exited ${figures.code}`)
  return figures
}

/** Wall-clock time of a whole command, from spawn to exit. */
const timed = (file: string, args: ReadonlyArray<string>): number => {
  const t0 = performance.now()
  execFileSync(file, args, { cwd: root, env: env(PLUGINS), stdio: "ignore" })
  return performance.now() - t0
}

/** Newest modification time under `dir` (files only), in ms. */
const newest = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .reduce((m, d) => Math.max(m, statSync(join(d.parentPath, d.name)).mtimeMs), 0)

/** Builds the packages when a `dist` is missing or older than its `src`. */
const ensureBuilt = (): void => {
  const stale = ["core", "adapters", "host-node"].some((p) => {
    const dist = join(root, "packages", p, "dist")
    return !existsSync(dist) || newest(dist) < newest(join(root, "packages", p, "src"))
  })
  if (stale) {
    console.log("  (building the packages for the installed-bin figure: pnpm build)")
    execFileSync("pnpm", ["-s", "build"], { cwd: root, stdio: "ignore" })
  }
}

export default async () => {
  console.log(
    `inspect, ${PLUGINS.toLocaleString("en-US")} plugins, o200k, each run a new process (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}):`
  )
  const runs = Array.from({ length: RUNS }, () => phases([MODULE]))
  for (const [i, r] of runs.entries()) {
    console.log(
      `  phases, run ${i + 1}: import the module ${s(r.importModule.wall)} (cpu ${s(r.importModule.cpu)}), ` +
        `inspect ${s(r.inspect.wall)} (cpu ${s(r.inspect.cpu)})`
    )
  }
  const json = phases([MODULE, "--json"])
  console.log(
    `  --json: inspect ${s(json.inspect.wall)} (cpu ${s(json.inspect.cpu)}), ${(json.bytes / 1e6).toFixed(1)} MB`
  )
  // Leave-one-out ranks every example against every plugin: quadratic, so measured on 1,000.
  const evaluated = phases([MODULE, "--eval"], 1000)
  console.log(
    `  --eval on 1,000 plugins (leave-one-out over 2,000 examples): inspect ${s(evaluated.inspect.wall)} (cpu ${s(evaluated.inspect.cpu)})`
  )

  const typed = Array.from({ length: RUNS }, () => timed("pnpm", ["-s", "plugboard", "inspect", MODULE]))
  console.log(`  pnpm plugboard inspect <module>, whole process: ${typed.map(s).join(", ")}`)
  ensureBuilt()
  const bin = join(root, "packages/host-node/dist/cli/main.js")
  const installed = Array.from({ length: RUNS }, () => timed(process.execPath, [bin, "inspect", MODULE]))
  console.log(
    `  plugboard inspect <module> (the installed bin), whole process: ${installed.map(s).join(", ")}`
  )

  const med = (f: (r: ChildFigures) => number) => median(runs.map(f))
  console.log(`  target < 3 s (issue 5), medians of ${RUNS} runs:`)
  console.log(
    `    inspect's own work given the loaded module: wall ${s(med((r) => r.inspect.wall))}, cpu ${s(med((r) => r.inspect.cpu))}; ` +
      `importing the module: wall ${s(med((r) => r.importModule.wall))}, cpu ${s(med((r) => r.importModule.cpu))}`
  )
  console.log(`    pnpm plugboard inspect, whole process: ${s(median(typed))} -> ${verdict(median(typed))}`)
  console.log(`    installed bin, whole process: ${s(median(installed))} -> ${verdict(median(installed))}`)
}

const measure = async <A>(f: () => Promise<A>): Promise<[A, Phase]> => {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const a = await f()
  const c = process.cpuUsage(c0)
  return [a, { wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 }]
}

if (process.env[CHILD] === "1" && process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2)
  // Importing first leaves the module in Node's cache: runInspect's own import is then free.
  const [, importModule] = await measure(() => import(pathToFileURL(join(root, argv[0]!)).href))
  let bytes = 0
  const [code, inspect] = await measure(() =>
    runInspect(argv, {
      stdout: { write: (t: string) => (bytes += t.length) },
      stderr: process.stderr,
      cwd: root
    })
  )
  console.log(JSON.stringify({ importModule, inspect, code, bytes } satisfies ChildFigures))
}
