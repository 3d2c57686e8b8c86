/**
 * Child process of `pnpm bench hosts`: one plugboard host as `plugboard serve` runs it (the
 * examples' catalog, the scripted router model), on the embedded default or on the shared engines
 * the orchestrator passes in its environment (`DATABASE_URL`, `REDIS_URL`, ...). Listens on a
 * random loopback port, reports `ready`, then answers `begin`/`end` (its CPU time and the
 * streamed turns it finished in between) and `close`. Speaks `bench/server/ipc.ts`.
 */
import { createOracleApp, quietLogger } from "@plugboard/host-node"
import { examplePlugins } from "../../examples/catalog/index.js"
import { type ServerWindow, serve } from "../server/ipc.js"

const dataDir = process.env.BENCH_DATA_DIR
if (dataDir === undefined) throw new Error("BENCH_DATA_DIR is not set")
const engines = JSON.parse(process.env.BENCH_ENGINES ?? "{}") as Record<string, string>

let recording = false
let turns = 0
let cpu = process.cpuUsage()

const app = await createOracleApp({
  plugins: [...examplePlugins],
  logger: quietLogger,
  env: {
    PLUGBOARD_DATA_DIR: dataDir,
    // One oracle for every host: a user's token is good on each.
    ORACLE_KEY_FILE: process.env.BENCH_ORACLE_KEY ?? `${dataDir}/oracle.key`,
    THROTTLE_LIMIT: "1000000000",
    THROTTLE_TTL_MS: "60000",
    ...engines
  },
  hooks: {
    onTimings: (_t, r) => {
      if (recording && r.method === "POST" && r.path.startsWith("/messages/")) turns++
    }
  }
})
const { url } = await app.listen(0, "127.0.0.1")

serve(async (message) => {
  switch (message.type) {
    case "begin":
      recording = true
      turns = 0
      cpu = process.cpuUsage()
      return {}
    case "end": {
      const used = process.cpuUsage(cpu)
      recording = false
      const window: ServerWindow = { cpuMs: (used.user + used.system) / 1000, turns, stageSums: {} }
      return window
    }
    case "close":
      await app.close(5_000)
      setImmediate(() => process.exit(0))
      return {}
    default:
      throw new Error(`unknown message ${message.type}`)
  }
})
process.send?.({ type: "ready", url, oracleDid: app.oracleDid })
