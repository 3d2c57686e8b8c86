/**
 * `pnpm bench durability`: what plugboard's durable state costs a streamed turn, by part. Five
 * plugboard servers in this one process, the same as `pnpm bench server`'s (the examples'
 * catalog, embedded defaults, UCAN auth, credits off, the baseline's script as the model), each
 * with one part of its state kept in memory instead of on disk:
 *
 * - `default`: everything durable (runs in `runs.sqlite`, sessions and checkpoints in the user's
 *   SQLite file);
 * - `runs in memory`: core's in-memory run store (`RunStore.layerMemory`);
 * - `sessions in memory`: core's in-memory session store;
 * - `checkpoints in memory`: LangGraph's `MemorySaver` per user;
 * - `all in memory`: the three together.
 *
 * One client in this process drives them over loopback, one streamed turn at a time, on a fresh
 * session per turn (as `pnpm bench server`); rounds alternate the servers, and each server's
 * cost is the process's CPU time per turn (client included: it is the same for every server).
 * A part's cost is the median over rounds of (default − that server) in the same round, which a
 * shared machine's drift distorts far less than two separate medians; each round starts with the
 * next server, so that each takes every place in the order equally often. Knobs: BENCH_ROUNDS
 * (default 10, a multiple of the five servers), BENCH_TURNS per round per server (default 150).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { RunStore, SessionStore } from "@plugboard/core"
import { createOracleApp, quietLogger } from "@plugboard/host-node"
import { MemorySaver } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import { examplePlugins } from "../examples/catalog/index.js"
import { respond } from "./server/script.js"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10)
const TURNS = Number(process.env.BENCH_TURNS ?? 150)
const WARMUP = 150
const BODY = JSON.stringify({ message: "What's the weather in Berlin?", stream: true })

const memorySavers = () => {
  const savers = new Map<string, MemorySaver>()
  return {
    checkpointerForUser: (did: string) => {
      let saver = savers.get(did)
      if (saver === undefined) {
        saver = new MemorySaver()
        savers.set(did, saver)
      }
      return saver
    }
  }
}

const VARIANTS = {
  default: () => ({}),
  "runs in memory": () => ({ runs: RunStore.layerMemory }),
  "sessions in memory": () => ({ sessions: SessionStore.layerMemory }),
  "checkpoints in memory": () => ({ hooks: memorySavers() }),
  "all in memory": () => ({
    runs: RunStore.layerMemory,
    sessions: SessionStore.layerMemory,
    hooks: memorySavers()
  })
} as const

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export default async (): Promise<void> => {
  const agent = new Agent({ keepAlive: true })
  const dirs: Array<string> = []
  const servers = await Promise.all(
    Object.entries(VARIANTS).map(async ([name, options]) => {
      const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-durability-"))
      dirs.push(dir)
      const app = await createOracleApp({
        plugins: [...examplePlugins],
        logger: quietLogger,
        model: new ScriptedChatModel({ respond, model: "bench-script", maxRecordedCalls: 100 }),
        env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000000000", THROTTLE_TTL_MS: "60000" },
        ...options()
      })
      const { url } = await app.listen(0, "127.0.0.1")
      const token = await mintInvocation({
        issuer: await generateSigner(),
        audience: app.oracleDid,
        ttlSeconds: 900
      })
      return { name, app, url, token, cpu: [] as Array<number> }
    })
  )
  let sessions = 0
  const turn = (server: (typeof servers)[number]) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        new URL(`/messages/durability-${++sessions}`, server.url),
        {
          method: "POST",
          agent,
          headers: {
            authorization: `Bearer ${server.token}`,
            "x-auth-type": "ucan",
            "content-type": "application/json"
          }
        },
        (res) => {
          let text = ""
          res.setEncoding("utf8")
          res.on("data", (chunk: string) => {
            text += chunk
          })
          res.on("end", () =>
            res.statusCode === 200 && text.includes('"status":"finished"') && text.includes("Berlin")
              ? resolve()
              : reject(new Error(`${server.name}: turn failed: ${res.statusCode} ${text.slice(0, 300)}`))
          )
        }
      )
      req.on("error", reject)
      req.end(BODY)
    })
  try {
    console.log(
      `${servers.length} servers in one process, one client, streamed turns on fresh sessions; ${ROUNDS} rounds × ${TURNS} turns per server, alternating; load average ${loadavg()[0]!.toFixed(2)}`
    )
    for (const server of servers) for (let i = 0; i < WARMUP; i++) await turn(server)
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with the next server: the one measured right after another carries some
      // of its garbage (measured: about 0.3 ms per turn), so every server takes every place in turn.
      for (let k = 0; k < servers.length; k++) {
        const server = servers[(round + k) % servers.length]!
        const started = process.cpuUsage()
        for (let i = 0; i < TURNS; i++) await turn(server)
        const used = process.cpuUsage(started)
        server.cpu.push((used.user + used.system) / 1000 / TURNS)
      }
    }
    const base = servers[0]!
    console.log("server                   CPU ms/turn (median)   saved against default (median of rounds)")
    for (const server of servers) {
      const saved = base.cpu.map((c, i) => c - server.cpu[i]!)
      console.log(
        `${server.name.padEnd(24)} ${median(server.cpu).toFixed(2).padStart(8)}               ${server === base ? "       -" : median(saved).toFixed(2).padStart(8)}`
      )
    }
  } finally {
    for (const server of servers) await server.app.close(5_000)
    agent.destroy()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  }
}
