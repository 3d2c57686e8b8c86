/**
 * `plugboard inspect` end to end on a 5,000-plugin catalog (generated, real-shaped: 2–4 tools
 * each with its own Effect Schema input; packages/host-node/test/inspect/fixtures/large-catalog.ts)
 * with the exact o200k tokenizer. Issue 5's target: < 3 s.
 *
 * Each run is a new process (`tsx`, nothing cached): it imports the catalog module (generating
 * the plugins: Effect Schema construction, the module's own cost), then runs `runInspect` (build
 * the catalog: validation and JSON Schemas; load the o200k ranks; count the budget report;
 * render). The two are timed apart, in wall-clock and CPU time; the machine is shared, so CPU
 * time is the steadier figure. Then `--json`, `--eval` (on 1,000 plugins) and `pnpm plugboard inspect` as typed.
 *
 * Issue 5's "< 3 s" is judged, and printed, for two scopes: inspect's own work given the loaded
 * module (what plugboard controls), and the whole process as a user runs it (tsx start-up and
 * transpiling, importing the user's module: 5,000 plugins built with Effect Schema cost what they
 * cost, whoever inspects them, and inspect's work).
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { runInspect } from "../packages/host-node/src/inspect/index.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const MODULE = "packages/host-node/test/inspect/fixtures/large-catalog.ts"
const PLUGINS = 5000
const CHILD = "PLUGBOARD_INSPECT_BENCH_CHILD"
const tsx = join(root, "node_modules/.bin/tsx")

interface Phase {
  readonly wall: number
  readonly cpu: number
}
interface ChildFigures {
  readonly importModule: Phase
  readonly inspect: Phase
  /** CPU time of the whole child node process (start-up, tsx loader, import, inspect), ms. */
  readonly processCpu: number
  readonly code: number
  readonly bytes: number
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/** Runs this file as a child process measuring one inspect run with `args`. */
const child = (
  args: ReadonlyArray<string>,
  plugins = PLUGINS
): ChildFigures & { readonly process: number } => {
  const t0 = performance.now()
  const out = execFileSync(tsx, ["--conditions=@plugboard/source", fileURLToPath(import.meta.url), ...args], {
    cwd: root,
    env: { ...process.env, PLUGBOARD_INSPECT_PLUGINS: String(plugins), [CHILD]: "1" },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024
  })
  const process_ = performance.now() - t0
  return { ...(JSON.parse(out.trim().split("\n").at(-1)!) as ChildFigures), process: process_ }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const verdict = (ms: number) => (ms < 3000 ? "MET" : "MISSED")

export default async () => {
  const runs = [child([MODULE]), child([MODULE]), child([MODULE])]
  for (const r of runs) if (r.code !== 0) throw new Error(`inspect exited ${r.code}`)
  console.log(`inspect, ${PLUGINS.toLocaleString("en-US")} plugins, o200k, each run a new process:`)
  for (const [i, r] of runs.entries()) {
    console.log(
      `  run ${i + 1}: import the module ${s(r.importModule.wall)} (cpu ${s(r.importModule.cpu)}), ` +
        `inspect ${s(r.inspect.wall)} (cpu ${s(r.inspect.cpu)}), whole process ${s(r.process)} (cpu ${s(r.processCpu)})`
    )
  }
  const json = child([MODULE, "--json"])
  console.log(
    `  --json: inspect ${s(json.inspect.wall)} (cpu ${s(json.inspect.cpu)}), ${(json.bytes / 1e6).toFixed(1)} MB`
  )
  // Leave-one-out ranks every example against every plugin: quadratic, so measured on 1,000.
  const evaluated = child([MODULE, "--eval"], 1000)
  console.log(
    `  --eval on 1,000 plugins (leave-one-out over 2,000 examples): inspect ${s(evaluated.inspect.wall)} (cpu ${s(evaluated.inspect.cpu)})`
  )
  const main = join(root, "packages/host-node/src/cli/main.ts")
  let cli: number | undefined
  if (existsSync(main)) {
    const t0 = performance.now()
    execFileSync(tsx, ["--conditions=@plugboard/source", main, "inspect", MODULE], {
      cwd: root,
      env: { ...process.env, PLUGBOARD_INSPECT_PLUGINS: String(PLUGINS) },
      stdio: "ignore"
    })
    cli = performance.now() - t0
    console.log(`  pnpm plugboard inspect (cli/main.ts), whole process: ${s(cli)}`)
  }
  const inspectWall = median(runs.map((r) => r.inspect.wall))
  const inspectCpu = median(runs.map((r) => r.inspect.cpu))
  const processWall = median(runs.map((r) => r.process))
  const processCpu = median(runs.map((r) => r.processCpu))
  const importCpu = median(runs.map((r) => r.importModule.cpu))
  console.log("  target < 3 s (issue 5), medians of the 3 runs:")
  console.log(
    `    inspect given the loaded module (build catalog, count, render): wall ${s(inspectWall)}, cpu ${s(inspectCpu)} -> ${verdict(Math.max(inspectWall, inspectCpu))}`
  )
  console.log(
    `    whole process (tsx start-up + import of the module, cpu ${s(importCpu)} + inspect): wall ${s(processWall)}, cpu ${s(processCpu)} -> ${verdict(Math.max(processWall, processCpu))}` +
      (cli === undefined ? "" : `; as typed (cli/main.ts) wall ${s(cli)} -> ${verdict(cli)}`)
  )
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
  const used = process.cpuUsage()
  const processCpu = (used.user + used.system) / 1000
  console.log(JSON.stringify({ importModule, inspect, processCpu, code, bytes } satisfies ChildFigures))
}
