/**
 * The oracle server over loopback with the scripted router model and the examples' catalog (55
 * plugins, what `plugboard serve` runs by default): streamed turns per second and
 * per-turn latency (request sent → `done` received) at 1, 16 and 64 concurrent clients, and the
 * server's time per turn split by pipeline stage (from its `onTimings` probe: auth, limit,
 * checkpoint load, agent, checkpoint save).
 *
 * The answer streams as `message` chunks (the scripted router splits it in three); the same turn
 * as a JSON answer (no stream) at 16 clients shows what streaming costs.
 *
 * Each turn is "What's the weather in Berlin?" on a fresh session (created on first contact), so
 * every turn does the same work: three model calls (load_capability, get_current_weather,
 * answer), two tool calls, per-user SQLite checkpoints. Each client is its own user with its own
 * token. Clients and server share this process (and its one event loop), so figures include the
 * client's own parsing; they are an upper bound on the server's cost.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { generateSigner, mintInvocation } from "@plugboard/adapters/ucan"
import { createOracleApp, quietLogger, STAGES, type StageTimings } from "@plugboard/host-node"
import { examplePlugins } from "../examples/catalog/index.js"

const LEVELS = [1, 16, 64] as const
const WARMUP_TURNS = 20
// BENCH_RUN_MS shortens or lengthens each level (default 6 s: three levels stay under ~40 s).
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? 6_000)
const MESSAGE = "What's the weather in Berlin?"

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const fmt = (ms: number) => ms.toFixed(1).padStart(7)

export default async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-server-"))
  const collected: Array<StageTimings> = []
  let recording = false
  const app = await createOracleApp({
    plugins: [...examplePlugins],
    logger: quietLogger,
    env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000000000", THROTTLE_TTL_MS: "60000" },
    hooks: {
      onTimings: (t, r) => {
        if (recording && r.method === "POST" && r.path.startsWith("/messages/")) collected.push({ ...t })
      }
    }
  })
  const { url } = await app.listen(0, "127.0.0.1")
  let sessionCounter = 0

  let chunks = 0
  const makeClient = async (streamed = true) => {
    const signer = await generateSigner()
    const headers = {
      authorization: `Bearer ${await mintInvocation({ issuer: signer, audience: app.oracleDid, ttlSeconds: 900 })}`,
      "x-auth-type": "ucan",
      "content-type": "application/json"
    }
    return async (): Promise<number> => {
      const started = performance.now()
      const response = await fetch(`${url}/messages/bench-${++sessionCounter}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ message: MESSAGE, stream: streamed })
      })
      const text = await response.text()
      if (!streamed) {
        if (response.status !== 200 || !text.includes("Berlin")) {
          throw new Error(`turn failed: ${response.status} ${text.slice(0, 300)}`)
        }
        return performance.now() - started
      }
      if (!text.endsWith("event: done\ndata: {}\n\n") || text.includes("event: error")) {
        throw new Error(`turn failed: ${response.status} ${text.slice(0, 300)}`)
      }
      chunks += text.split("event: message\n").length - 1
      return performance.now() - started
    }
  }

  try {
    console.log(
      `streamed turns, scripted router, loopback, ${RUN_MS / 1000} s per level (same process as the clients)`
    )
    // CPU ms per turn (this process: server and clients) is the figure least disturbed by other load.
    const stageRows: Array<[number, Array<StageTimings>]> = []
    const measure = async (level: number, streamed: boolean, label: string) => {
      const clients = await Promise.all(Array.from({ length: level }, () => makeClient(streamed)))
      // Warm-up: JIT, SQLite files, caches.
      await Promise.all(
        clients.map(async (turn) => {
          for (let i = 0; i < Math.ceil(WARMUP_TURNS / level); i++) await turn()
        })
      )
      collected.length = 0
      chunks = 0
      recording = true
      const latencies: Array<number> = []
      const deadline = performance.now() + RUN_MS
      const cpu = process.cpuUsage()
      const started = performance.now()
      await Promise.all(
        clients.map(async (turn) => {
          while (performance.now() < deadline) latencies.push(await turn())
        })
      )
      const elapsed = performance.now() - started
      const used = process.cpuUsage(cpu)
      const cpuPerTurn = (used.user + used.system) / 1000 / Math.max(1, latencies.length)
      recording = false
      if (streamed) stageRows.push([level, [...collected]])
      latencies.sort((a, b) => a - b)
      console.log(
        `${label.padStart(7)} ${((latencies.length / elapsed) * 1000).toFixed(1).padStart(9)} ${fmt(percentile(latencies, 50))}  ${fmt(percentile(latencies, 99))} ${String(latencies.length).padStart(7)} ${cpuPerTurn.toFixed(1).padStart(11)}${
          streamed ? `  ${(chunks / Math.max(1, latencies.length)).toFixed(1).padStart(6)}` : ""
        }`
      )
    }
    console.log("clients   turns/s    p50 ms   p99 ms   turns  CPU ms/turn  message events/turn")
    for (const level of LEVELS) await measure(level, true, String(level))
    // The same turn without `stream` (JSON answer, the agent run to its end): what streaming costs.
    console.log("\nthe same turn as JSON (no stream)")
    await measure(16, false, "16")
    console.log("\nserver time per streamed turn by stage, mean ms (total = request received → turn saved)")
    console.log(`clients ${STAGES.map((s) => s.padStart(8)).join("")}`)
    for (const [level, rows] of stageRows) {
      const mean = (stage: keyof StageTimings) =>
        rows.reduce((sum, r) => sum + (r[stage] ?? 0), 0) / Math.max(1, rows.length)
      console.log(
        `${String(level).padStart(7)} ${STAGES.map((s) => mean(s).toFixed(2).padStart(8)).join("")}`
      )
    }
  } finally {
    await app.close(5_000)
    rmSync(dir, { recursive: true, force: true })
  }
}
