/**
 * `pnpm bench server`: plugboard's server against a bare LangGraph server, same machine, same
 * run, same load client. Four child processes on loopback (random ports):
 *
 * - plugboard (`server/plugboard.ts`): `createOracleApp` as `plugboard serve` runs it by default:
 *   the examples' catalog (55 plugins), embedded defaults (SQLite in a temp data dir, per-user
 *   checkpoint files), UCAN authentication on every request, the rate limit on (raised out of the
 *   way: THROTTLE_LIMIT 10^9), credits off; its model replays the baseline's script
 *   (`server/script.ts`), so both sides run the same stand-in model
 *   (`BENCH_PLUGBOARD_MODEL=router`: the scripted router `plugboard serve` runs, which does more
 *   model work per turn);
 * - the baseline (`server/bare-langgraph.ts`): `node:http`, a `StateGraph` over
 *   `MessagesAnnotation` (the agent benchmark's bare graph), the same scripted model replaying the
 *   same three model steps and two tool calls, LangChain's `SqliteSaver` on one file, SSE out; no
 *   authentication, no rate limit, no session store or run log;
 * - the floor (`server/floor.ts`): the baseline plus only what issue #16, the wire contract and
 *   DESIGN.md require of any server (UCAN auth, the rate limit, a file per user, a session row
 *   and its activity time, the run log with each frame committed before it is sent, the SDK's
 *   frames and headers, seed 004's state, one turn per session), each the cheapest way: how close
 *   to the baseline the requirements allow, so plugboard's headroom is its distance to the floor
 *   (BENCH_FLOOR=0 leaves it out);
 * - one load client (`server/load-client.ts`), a process of its own.
 *
 * Each turn is "What's the weather in Berlin?" on a fresh session (created on first contact by
 * plugboard and the floor), or, with BENCH_TURNS_PER_SESSION=N, in conversations of N turns (each
 * client keeps a session per server for N turns, so a turn's thread holds up to N − 1 earlier
 * turns: the baseline and the floor write the whole thread at each checkpoint, plugboard its
 * new messages), streamed: load_capability → get_current_weather → the answer in three `message`
 * chunks, then `done`. At 1 and 16 concurrent clients (each its own user on plugboard and the
 * floor, which share one oracle key, so each client's token is good on both), rounds
 * alternate plugboard / floor / baseline, each round after a few untimed turns. Reported per
 * side: streamed turns/s (all rounds pooled), latency p50/p99 (request sent → `done` received),
 * the server's CPU ms per turn (steadier than wall time on a busy machine), the client's; then
 * the ratio plugboard / baseline of turns/s (pooled, and the median of the per-round-pair ratios;
 * target ≥ 0.9×), and plugboard's time per turn by pipeline stage (its `onTimings` probe).
 *
 * Knobs: BENCH_RUN_MS, measured time per side per level (default 8 s, in BENCH_ROUNDS rounds,
 * default 4); BENCH_WARMUP_TURNS (default 400); BENCH_PLUGBOARD_MODEL (`script`, the default, or
 * `router`); BENCH_SCRIPT (`tools`, the default, or `answer`: the answer at the first model call,
 * one step and no tool call, which leaves what each server costs around the agent);
 * BENCH_TURNS_PER_SESSION (default 1); BENCH_BASELINE_DURABILITY (default `exit`,
 * plugboard's: one checkpoint write per turn; `async` is LangGraph's default, a checkpoint per
 * step); BENCH_FLOOR=0 (no floor); BENCH_CPU_PROF=1 writes V8 CPU profiles of the servers into
 * .tmp/bench-server-prof/. The whole benchmark fails (non-zero exit, children killed, temp dirs
 * removed) after BENCH_TIMEOUT_MS (default 60 s + 8 × BENCH_RUN_MS).
 */
import type { ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { STAGES } from "@plugboard/host-node"
import { loadOrCreateSigner } from "@plugboard/ucan"
import { type client, type ServerWindow, startChild } from "./server/ipc.js"
import type { RoundResult } from "./server/load-client.js"
import { SCRIPT } from "./server/script.js"

const LEVELS = [1, 16] as const
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? 8_000)
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4))
const ROUND_MS = RUN_MS / ROUNDS
/**
 * Untimed turns before a side's first round at a level, and before each later round (all clients).
 * A server is measured at its steady state: plugboard runs far more code per turn than the bare
 * server, and its CPU per turn was still falling after 150 turns (measured 2026-11-25, one client:
 * 12.0 ms in the 2 s after 150 turns, 7.6–8.5 ms once about 1,000 had run).
 */
const FIRST_WARMUP_TURNS = Number(process.env.BENCH_WARMUP_TURNS ?? 400)
const WARMUP_TURNS = 4
/** Turns per session (read by the load client too): 1, the default, is a fresh session per turn. */
const TURNS_PER_SESSION = Math.max(1, Number(process.env.BENCH_TURNS_PER_SESSION ?? 1))
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 60_000 + 8 * RUN_MS)
const TARGET = 0.9
/** Whether the floor (`server/floor.ts`) runs as a third side; BENCH_FLOOR=0 leaves it out. */
const FLOOR = process.env.BENCH_FLOOR !== "0"

const here = dirname(fileURLToPath(import.meta.url))
const repo = join(here, "..")

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
const num = (x: number, digits = 1, width = 8) => x.toFixed(digits).padStart(width)

interface Side {
  readonly name: "plugboard" | "floor" | "baseline"
  readonly url: string
  readonly auth: boolean
  readonly call: ReturnType<typeof client>
}

interface Measured {
  readonly client: RoundResult
  readonly server: ServerWindow
}

export default async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-server-"))
  const children: Array<ChildProcess> = []
  const profDir = process.env.BENCH_CPU_PROF ? join(repo, ".tmp", "bench-server-prof") : undefined
  if (profDir !== undefined) mkdirSync(profDir, { recursive: true })

  const start = (file: string, env: Record<string, string>, profile: boolean) => {
    const started = startChild(join(here, "server", file), {
      cwd: repo,
      env,
      nodeArgs: profile && profDir !== undefined ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : []
    })
    children.push(started.child)
    return started
  }

  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bench server: over ${TIMEOUT_MS} ms, aborted`)), TIMEOUT_MS)
  })

  const run = async () => {
    mkdirSync(join(dir, "plugboard"))
    mkdirSync(join(dir, "baseline"))
    mkdirSync(join(dir, "floor"))
    const bootStarted = performance.now()
    const oracleKey = join(dir, "oracle.key")
    await loadOrCreateSigner(oracleKey)
    const pb = start(
      "plugboard.ts",
      { BENCH_DATA_DIR: join(dir, "plugboard"), BENCH_ORACLE_KEY: oracleKey },
      true
    )
    const fl = FLOOR
      ? start("floor.ts", { BENCH_DATA_DIR: join(dir, "floor"), BENCH_ORACLE_KEY: oracleKey }, true)
      : undefined
    const bl = start("bare-langgraph.ts", { BENCH_DATA_DIR: join(dir, "baseline") }, true)
    const lc = start("load-client.ts", {}, false)
    const [pbReady, blReady, flReady] = await Promise.all([pb.ready, bl.ready, fl?.ready, lc.ready])
    if (flReady !== undefined && flReady.oracleDid !== pbReady.oracleDid)
      throw new Error(`the floor's oracle (${flReady.oracleDid}) is not plugboard's (${pbReady.oracleDid})`)
    await lc.call({ type: "setup", oracleDid: pbReady.oracleDid, clients: Math.max(...LEVELS) })
    const sides: ReadonlyArray<Side> = [
      { name: "plugboard", url: pbReady.url, auth: true, call: pb.call },
      ...(fl === undefined || flReady === undefined
        ? []
        : [{ name: "floor", url: flReady.url, auth: true, call: fl.call } as const]),
      { name: "baseline", url: blReady.url, auth: false, call: bl.call }
    ]
    console.log(
      `streamed turns over loopback, one load client process, ${TURNS_PER_SESSION === 1 ? "a fresh session per turn" : `conversations of ${TURNS_PER_SESSION} turns`}; servers up in ${((performance.now() - bootStarted) / 1000).toFixed(1)} s; load average ${loadavg()[0]!.toFixed(2)}`
    )
    console.log(
      `rounds alternate ${sides.map((x) => x.name).join(" / ")}, ${ROUNDS} × ${(ROUND_MS / 1000).toFixed(1)} s per side per level (BENCH_RUN_MS=${RUN_MS})`
    )
    console.log(
      SCRIPT === "answer"
        ? "script: the answer at the first model call (BENCH_SCRIPT=answer: one model step, no tool call)"
        : "script: load_capability → get_current_weather → the answer (three model steps, two tool calls)"
    )
    console.log(
      `plugboard: examples' catalog, ${process.env.BENCH_PLUGBOARD_MODEL === "router" ? "scripted router" : "the baseline's script"}, embedded defaults, UCAN auth + rate limit, credits off`
    )
    if (FLOOR)
      console.log(
        "floor:     the baseline + what #16 and DESIGN.md require of any server (UCAN auth, rate limit, a file per user, session row, run log committed before each frame is sent, SDK frames, seed-004 state, session lock) (server/floor.ts)"
      )
    console.log(
      `baseline:  bare LangGraph (node:http, StateGraph, SqliteSaver on one file, durability ${process.env.BENCH_BASELINE_DURABILITY ?? "exit"}), no auth\n`
    )

    const results = new Map<string, Array<Measured>>()
    for (const level of LEVELS) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const side of sides) {
          const warmup = Math.ceil((round === 0 ? FIRST_WARMUP_TURNS : WARMUP_TURNS) / level)
          // Untimed turns (a 0 ms round) first, then the server's window around the timed round only.
          await lc.call({ type: "round", url: side.url, auth: side.auth, level, ms: 0, warmup })
          await side.call({ type: "begin" })
          const clientResult = await lc.call<RoundResult>({
            type: "round",
            url: side.url,
            auth: side.auth,
            level,
            ms: ROUND_MS,
            warmup: 0
          })
          const server = await side.call<ServerWindow>({ type: "end" })
          const key = `${side.name}/${level}`
          results.set(key, [...(results.get(key) ?? []), { client: clientResult, server }])
        }
      }
    }

    console.log(
      "clients side        turns/s   p50 ms   p99 ms   turns  server CPU ms/turn  client CPU ms/turn  SSE events/turn"
    )
    const summary: Array<string> = []
    const floorSummary: Array<string> = []
    for (const level of LEVELS) {
      const stats = (name: string) => {
        const rows = results.get(`${name}/${level}`) ?? []
        const turns = rows.reduce((s, r) => s + r.client.turns, 0)
        const elapsed = rows.reduce((s, r) => s + r.client.elapsedMs, 0)
        const latencies = rows.flatMap((r) => r.client.latencies).sort((a, b) => a - b)
        const serverTurns = rows.reduce((s, r) => s + r.server.turns, 0)
        const cpu = rows.reduce((s, r) => s + r.server.cpuMs, 0) / Math.max(1, serverTurns)
        const clientCpu = rows.reduce((s, r) => s + r.client.clientCpuMs, 0) / Math.max(1, turns)
        const events =
          rows.reduce((s, r) => s + r.client.eventsPerTurn * r.client.turns, 0) / Math.max(1, turns)
        const perRound = rows.map((r) => (r.client.turns / r.client.elapsedMs) * 1000)
        return { rows, turns, rate: (turns / elapsed) * 1000, latencies, cpu, clientCpu, events, perRound }
      }
      const a = stats("plugboard")
      const f = stats("floor")
      const b = stats("baseline")
      for (const [name, s] of [
        ["plugboard", a],
        ...(FLOOR ? [["floor", f] as const] : []),
        ["baseline", b]
      ] as const) {
        console.log(
          `${String(level).padStart(7)} ${name.padEnd(10)} ${num(s.rate)} ${num(percentile(s.latencies, 50))} ${num(percentile(s.latencies, 99))} ${String(s.turns).padStart(7)} ${num(s.cpu, 2, 19)} ${num(s.clientCpu, 2, 19)} ${num(s.events, 1, 16)}`
        )
      }
      const ratios = a.perRound.map((r, i) => r / b.perRound[i]!)
      const pooled = a.rate / b.rate
      const line = `${String(level).padStart(7)} ratio plugboard/baseline: ${pooled.toFixed(2)}× pooled, ${median(ratios).toFixed(2)}× median of rounds (${ratios.map((r) => r.toFixed(2)).join(", ")}); CPU per turn ${(b.cpu / a.cpu).toFixed(2)}× (baseline/plugboard)`
      console.log(line)
      if (FLOOR) {
        const floorRatios = f.perRound.map((r, i) => r / b.perRound[i]!)
        const toFloor = a.perRound.map((r, i) => r / f.perRound[i]!)
        console.log(
          `${String(level).padStart(7)} ratio floor/baseline: ${median(floorRatios).toFixed(2)}× median of rounds (${floorRatios.map((r) => r.toFixed(2)).join(", ")}); CPU per turn ${(b.cpu / f.cpu).toFixed(2)}×; plugboard/floor ${median(toFloor).toFixed(2)}×`
        )
        floorSummary.push(`${level} client${level === 1 ? "" : "s"}: ${median(floorRatios).toFixed(2)}×`)
      }
      summary.push(
        `${level} client${level === 1 ? "" : "s"}: ${median(ratios).toFixed(2)}× ${median(ratios) >= TARGET ? "(met)" : "(NOT met)"}`
      )
    }
    console.log(`\ntarget plugboard ≥ ${TARGET}× baseline turns/s (median of rounds): ${summary.join(", ")}`)
    if (FLOOR) console.log(`the floor reaches (median of rounds): ${floorSummary.join(", ")}`)

    console.log(
      "\nserver time per streamed turn, mean ms (plugboard by stage from onTimings; total = request received → turn saved)"
    )
    console.log(`clients side      ${STAGES.map((s) => s.padStart(8)).join("")}`)
    for (const level of LEVELS) {
      for (const { name } of sides) {
        const rows = results.get(`${name}/${level}`) ?? []
        const n = Math.max(
          1,
          rows.reduce((s, r) => s + r.server.turns, 0)
        )
        const mean = (stage: string) =>
          rows.some((r) => r.server.stageSums[stage] !== undefined)
            ? num(rows.reduce((s, r) => s + (r.server.stageSums[stage] ?? 0), 0) / n, 2)
            : "       -"
        console.log(`${String(level).padStart(7)} ${name.padEnd(9)} ${STAGES.map(mean).join("")}`)
      }
    }

    await Promise.all(sides.map((side) => side.call({ type: "close" })))
    if (profDir !== undefined) console.log(`\nCPU profiles of the servers: ${profDir}`)
  }

  try {
    await Promise.race([run(), timeout])
  } finally {
    clearTimeout(timer)
    // Children exit on `close` or when their IPC channel closes; whatever is left is killed.
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            const kill = setTimeout(() => child.kill("SIGKILL"), 3_000)
            child.once("exit", () => {
              clearTimeout(kill)
              resolve()
            })
            if (child.connected) child.disconnect()
          })
      )
    )
    rmSync(dir, { recursive: true, force: true })
  }
}
