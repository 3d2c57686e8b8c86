/**
 * `pnpm bench mcp`: MCP servers as plugins, against the real `@modelcontextprotocol/server-everything`
 * over stdio, compared with the same server called directly through the official SDK's `Client`
 * in the same run (the machine is noisy: only figures measured side by side are compared).
 *
 * 1. First call: spawn + initialize + `tools/call echo`. plugboard's path is a fresh `McpPool`
 *    and `pool.call`; the anchor is a fresh SDK `Client` + `StdioClientTransport`, `connect`,
 *    `callTool`. Repetitions alternate which side goes first (ABBA), so drift hits both alike.
 * 2. Warm call: one open connection per side, many sequential `echo` calls in interleaved
 *    batches (the batch order rotates). plugboard is measured twice: `McpPool.call`, and the tool
 *    handler `CatalogSource.toPlugins` built over it (what the agent loop runs; it adds the
 *    RuntimeContext plumbing). The calls are spread over several rounds, each with fresh
 *    connections: how fast a call goes depends on how its child process happens to be
 *    scheduled, and a side must not win or lose by the luck of one child. Besides wall time per
 *    call, the CPU this process spends per call (the client side; the server is a child
 *    process) is reported.
 * 3. Boot of a catalog of N (default 200) MCP-derived plugins: one real server under N names.
 *    The cache is one file per server name, so the cold boot spawns every server once (at the
 *    discovery's own bounded concurrency, through `loadSources` as the host boots; its idle
 *    period is shortened so that 200 children do not all stay up); the warm boot (`loadSources` + `Catalog.make`) must
 *    read the cache only: a spawn during it fails the bench. Then the token cost of a turn with
 *    nothing loaded, with and without the N plugins (exact o200k counts): they must be equal.
 *
 * Every server is started through a tiny wrapper script that appends its pid to a log before
 * importing the real entry, so the bench can count spawns and make sure no child outlives it.
 * The wrapper is the same for both sides of every comparison.
 *
 * Knobs: BENCH_MCP_SERVERS (catalog size, default 200), BENCH_MCP_WARM_CALLS (calls per side,
 * default 2000), BENCH_MCP_FIRST_REPS (first calls per side, default 10).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import {
  Catalog,
  CatalogSource,
  GraphState,
  makeRuntimeContext,
  type Plugin,
  TokenBudget,
  ToolOutput
} from "@plugboard/core"
import {
  discoverMcpServers,
  McpConfig,
  McpPool,
  type McpServerConfig,
  mcpSpecs,
  toToolOutput
} from "@plugboard/mcp"
import { loadTiktokenCounter } from "@plugboard/tokenizers"
import { Either } from "effect"
import { examplePlugins } from "../examples/catalog/index.js"
// The SDK is a dependency of the adapters package, not of the workspace root: imported from
// there, it is the very module instance the adapter itself runs (same real path).
import { Client } from "../packages/adapters/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js"
import { StdioClientTransport } from "../packages/adapters/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js"
import { loadSources } from "../packages/host-node/src/Sources.js"

const SERVERS = Number(process.env.BENCH_MCP_SERVERS ?? 200)
const WARM_CALLS = Number(process.env.BENCH_MCP_WARM_CALLS ?? 2_000)
const FIRST_REPS = Number(process.env.BENCH_MCP_FIRST_REPS ?? 10)
const WARMUP_CALLS = 100
const BATCH = 100
const WARM_ROUNDS = 8
const WARM_BOOT_RUNS = 5
/** The whole bench gives up (killing every child) past this. */
const DEADLINE_MS = 170_000
/** Idle period of the cold boot's pool: connections close soon after discovery, see below. */
const COLD_IDLE_MS = 1_000
const MESSAGE = "hello from the bench"
const BASE_PROMPT = "You are a helpful assistant. Answer concisely and cite the tools you used."

const here = dirname(fileURLToPath(import.meta.url))
const fromAdapters = createRequire(join(here, "../packages/adapters/package.json"))
const everythingPackage = fromAdapters.resolve("@modelcontextprotocol/server-everything/package.json")
const everythingEntry = join(dirname(everythingPackage), "dist/index.js")
const versionOf = (packageJson: string): string =>
  (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version
const sdkVersion = versionOf(
  join(here, "../packages/adapters/mcp/node_modules/@modelcontextprotocol/sdk/package.json")
)

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}
const median = (values: ReadonlyArray<number>) => percentile(values, 50)
const pad = (s: string | number, n: number) => String(s).padStart(n)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`

const fail = (message: string): never => {
  throw new Error(`mcp bench: ${message}`)
}

/** Pids of every server started so far (the wrapper logs each), and which of them still run. */
class Children {
  constructor(readonly log: string) {}
  pids(): ReadonlyArray<number> {
    let text = ""
    try {
      text = readFileSync(this.log, "utf8")
    } catch {
      return []
    }
    return text
      .split("\n")
      .filter((l) => l !== "")
      .map(Number)
  }
  alive(): ReadonlyArray<number> {
    return this.pids().filter((pid) => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    })
  }
  /** Waits for every child to end (closing one takes a moment); kills and returns the stragglers. */
  async reap(waitMs: number): Promise<ReadonlyArray<number>> {
    const until = Date.now() + waitMs
    while (this.alive().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
    const left = this.alive()
    for (const pid of left) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
    }
    return left
  }
}

/** A direct SDK client over stdio: what a program not using plugboard writes. */
const directClient = async (command: string, args: ReadonlyArray<string>) => {
  const client = new Client({ name: "bench-direct", version: "0.0.0" })
  await client.connect(new StdioClientTransport({ command, args: [...args], stderr: "pipe" }))
  return client
}

type DirectResult = Awaited<ReturnType<Client["callTool"]>>
const checkDirect = (result: DirectResult, message: string): void => {
  const first = (result.content as ReadonlyArray<{ type: string; text?: string }> | undefined)?.[0]
  if (first?.type !== "text" || first.text !== `Echo: ${message}`) {
    fail(`the direct echo answered ${JSON.stringify(result).slice(0, 200)}`)
  }
}
const checkPlugboard = (out: unknown, message: string): void => {
  if (
    !ToolOutput.isToolOutput(out) ||
    out.isError === true ||
    ToolOutput.toText(out) !== `Echo: ${message}`
  ) {
    fail(`plugboard's echo answered ${JSON.stringify(out).slice(0, 200)}`)
  }
}

const firstCall = async (server: McpServerConfig): Promise<void> => {
  const { command, args } = server.transport as { command: string; args: ReadonlyArray<string> }
  const plugboard: number[] = []
  const direct: number[] = []
  const runPlugboard = async (i: number) => {
    const pool = new McpPool()
    try {
      const message = `${MESSAGE} ${i}`
      const started = performance.now()
      const out = await pool.call(server, "echo", { message })
      plugboard.push(performance.now() - started)
      checkPlugboard(out, message)
    } finally {
      await pool.close()
    }
  }
  const runDirect = async (i: number) => {
    const message = `${MESSAGE} ${i}`
    const started = performance.now()
    const client = await directClient(command, args)
    try {
      const result = await client.callTool({ name: "echo", arguments: { message } })
      direct.push(performance.now() - started)
      checkDirect(result, message)
    } finally {
      await client.close()
    }
  }
  for (let i = 0; i < FIRST_REPS; i++) {
    // ABBA: each side goes first half of the time.
    if (i % 2 === 0) {
      await runPlugboard(i)
      await runDirect(i)
    } else {
      await runDirect(i)
      await runPlugboard(i)
    }
  }
  console.log(`\n1. first call (spawn + initialize + tools/call echo), ${FIRST_REPS} per side, alternated`)
  console.log("                               median ms   p90 ms    min ms")
  const row = (label: string, v: ReadonlyArray<number>) =>
    console.log(
      `${label.padEnd(30)} ${pad(median(v).toFixed(1), 9)} ${pad(percentile(v, 90).toFixed(1), 8)} ${pad(Math.min(...v).toFixed(1), 9)}`
    )
  row("direct SDK Client", direct)
  row("plugboard McpPool.call", plugboard)
  console.log(
    `plugboard / direct: ${ratio(median(plugboard), median(direct))} (median), ${ratio(percentile(plugboard, 90), percentile(direct, 90))} (p90)`
  )
}

interface Side {
  readonly label: string
  readonly times: number[]
  cpuMicros: number
  /** Median µs of each round. */
  readonly rounds: number[]
}

/**
 * One round: a fresh direct client and a fresh pool (so a fresh child process per side), warmed
 * up, then `calls` per side in interleaved batches whose order rotates.
 */
const warmRound = async (
  server: McpServerConfig,
  cacheDir: string,
  sides: ReadonlyArray<Side>,
  calls: number
): Promise<void> => {
  const { command, args } = server.transport as { command: string; args: ReadonlyArray<string> }
  const pool = new McpPool()
  const client = await directClient(command, args)
  try {
    // The plugin as the host derives it: discovery (from the cache after the first round),
    // specs, core's toPlugins. Its handler and McpPool.call share the pool's one connection.
    const discovered = await discoverMcpServers([server], { pool, cacheDir })
    if (discovered[0]?.description === undefined) fail(`discovery failed: ${discovered[0]?.error}`)
    const derived = CatalogSource.toPlugins(mcpSpecs(discovered, { pool }))
    if (derived.errors.length > 0) fail(derived.errors.join("; "))
    const echoTool = derived.plugins[0]?.tools?.find((t) => t.name === "echo")
    if (echoTool === undefined) return fail("the derived plugin has no echo tool")
    const handler = echoTool.handler
    const context = makeRuntimeContext({
      state: GraphState.initial({ did: "did:key:bench", client: "portal" }),
      sessionId: "bench",
      did: "did:key:bench"
    })
    const callsBySide: ReadonlyArray<(message: string) => Promise<void>> = [
      async (message) =>
        checkDirect(await client.callTool({ name: "echo", arguments: { message } }), message),
      async (message) => checkPlugboard(await pool.call(server, "echo", { message }), message),
      async (message) => checkPlugboard(await handler({ message }, context), message),
      // Like for like with the handler, which can always be cancelled: a direct call given an
      // abort signal of its own (a fresh one per call, since the SDK never removes its listener).
      async (message) =>
        checkDirect(
          await client.callTool({ name: "echo", arguments: { message } }, undefined, {
            signal: new AbortController().signal
          }),
          message
        )
    ]
    for (const call of callsBySide) for (let i = 0; i < WARMUP_CALLS; i++) await call(`${MESSAGE} ${i}`)
    const roundTimes = sides.map(() => [] as number[])
    const batches = Math.max(1, Math.ceil(calls / BATCH))
    for (let b = 0; b < batches; b++) {
      for (let k = 0; k < sides.length; k++) {
        const s = (b + k) % sides.length
        const side = sides[s]!
        const call = callsBySide[s]!
        const cpu = process.cpuUsage()
        for (let i = 0; i < BATCH; i++) {
          const message = `${MESSAGE} ${b}.${i}`
          const started = performance.now()
          await call(message)
          const ms = performance.now() - started
          side.times.push(ms)
          roundTimes[s]!.push(ms)
        }
        const used = process.cpuUsage(cpu)
        side.cpuMicros += used.user + used.system
      }
    }
    sides.forEach((side, s) => {
      side.rounds.push(median(roundTimes[s]!) * 1000)
    })
  } finally {
    await client.close()
    await pool.close()
  }
}

const warmCall = async (server: McpServerConfig, cacheDir: string): Promise<void> => {
  const sides: Side[] = [
    "direct SDK client.callTool",
    "plugboard McpPool.call",
    "plugboard tool handler",
    "direct callTool + AbortSignal"
  ].map((label) => ({ label, times: [], cpuMicros: 0, rounds: [] }))
  const perRound = Math.max(BATCH, Math.ceil(WARM_CALLS / WARM_ROUNDS / BATCH) * BATCH)
  for (let r = 0; r < WARM_ROUNDS; r++) await warmRound(server, cacheDir, sides, perRound)
  const [direct, , handlerSide, directSignal] = sides as [Side, Side, Side, Side]
  console.log(
    `\n2. warm call (open connection, sequential echo calls): ${WARM_ROUNDS} rounds, each with fresh connections, ${WARMUP_CALLS} warm-up calls per side, then ${perRound} per side in interleaved batches of ${BATCH}; ${direct.times.length} calls per side in all`
  )
  console.log(
    "                               median µs   p90 µs   p99 µs  CPU µs/call  median vs direct  CPU vs direct"
  )
  const directCpu = direct.cpuMicros / direct.times.length
  for (const side of sides) {
    const cpu = side.cpuMicros / side.times.length
    console.log(
      `${side.label.padEnd(30)} ${pad((median(side.times) * 1000).toFixed(0), 9)} ${pad((percentile(side.times, 90) * 1000).toFixed(0), 8)} ${pad((percentile(side.times, 99) * 1000).toFixed(0), 8)} ${pad(cpu.toFixed(0), 12)} ${pad(ratio(median(side.times), median(direct.times)), 17)} ${pad(ratio(cpu, directCpu), 14)}`
    )
  }
  for (const side of sides.slice(1)) {
    console.log(
      `${side.label} / direct, median of each round: ${side.rounds.map((m, r) => ratio(m, direct.rounds[r]!)).join(", ")}`
    )
  }
  console.log(
    `plugboard tool handler / direct callTool + AbortSignal (both cancellable): median ${ratio(median(handlerSide.times), median(directSignal.times))}, CPU ${ratio(handlerSide.cpuMicros / handlerSide.times.length, directSignal.cpuMicros / directSignal.times.length)}`
  )
  console.log(
    "(CPU: this process only, i.e. the client side; every answer is checked inside the timed call, alike for each side; target ≤ 1.1x)"
  )
  // Two of plugboard's own steps per call, timed alone: mapping the answer onto a ToolOutput,
  // and the AbortController Connection makes per request (the SDK keeps a listener on whatever
  // signal it is given, so a turn's long-lived signal is never handed to it directly).
  const micro = (f: () => unknown): number => {
    const n = 100_000
    for (let i = 0; i < n / 10; i++) f()
    const started = performance.now()
    for (let i = 0; i < n; i++) f()
    return ((performance.now() - started) / n) * 1000
  }
  const answer = () => ({ content: [{ type: "text", text: `Echo: ${MESSAGE}` }] })
  const mapping = micro(() => toToolOutput(answer()))
  const controller = micro(() => {
    const c = new AbortController()
    const onAbort = () => {}
    c.signal.addEventListener("abort", onAbort, { once: true })
    c.signal.removeEventListener("abort", onAbort)
    return c
  })
  console.log(
    `of plugboard's steps, alone: toToolOutput of an echo answer ${mapping.toFixed(2)} µs; a per-request AbortController with one listener ${controller.toFixed(2)} µs`
  )
}

const boot = async (dir: string, wrapper: string, children: Children): Promise<void> => {
  const cacheDir = join(dir, "boot-cache")
  const mcpServers = {
    mcpServers: Object.fromEntries(
      Array.from({ length: SERVERS }, (_, i) => [
        `everything-${i}`,
        { command: process.execPath, args: [wrapper, "stdio"] }
      ])
    )
  }
  const build = async (others: ReadonlyArray<Plugin>, options: { idleMs?: number } = {}) => {
    const started = performance.now()
    const sources = await loadSources(others, { mcpServers, cwd: dir, cacheDir, ...options })
    const catalog = Catalog.make([...others, ...sources.plugins])
    const ms = performance.now() - started
    try {
      if (sources.errors.length > 0 || sources.warnings.length > 0) {
        fail(`boot said:\n${[...sources.errors, ...sources.warnings].slice(0, 5).join("\n")}`)
      }
      if (Either.isLeft(catalog))
        return fail(`Catalog.make failed: ${catalog.left.errors.slice(0, 5).join("; ")}`)
      const available = sources.plugins.filter((p) => p.unavailable === undefined).length
      if (sources.plugins.length !== SERVERS || available !== SERVERS) {
        fail(`expected ${SERVERS} available plugins, got ${available} of ${sources.plugins.length}`)
      }
      return { ms, catalog: catalog.right }
    } finally {
      await sources.close()
    }
  }

  console.log(`\n3. boot of ${SERVERS} MCP-derived plugins (server-everything under ${SERVERS} names)`)
  // Cold: every server is spawned, initialized and listed (the cache is one file per server
  // name). The host's default idle period (300 s) would keep all of them running after boot;
  // a short one here keeps the machine usable, and the peak of live children is reported.
  const spawnedBefore = children.pids().length
  let peak = 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, children.alive().length)
  }, 100)
  let cold: { ms: number }
  try {
    cold = await build([], { idleMs: COLD_IDLE_MS })
  } finally {
    clearInterval(sampler)
  }
  const coldSpawns = children.pids().length - spawnedBefore
  if (coldSpawns !== SERVERS) fail(`the cold boot spawned ${coldSpawns} servers, not ${SERVERS}`)
  const stragglers = await children.reap(10_000)
  if (stragglers.length > 0) fail(`${stragglers.length} servers outlived the cold boot's close`)
  console.log(
    `cold boot (empty cache): ${(cold.ms / 1000).toFixed(2)} s, ${coldSpawns} spawns, at most ${peak} children alive at once (sampled every 100 ms; idleMs ${COLD_IDLE_MS})`
  )

  const warm: number[] = []
  let catalog: Catalog.Catalog | undefined
  const spawnsBeforeWarm = children.pids().length
  for (let run = 0; run < WARM_BOOT_RUNS; run++) {
    const result = await build([])
    warm.push(result.ms)
    catalog = result.catalog
  }
  const warmSpawns = children.pids().length - spawnsBeforeWarm
  if (warmSpawns !== 0) fail(`the warm boot spawned ${warmSpawns} servers`)
  console.log(
    `warm boot (loadSources + Catalog.make from the cache), ${WARM_BOOT_RUNS} runs: median ${median(warm).toFixed(1)} ms, min ${Math.min(...warm).toFixed(1)} ms, max ${Math.max(...warm).toFixed(1)} ms (target < 1000 ms); spawns: ${warmSpawns}`
  )
  const entries = catalog!.entries
  const tools = entries.reduce((sum, e) => sum + e.tools.length, 0)
  console.log(`catalog: ${entries.length} plugins, ${tools} tools (every tool namespaced by its plugin)`)

  // The token cost of a turn with nothing loaded, exact o200k counts.
  const counter = await loadTiktokenCounter("o200k")
  const cost = (c: Catalog.Catalog, loaded: ReadonlyArray<string> = []) =>
    TokenBudget.turnCost({ catalog: c, loadedPlugins: loaded, basePrompt: BASE_PROMPT, counter }).total
  const make = (plugins: ReadonlyArray<Plugin>) => {
    const c = Catalog.make(plugins)
    return Either.isLeft(c) ? fail(`Catalog.make failed: ${c.left.errors.slice(0, 5).join("; ")}`) : c.right
  }
  const examples = make(examplePlugins)
  const withExamples = (await build(examplePlugins)).catalog
  if (children.pids().length !== spawnsBeforeWarm) fail("a boot from the cache spawned a server")
  const rows: Array<[string, number, number]> = [
    ["no other plugin", cost(make([])), cost(catalog!)],
    [`the ${examplePlugins.length} example plugins`, cost(examples), cost(withExamples)]
  ]
  console.log("turn with nothing loaded (o200k tokens)      without the MCP plugins   with them")
  for (const [label, without, withThem] of rows) {
    console.log(`${label.padEnd(44)} ${pad(without, 23)} ${pad(withThem, 11)}`)
    if (without !== withThem)
      fail(`a turn with nothing loaded costs ${withThem} tokens with the MCP plugins, ${without} without`)
  }
  console.log(
    `(loading one of them, everything-0, adds ${cost(catalog!, ["everything-0"]) - cost(catalog!)} tokens)`
  )
}

const main = async (dir: string, children: Children): Promise<void> => {
  const wrapper = join(dir, "server.mjs")
  writeFileSync(
    wrapper,
    [
      'import { appendFileSync } from "node:fs"',
      `appendFileSync(${JSON.stringify(children.log)}, \`\${process.pid}\\n\`)`,
      `await import(${JSON.stringify(pathToFileURL(everythingEntry).href)})`,
      ""
    ].join("\n")
  )
  const parsed = McpConfig.parse(
    { mcpServers: { everything: { command: process.execPath, args: [wrapper, "stdio"] } } },
    { baseDir: dir }
  )
  if (parsed.errors.length > 0) fail(parsed.errors.join("; "))
  const server = parsed.servers[0]!
  console.log(
    `server-everything ${versionOf(everythingPackage)} over stdio, @modelcontextprotocol/sdk ${sdkVersion}, Node ${process.version}`
  )
  await firstCall(server)
  await warmCall(server, join(dir, "warm-cache"))
  await boot(dir, wrapper, children)
}

export default async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-mcp-"))
  const children = new Children(join(dir, "spawned.log"))
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      main(dir, children),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`mcp bench: gave up after ${DEADLINE_MS / 1000} s`)),
          DEADLINE_MS
        )
      })
    ])
    const left = await children.reap(5_000)
    if (left.length > 0) fail(`${left.length} servers were still running at the end (killed)`)
    console.log(`\nservers started: ${children.pids().length}, still running: 0`)
  } finally {
    clearTimeout(timer)
    // Whatever happened, no child outlives the bench.
    await children.reap(0)
    rmSync(dir, { recursive: true, force: true })
  }
}
