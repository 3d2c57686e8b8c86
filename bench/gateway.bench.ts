/**
 * `pnpm bench gateway`: the MCP gateway (`plugboard mcp`, docs/mcp-gateway.md) against the real
 * `@modelcontextprotocol/server-everything` over stdio, compared in the same run with the same
 * server called directly by the official SDK's `Client` (the machine is noisy: only figures
 * measured side by side are compared).
 *
 * 1. Warm call: `tools/call echo` on open connections, sequential, in interleaved batches whose
 *    order rotates, over several rounds with fresh connections (how fast a call goes depends on
 *    how its child processes happen to be scheduled). The sides:
 *    - direct: SDK `Client` → server (stdio);
 *    - the floor: a pass-through MCP proxy on the same SDK (low-level `Server` forwarding to its own
 *      `Client`), in this process, reached in memory: the least any gateway costs, with no rule;
 *    - gateway in process: SDK `Client` → gateway (the SDK's in-memory transport) → the pool →
 *      server (stdio): everything the gateway does per call (the session's thread and list, core's
 *      plan and execute, the pool, the answer's translation both ways, the SDK server's checks),
 *      without a second transport hop; the target (≤ 1.15×) is checked against direct and
 *      against the floor;
 *    - gateway process, stdio: SDK `Client` → `plugboard mcp` (a child) → server: what a client
 *      that starts the gateway pays, one more process and one more stdio round trip;
 *    - direct over HTTP: the SDK `Client` → the same server in its own Streamable HTTP mode;
 *    - gateway process, HTTP: the gateway over Streamable HTTP on loopback, compared with that.
 *    Wall time per call, and the CPU this process spends per call (for the in-process side, the
 *    gateway's CPU too; for the process sides, the client's only).
 * 2. Sessions: 1,000 MCP sessions opened over Streamable HTTP (initialize, initialized,
 *    tools/list each) and left open, against a gateway in this process (heap and RSS after a full
 *    GC, per session) and against `plugboard mcp --http` as a process (its RSS, per session).
 *
 * Knobs: BENCH_GATEWAY_CALLS (warm calls per side, default 2000), BENCH_GATEWAY_SESSIONS (default 1000).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Catalog, CatalogSource } from "@plugboard/core"
import {
  discoverMcpServers,
  McpConfig,
  McpPool,
  type McpServerConfig,
  makeGateway,
  mcpSpecs
} from "@plugboard/mcp"
import { examplePlugins } from "../examples/catalog/index.js"
// The SDK v2 as the adapters package resolves it: the very module instances the gateway runs
// (its server side) and the pool uses (its client side).
import {
  Client,
  InMemoryTransport,
  StreamableHTTPClientTransport
} from "../packages/adapters/mcp/node_modules/@modelcontextprotocol/client/dist/index.mjs"
import { StdioClientTransport } from "../packages/adapters/mcp/node_modules/@modelcontextprotocol/client/dist/stdio.mjs"
import { Server } from "../packages/adapters/mcp/node_modules/@modelcontextprotocol/server/dist/index.mjs"

const CALLS = Number(process.env.BENCH_GATEWAY_CALLS ?? 2_000)
const SESSIONS = Number(process.env.BENCH_GATEWAY_SESSIONS ?? 1_000)
const ROUNDS = 4
const BATCH = 100
const WARMUP = 100
const MESSAGE = "hello from the gateway bench"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const fromAdapters = createRequire(join(here, "../packages/adapters/mcp/package.json"))
const everythingPackage = fromAdapters.resolve("@modelcontextprotocol/server-everything/package.json")
const everythingEntry = join(dirname(everythingPackage), "dist/index.js")
const version = (file: string) => (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}
const median = (values: ReadonlyArray<number>) => percentile(values, 50)
const pad = (s: string | number, n: number) => String(s).padStart(n)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
const fail = (message: string): never => {
  throw new Error(`gateway bench: ${message}`)
}

type Result = Awaited<ReturnType<Client["callTool"]>>
const check = (result: Result, message: string): void => {
  const first = (result.content as ReadonlyArray<{ type: string; text?: string }>)[0]
  if (first?.type !== "text" || first.text !== `Echo: ${message}`) {
    fail(`an echo answered ${JSON.stringify(result).slice(0, 200)}`)
  }
}

/** `plugboard mcp` as a child: its command line, from the repository's sources. */
const gatewayArgs = (...args: ReadonlyArray<string>) => [
  "--conditions=@plugboard/source",
  join(root, "scripts/plugboard.mjs"),
  "mcp",
  ...args
]

/** Starts `plugboard mcp --http 0 …` and resolves with its URL once it listens. */
const startHttpGateway = (cwd: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ url: string; child: ChildProcess }>((resolve, reject) => {
    const child = spawn(process.execPath, gatewayArgs(...args, "--http", "0"), {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: cwd, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      const match = /listening on (http:\/\/\S+\/mcp)/.exec(output)
      if (match !== null) resolve({ url: match[1]!, child })
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    child.once("exit", (code) => reject(new Error(`plugboard mcp exited with ${code}:\n${output}`)))
  })

/** server-everything in its Streamable HTTP mode on a port it is given (its PORT variable). */
const startEverythingHttp = (cwd: string) =>
  new Promise<{ url: string; child: ChildProcess }>((resolve, reject) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as AddressInfo).port
      probe.close(() => {
        const child = spawn(process.execPath, [everythingEntry, "streamableHttp"], {
          cwd,
          env: { PATH: process.env.PATH ?? "", HOME: cwd, PORT: String(port) },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        const onData = (chunk: Buffer) => {
          output += chunk.toString("utf8")
          if (/listening on port/.test(output)) resolve({ url: `http://127.0.0.1:${port}/mcp`, child })
        }
        child.stdout.on("data", onData)
        child.stderr.on("data", onData)
        child.once("exit", (code) => reject(new Error(`server-everything exited with ${code}:\n${output}`)))
      })
    })
  })

const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

interface Side {
  readonly label: string
  readonly times: number[]
  cpuMicros: number
  readonly rounds: number[]
}

/** The clients of one round, each on fresh connections (and fresh processes). */
const openRound = async (dir: string, server: McpServerConfig, cacheDir: string, serversFile: string) => {
  const closers: Array<() => Promise<unknown>> = []
  const t = server.transport as { command: string; args: ReadonlyArray<string> }
  const direct = new Client({ name: "bench-direct", version: "0" })
  await direct.connect(new StdioClientTransport({ command: t.command, args: [...t.args], stderr: "pipe" }))
  closers.push(() => direct.close())

  // The gateway in this process, over the catalog a host boots for this server.
  const pool = new McpPool()
  closers.push(() => pool.close())
  const discovered = await discoverMcpServers([server], { pool, cacheDir })
  const catalog = Catalog.unsafeMake(CatalogSource.toPlugins(mcpSpecs(discovered, { pool })).plugins)
  const gateway = makeGateway({ catalog, did: "did:key:bench" })
  closers.push(() => gateway.close())
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await gateway.connect(serverSide)
  const inProcess = new Client({ name: "bench-gateway", version: "0" })
  await inProcess.connect(clientSide)
  closers.push(() => inProcess.close())

  // The floor: a pass-through proxy on the same SDK, in this process, with no rule at all (its
  // own SDK client to a server process of its own). Any gateway pays at least this.
  const upstream = new Client({ name: "bench-floor-upstream", version: "0" })
  await upstream.connect(new StdioClientTransport({ command: t.command, args: [...t.args], stderr: "pipe" }))
  closers.push(() => upstream.close())
  const floor = new Server({ name: "floor", version: "0" }, { capabilities: { tools: {} } })
  floor.setRequestHandler("tools/list", () => upstream.listTools())
  floor.setRequestHandler("tools/call", (request, ctx) =>
    upstream.callTool(request.params, { signal: ctx.mcpReq.signal })
  )
  const [floorClientSide, floorServerSide] = InMemoryTransport.createLinkedPair()
  await floor.connect(floorServerSide)
  const viaFloor = new Client({ name: "bench-floor", version: "0" })
  await viaFloor.connect(floorClientSide)
  closers.push(() => viaFloor.close())

  const env = { MCP_CACHE_DIR: cacheDir, PLUGBOARD_DATA_DIR: join(dir, "data") }
  const viaStdio = new Client({ name: "bench-gateway-stdio", version: "0" })
  await viaStdio.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: gatewayArgs("--mcp", serversFile),
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
      stderr: "pipe"
    })
  )
  closers.push(() => viaStdio.close())

  // Over HTTP, the direct side is the same server in its own Streamable HTTP mode.
  const everythingHttp = await startEverythingHttp(dir)
  closers.push(() => stop(everythingHttp.child))
  const directHttp = new Client({ name: "bench-direct-http", version: "0" })
  await directHttp.connect(new StreamableHTTPClientTransport(new URL(everythingHttp.url)))
  closers.push(() => directHttp.close())

  const http = await startHttpGateway(dir, ["--mcp", serversFile], env)
  closers.push(() => stop(http.child))
  const viaHttp = new Client({ name: "bench-gateway-http", version: "0" })
  await viaHttp.connect(new StreamableHTTPClientTransport(new URL(http.url)))
  closers.push(() => viaHttp.close())

  for (const client of [inProcess, viaStdio, viaHttp]) {
    await client.callTool({ name: "load_capability", arguments: { names: ["everything"] } })
  }
  const clients = [direct, viaFloor, inProcess, viaStdio, directHttp, viaHttp]
  return {
    calls: clients.map(
      (client) => async (message: string) =>
        check(await client.callTool({ name: "echo", arguments: { message } }), message)
    ),
    close: async () => {
      for (const c of closers.reverse()) await c().catch(() => {})
    }
  }
}

const warmCalls = async (dir: string, server: McpServerConfig, cacheDir: string, serversFile: string) => {
  const sides: Side[] = [
    "direct SDK client.callTool",
    "pass-through proxy (floor)",
    "gateway in process (memory)",
    "gateway process over stdio",
    "direct SDK client over HTTP",
    "gateway process over HTTP"
  ].map((label) => ({ label, times: [], cpuMicros: 0, rounds: [] }))
  const perRound = Math.max(BATCH, Math.ceil(CALLS / ROUNDS / BATCH) * BATCH)
  for (let r = 0; r < ROUNDS; r++) {
    const round = await openRound(dir, server, cacheDir, serversFile)
    try {
      for (const call of round.calls) for (let i = 0; i < WARMUP; i++) await call(`${MESSAGE} ${i}`)
      const roundTimes = sides.map(() => [] as number[])
      for (let b = 0; b < perRound / BATCH; b++) {
        for (let k = 0; k < sides.length; k++) {
          // The order rotates across batches and rounds: no side always follows the same one.
          const s = (b + k + r) % sides.length
          const call = round.calls[s]!
          const cpu = process.cpuUsage()
          for (let i = 0; i < BATCH; i++) {
            const message = `${MESSAGE} ${b}.${i}`
            const started = performance.now()
            await call(message)
            const ms = performance.now() - started
            sides[s]!.times.push(ms)
            roundTimes[s]!.push(ms)
          }
          const used = process.cpuUsage(cpu)
          sides[s]!.cpuMicros += used.user + used.system
        }
      }
      sides.forEach((side, s) => {
        side.rounds.push(median(roundTimes[s]!) * 1000)
      })
    } finally {
      await round.close()
    }
  }
  const [direct, floor, gateway, , directHttp, gatewayHttp] = sides as [Side, Side, Side, Side, Side, Side]
  console.log(
    `\n1. warm call (tools/call echo on open connections): ${ROUNDS} rounds with fresh connections and processes, ${WARMUP} warm-up calls per side each, then ${perRound} per side in interleaved batches of ${BATCH}; ${direct.times.length} calls per side`
  )
  console.log(
    "                                median µs   p90 µs   p99 µs  CPU µs/call  median vs direct  CPU vs direct"
  )
  const directCpu = direct.cpuMicros / direct.times.length
  for (const side of sides) {
    const cpu = side.cpuMicros / side.times.length
    console.log(
      `${side.label.padEnd(31)} ${pad((median(side.times) * 1000).toFixed(0), 9)} ${pad((percentile(side.times, 90) * 1000).toFixed(0), 8)} ${pad((percentile(side.times, 99) * 1000).toFixed(0), 8)} ${pad(cpu.toFixed(0), 12)} ${pad(ratio(median(side.times), median(direct.times)), 17)} ${pad(ratio(cpu, directCpu), 14)}`
    )
  }
  for (const side of sides.slice(1)) {
    console.log(
      `${side.label} / direct, median of each round: ${side.rounds.map((m, r) => ratio(m, direct.rounds[r]!)).join(", ")}`
    )
  }
  console.log(
    `gateway in process / floor: median ${ratio(median(gateway.times), median(floor.times))}, CPU ${ratio(gateway.cpuMicros / gateway.times.length, floor.cpuMicros / floor.times.length)}; per round ${gateway.rounds.map((m, r) => ratio(m, floor.rounds[r]!)).join(", ")}`
  )
  console.log(
    `gateway process over HTTP / direct over HTTP (server-everything's own Streamable HTTP): median ${ratio(median(gatewayHttp.times), median(directHttp.times))}, client CPU ${ratio(gatewayHttp.cpuMicros / gatewayHttp.times.length, directHttp.cpuMicros / directHttp.times.length)}`
  )
  console.log(
    "(CPU: this process only: the client's, plus, for the in-process sides, the proxy's or the gateway's. Target: ≤ 1.15x)"
  )
}

/** Opens `n` sessions on `url` as a client does, and leaves them open. */
const openSessions = async (url: string, n: number): Promise<void> => {
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }
  const one = async (i: number) => {
    const init = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: `bench-${i}`, version: "0" }
        }
      })
    })
    const session = init.headers.get("mcp-session-id") ?? fail(`session ${i} got no Mcp-Session-Id`)
    await init.text()
    const withSession = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
    await (
      await fetch(url, {
        method: "POST",
        headers: withSession,
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
      })
    ).text()
    const listed = await (
      await fetch(url, {
        method: "POST",
        headers: withSession,
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })
      })
    ).text()
    if (!listed.includes("load_capability")) fail(`session ${i} listed ${listed.slice(0, 200)}`)
  }
  // A few at a time, as many clients connecting would.
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) await one(next++)
    })
  )
}

const gcNow = (() => {
  setFlagsFromString("--expose-gc")
  return runInNewContext("gc") as () => void
})()

const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) * 1024
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

const sessions = async (dir: string) => {
  console.log(
    `\n2. ${SESSIONS} MCP sessions over Streamable HTTP, each initialized and listed, left open (the examples' catalog, ${examplePlugins.length} plugins)`
  )
  // In this process: heap after a full GC.
  const gateway = makeGateway({ catalog: Catalog.unsafeMake(examplePlugins), did: "did:key:bench" })
  const handler = gateway.http()
  const server = createServer(handler.handle)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  try {
    await openSessions(url, 20)
    gcNow()
    const before = process.memoryUsage()
    await openSessions(url, SESSIONS)
    gcNow()
    gcNow()
    const after = process.memoryUsage()
    if (handler.sessionCount !== SESSIONS + 20)
      fail(`${handler.sessionCount} sessions open, not ${SESSIONS + 20}`)
    console.log(
      `gateway in this process: heap +${mib(after.heapUsed - before.heapUsed)} (${kib((after.heapUsed - before.heapUsed) / SESSIONS)} per session), RSS +${mib(after.rss - before.rss)} (${kib((after.rss - before.rss) / SESSIONS)} per session), after a full GC`
    )
  } finally {
    await gateway.close()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  // As a process: what an operator sees.
  const child = await startHttpGateway(dir, [], { PLUGBOARD_DATA_DIR: join(dir, "data") })
  try {
    await openSessions(child.url, 20)
    const before = rssOf(child.child.pid!)
    await openSessions(child.url, SESSIONS)
    const after = rssOf(child.child.pid!)
    console.log(
      `plugboard mcp --http as a process: RSS ${mib(before)} with 20 sessions, ${mib(after)} with ${SESSIONS + 20}: +${mib(after - before)} (${kib((after - before) / SESSIONS)} per session; no GC forced there)`
    )
  } finally {
    await stop(child.child)
  }
}

export default async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-gateway-"))
  try {
    const config = {
      mcpServers: { everything: { command: process.execPath, args: [everythingEntry, "stdio"] } }
    }
    const serversFile = join(dir, "servers.json")
    writeFileSync(serversFile, JSON.stringify(config))
    const parsed = McpConfig.parse(config, { baseDir: dir })
    if (parsed.errors.length > 0) fail(parsed.errors.join("; "))
    const cacheDir = join(dir, "mcp-cache")
    console.log(
      `server-everything ${version(everythingPackage)} over stdio, @modelcontextprotocol/client and server ${version(join(root, "packages/adapters/mcp/node_modules/@modelcontextprotocol/client/package.json"))}, Node ${process.version}`
    )
    await warmCalls(dir, parsed.servers[0]!, cacheDir, serversFile)
    await sessions(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
