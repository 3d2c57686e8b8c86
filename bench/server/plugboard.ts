/**
 * Child process of `pnpm bench server` and `pnpm bench hosts`: the plugboard server as
 * `plugboard serve` runs it by default (the examples' catalog, embedded defaults in the data dir
 * given by the orchestrator), with the rate limit raised out of the way. Its model replays the
 * baseline's script (`script.ts`), so both servers run the same stand-in model;
 * `BENCH_PLUGBOARD_MODEL=router` runs the scripted router instead, as `plugboard serve` does (it
 * ranks the catalog to choose its steps and gives a reasoning per call: more model work per turn);
 * `BENCH_ENGINES` (JSON: `DATABASE_URL`, `REDIS_URL`, ...) puts it on shared engines, and
 * `BENCH_ORACLE_KEY` gives every host one oracle (a user's token is good on each). Listens on a
 * random loopback port, reports `ready`, then answers `begin`/`end` (CPU time and `onTimings`
 * stage sums of the streamed turns in between) and `close`.
 */
import { createOracleApp, quietLogger, STAGES, type StageTimings } from "@plugboard/host-node"
import { ScriptedChatModel } from "@plugboard/models"
import { examplePlugins } from "../../examples/catalog/index.js"
import { type ServerWindow, serve } from "./ipc.js"
import { respond } from "./script.js"

const dataDir = process.env.BENCH_DATA_DIR
if (dataDir === undefined) throw new Error("BENCH_DATA_DIR is not set")

let recording = false
let turns = 0
let sums: Record<string, number> = {}
let cpu = process.cpuUsage()

const modelChoice = process.env.BENCH_PLUGBOARD_MODEL ?? "script"
if (modelChoice !== "script" && modelChoice !== "router")
  throw new Error(`BENCH_PLUGBOARD_MODEL=${modelChoice}: script or router`)

const app = await createOracleApp({
  plugins: [...examplePlugins],
  ...(modelChoice === "script"
    ? { model: new ScriptedChatModel({ respond, model: "bench-script", maxRecordedCalls: 100 }) }
    : {}),
  logger: quietLogger,
  env: {
    PLUGBOARD_DATA_DIR: dataDir,
    ...(process.env.BENCH_ORACLE_KEY === undefined ? {} : { ORACLE_KEY_FILE: process.env.BENCH_ORACLE_KEY }),
    THROTTLE_LIMIT: "1000000000",
    THROTTLE_TTL_MS: "60000",
    ...(JSON.parse(process.env.BENCH_ENGINES ?? "{}") as Record<string, string>)
  },
  hooks: {
    onTimings: (t: StageTimings, r) => {
      if (!recording || r.method !== "POST" || !r.path.startsWith("/messages/")) return
      turns++
      for (const stage of STAGES) sums[stage] = (sums[stage] ?? 0) + (t[stage] ?? 0)
    }
  }
})
const { url } = await app.listen(0, "127.0.0.1")

serve(async (message) => {
  switch (message.type) {
    case "begin":
      recording = true
      turns = 0
      sums = {}
      cpu = process.cpuUsage()
      return {}
    case "end": {
      const used = process.cpuUsage(cpu)
      recording = false
      const window: ServerWindow = { cpuMs: (used.user + used.system) / 1000, turns, stageSums: sums }
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
