/**
 * `pnpm bench hosts`: streamed turns/s of plugboard on the shared engines (docs/deployment.md) against the
 * embedded default, same machine, same run, same load client (`server/load-client.ts`):
 *
 * - `sqlite ×1`: one host on the embedded default (per-user SQLite, runs in a SQLite file, the
 *   rate limiter and the turn lock in process);
 * - `postgres ×1`: one host with `DATABASE_URL` and `REDIS_URL` (checkpoints, sessions, ledger and
 *   runs on Postgres; rate limiter and turn lock on Redis);
 * - `postgres ×2`: two such hosts on the same Postgres and Redis, the clients split between them
 *   (one load client process per host).
 *
 * Each turn is "What's the weather in Berlin?" on a fresh session, streamed to its `done`, at 4
 * and 16 concurrent clients (each its own user); rounds alternate the three set-ups, each round
 * after a few untimed turns. Reported per set-up: turns/s (all rounds pooled), latency p50/p99,
 * and server CPU ms per turn (all its hosts). Every process shares this machine's cores: two
 * hosts here measure the cost of the shared engines and of splitting, not a second machine.
 *
 * Needs PostgreSQL and Redis: BENCH_DATABASE_URL / BENCH_REDIS_URL, else the test servers'
 * PLUGBOARD_TEST_POSTGRES_URL / PLUGBOARD_TEST_REDIS_URL (`source scripts/ci-services.sh`);
 * without them it says so and measures nothing. A schema and a key prefix of its own, dropped
 * at the end. Knobs: BENCH_RUN_MS, measured time per set-up per level (default 6 s, in
 * BENCH_ROUNDS rounds, default 3); BENCH_TIMEOUT_MS (default 60 s + 10 × BENCH_RUN_MS).
 */
import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { makeDatabase } from "@plugboard/postgres"
import { makeConnection } from "@plugboard/redis"
import { loadOrCreateSigner } from "@plugboard/ucan"
import { Effect } from "effect"
import { type Child, type ServerWindow, startChild } from "./server/ipc.js"
import type { RoundResult } from "./server/load-client.js"

const LEVELS = [4, 16] as const
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? 6_000)
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3))
const ROUND_MS = RUN_MS / ROUNDS
const FIRST_WARMUP_TURNS = 32
const WARMUP_TURNS = 4
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 60_000 + 10 * RUN_MS)
const DATABASE_URL = process.env.BENCH_DATABASE_URL || process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined
const REDIS_URL = process.env.BENCH_REDIS_URL || process.env.PLUGBOARD_TEST_REDIS_URL || undefined

const here = dirname(fileURLToPath(import.meta.url))
const repo = join(here, "..")

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const num = (x: number, digits = 1, width = 8) => x.toFixed(digits).padStart(width)

interface SetUp {
  readonly name: string
  /** The hosts, each driven by its own load client with an equal share of the clients. */
  readonly hosts: ReadonlyArray<{ readonly url: string; readonly host: Child; readonly load: Child }>
}

interface Measured {
  readonly turns: number
  readonly elapsedMs: number
  readonly latencies: ReadonlyArray<number>
  readonly serverCpuMs: number
  readonly serverTurns: number
}

export default async (): Promise<void> => {
  if (DATABASE_URL === undefined || REDIS_URL === undefined) {
    console.log(
      "skipped: no PostgreSQL and Redis (set BENCH_DATABASE_URL and BENCH_REDIS_URL, or source scripts/ci-services.sh)"
    )
    return
  }
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-hosts-"))
  const tag = `bench_hosts_${process.pid}_${randomBytes(3).toString("hex")}`
  const engines = {
    DATABASE_URL,
    DATABASE_SCHEMA: tag,
    REDIS_URL,
    REDIS_PREFIX: `${tag}:`
  }
  const children: Array<ChildProcess> = []
  const start = (file: string, env: Record<string, string>): Child => {
    const started = startChild(file, { cwd: repo, env })
    children.push(started.child)
    return started
  }

  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bench hosts: over ${TIMEOUT_MS} ms, aborted`)), TIMEOUT_MS)
  })

  const run = async () => {
    const oracleKey = join(dir, "oracle.key")
    await loadOrCreateSigner(oracleKey)
    const host = (name: string, shared: boolean) => {
      mkdirSync(join(dir, name))
      return start(join(here, "server", "plugboard.ts"), {
        BENCH_DATA_DIR: join(dir, name),
        BENCH_ORACLE_KEY: oracleKey,
        BENCH_ENGINES: JSON.stringify(shared ? engines : {}),
        // The model `plugboard serve` runs by default, as when this benchmark's figures were taken.
        BENCH_PLUGBOARD_MODEL: "router"
      })
    }
    const bootStarted = performance.now()
    const sqlite = host("sqlite", false)
    // The first Postgres host applies the migrations before the second boots.
    const pgA = host("pg-a", true)
    await pgA.ready
    const pgB = host("pg-b", true)
    const loads = [0, 1].map(() => start(join(here, "server", "load-client.ts"), {}))
    const [sqliteReady, pgAReady, pgBReady] = await Promise.all([
      sqlite.ready,
      pgA.ready,
      pgB.ready,
      ...loads.map((l) => l.ready)
    ])
    const maxLevel = Math.max(...LEVELS)
    for (const load of loads) {
      await load.call({ type: "setup", oracleDid: sqliteReady.oracleDid, clients: maxLevel })
    }
    const setUps: ReadonlyArray<SetUp> = [
      { name: "sqlite ×1", hosts: [{ url: sqliteReady.url, host: sqlite, load: loads[0]! }] },
      { name: "postgres ×1", hosts: [{ url: pgAReady.url, host: pgA, load: loads[0]! }] },
      {
        name: "postgres ×2",
        hosts: [
          { url: pgAReady.url, host: pgA, load: loads[0]! },
          { url: pgBReady.url, host: pgB, load: loads[1]! }
        ]
      }
    ]
    console.log(
      `streamed turns over loopback; ${cpus().length} cores; hosts up in ${((performance.now() - bootStarted) / 1000).toFixed(1)} s; load average ${loadavg()[0]!.toFixed(2)}`
    )
    console.log(
      `rounds alternate the set-ups, ${ROUNDS} × ${(ROUND_MS / 1000).toFixed(1)} s per set-up per level (BENCH_RUN_MS=${RUN_MS})`
    )
    console.log(
      "every host: examples' catalog, scripted router, UCAN auth + rate limit, credits off; postgres: DATABASE_URL + REDIS_URL\n"
    )

    const results = new Map<string, Array<Measured>>()
    for (const level of LEVELS) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const setUp of setUps) {
          const share = Math.max(1, Math.floor(level / setUp.hosts.length))
          const warmup = Math.ceil((round === 0 ? FIRST_WARMUP_TURNS : WARMUP_TURNS) / level)
          await Promise.all(
            setUp.hosts.map((h) =>
              h.load.call({ type: "round", url: h.url, auth: true, level: share, ms: 0, warmup })
            )
          )
          await Promise.all(setUp.hosts.map((h) => h.host.call({ type: "begin" })))
          const rounds = await Promise.all(
            setUp.hosts.map((h) =>
              h.load.call<RoundResult>({
                type: "round",
                url: h.url,
                auth: true,
                level: share,
                ms: ROUND_MS,
                warmup: 0
              })
            )
          )
          const windows = await Promise.all(
            setUp.hosts.map((h) => h.host.call<ServerWindow>({ type: "end" }))
          )
          const key = `${setUp.name}/${level}`
          results.set(key, [
            ...(results.get(key) ?? []),
            {
              turns: rounds.reduce((s, r) => s + r.turns, 0),
              elapsedMs: Math.max(...rounds.map((r) => r.elapsedMs)),
              latencies: rounds.flatMap((r) => r.latencies),
              serverCpuMs: windows.reduce((s, w) => s + w.cpuMs, 0),
              serverTurns: windows.reduce((s, w) => s + w.turns, 0)
            }
          ])
        }
      }
    }

    console.log("clients set-up         turns/s   p50 ms   p99 ms   turns  server CPU ms/turn  vs sqlite ×1")
    for (const level of LEVELS) {
      const stats = (name: string) => {
        const rows = results.get(`${name}/${level}`) ?? []
        const turns = rows.reduce((s, r) => s + r.turns, 0)
        const elapsed = rows.reduce((s, r) => s + r.elapsedMs, 0)
        const latencies = rows.flatMap((r) => r.latencies).sort((a, b) => a - b)
        const cpu =
          rows.reduce((s, r) => s + r.serverCpuMs, 0) /
          Math.max(
            1,
            rows.reduce((s, r) => s + r.serverTurns, 0)
          )
        return { turns, rate: (turns / elapsed) * 1000, latencies, cpu }
      }
      const base = stats("sqlite ×1")
      for (const setUp of setUps) {
        const s = stats(setUp.name)
        console.log(
          `${String(level).padStart(7)} ${setUp.name.padEnd(13)} ${num(s.rate)} ${num(percentile(s.latencies, 50))} ${num(percentile(s.latencies, 99))} ${String(s.turns).padStart(7)} ${num(s.cpu, 2, 19)} ${num(s.rate / base.rate, 2, 12)}×`
        )
      }
    }

    await Promise.all([sqlite, pgA, pgB].map((h) => h.call({ type: "close" }).catch(() => undefined)))
  }

  try {
    await Promise.race([run(), timeout])
  } finally {
    clearTimeout(timer)
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const db = yield* makeDatabase({ url: DATABASE_URL, schema: tag })
          yield* Effect.promise(() => db.pool.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`))
          const redis = yield* makeConnection({ url: REDIS_URL, prefix: `${tag}:` })
          const keys = yield* redis.run("keys", (c) => c.keys(`${tag}:*`))
          if (keys.length > 0) yield* redis.run("del", (c) => c.del(...keys))
        })
      )
    ).catch((error: unknown) => console.error(`bench hosts: cleanup failed: ${String(error)}`))
  }
}
