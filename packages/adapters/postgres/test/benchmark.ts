/**
 * The body of `pnpm bench postgres` (bench/postgres.bench.ts). It lives in the adapters package so
 * that it resolves the adapters' own dependencies. Put and getTuple of the Checkpointer port on
 * Postgres (`makeCheckpointer(db).forUser(did)`: one user's `UserScopedSaver` over the shared
 * saver, what a host with `DATABASE_URL` runs) against LangGraph's `PostgresSaver` used bare, on
 * the same data (the SQLite bench's agent-shaped threads, `makeThread`), the same server, in the
 * same run, each in a schema of its own on a pool of the same size; rounds alternate who goes
 * first. Reported per wall-clock second (a Postgres saver waits on the server, so CPU time of
 * this process alone would flatter it) and per CPU-second of this process.
 *
 * Needs PostgreSQL: BENCH_DATABASE_URL, else PLUGBOARD_TEST_POSTGRES_URL (`source
 * scripts/ci-services.sh`); without it, it says so and measures nothing. Its schemas are dropped
 * at the end.
 */
import { randomBytes } from "node:crypto"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { Effect } from "effect"
import pg from "pg"
import { getLatestOf, makeThread, putThreads, time } from "../../sqlite/test/benchmark.js"
import { makeCheckpointer, makeDatabase } from "../src/index.js"

const THREADS = 10
const STEPS = 30
const ROUNDS = 4
const POOL = 4
const URL = process.env.BENCH_DATABASE_URL || process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined
const DID = "did:key:z6MkBenchUser"

const data = Array.from({ length: THREADS }, (_, t) => makeThread(t))

type Op = "put" | "getTuple"
interface Result {
  readonly wall: Record<Op, number>
  readonly cpu: Record<Op, number>
}

const measure = async (saver: BaseCheckpointSaver, prefix: string): Promise<Result> => {
  const put = await time(() => putThreads(saver, prefix, data))
  const get = await time(() => getLatestOf(saver, prefix, THREADS, 10))
  return {
    wall: { put: (put.ops / put.wallMs) * 1000, getTuple: (get.ops / get.wallMs) * 1000 },
    cpu: { put: (put.ops / put.ms) * 1000, getTuple: (get.ops / get.ms) * 1000 }
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export default async () => {
  if (URL === undefined) {
    console.log(
      "skipped: set BENCH_DATABASE_URL or PLUGBOARD_TEST_POSTGRES_URL (source scripts/ci-services.sh)"
    )
    return
  }
  const tag = `bench_pg_${process.pid}_${randomBytes(4).toString("hex")}`
  const ourSchema = `${tag}_port`
  const refSchema = `${tag}_ref`
  const refPool = new pg.Pool({ connectionString: URL, max: POOL })
  refPool.on("error", () => undefined)
  try {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const db = yield* makeDatabase({ url: URL, schema: ourSchema, maxConnections: POOL })
          const ours = yield* makeCheckpointer(db).forUser(DID)
          const reference = new PostgresSaver(refPool, undefined, { schema: refSchema })
          yield* Effect.promise(() => reference.setup())
          const runs: Record<"port" | "reference", Array<Result>> = { port: [], reference: [] }
          for (let round = 0; round < ROUNDS; round++) {
            const order =
              round % 2 === 0 ? (["reference", "port"] as const) : (["port", "reference"] as const)
            for (const who of order) {
              const saver = who === "port" ? ours : reference
              runs[who].push(yield* Effect.promise(() => measure(saver, `r${round}`)))
            }
          }
          const fmt = (n: number) => n.toFixed(0).padStart(8)
          console.log(
            `${THREADS} threads × ${STEPS} steps (agent-shaped state, docs/spec/graph-state.md), pool of ${POOL}, ${ROUNDS} alternating rounds, medians`
          )
          console.log("                                 port  PostgresSaver  ratio")
          for (const [unit, key] of [
            ["per wall-clock second", "wall"],
            ["per CPU-second of this process", "cpu"]
          ] as const) {
            console.log(unit)
            for (const op of ["put", "getTuple"] as const) {
              const mine = median(runs.port.map((r) => r[key][op]))
              const ref = median(runs.reference.map((r) => r[key][op]))
              const label = op === "put" ? "put+putWrites/s" : "getTuple/s"
              console.log(`  ${label.padEnd(24)}${fmt(mine)}  ${fmt(ref)}       ${(mine / ref).toFixed(2)}×`)
            }
          }
          yield* Effect.promise(() =>
            db.pool.query(
              `DROP SCHEMA IF EXISTS "${ourSchema}" CASCADE; DROP SCHEMA IF EXISTS "${refSchema}" CASCADE`
            )
          )
        })
      )
    )
  } finally {
    await refPool.end().catch(() => undefined)
  }
}
