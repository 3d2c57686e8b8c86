/**
 * The body of `pnpm bench pgconversation` (bench/pgconversation.bench.ts): what a turn costs as a
 * conversation grows on the Postgres checkpointer (`DATABASE_URL`), with the messages stored as
 * deltas (what the agent does on it now) and as full copies (what it did before: the same saver
 * behind a wrapper that hides its own delta read, so `agentStateFor` picks full copies), in the
 * same run, turn by turn in alternation, on one schema of its own.
 *
 * The workload of `pnpm bench conversation`: one session per side, 300 sequential turns, each
 * `createMainAgent` + `runTurn` (one checkpoint per turn), four messages a turn from a zero-latency
 * scripted model. Reported at turns 10, 100 and 300: the median wall time of the ten turns ending
 * there and the bytes the side's thread gained per turn over them (the lengths of its blobs and
 * writes). Needs PLUGBOARD_TEST_POSTGRES_URL (scripts/services/postgres.sh env).
 */
import { randomBytes } from "node:crypto"
import { loadavg } from "node:os"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Catalog } from "@plugboard/core"
import { createMainAgent, prepareCatalog, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeCheckpointer, makeDatabase } from "@plugboard/postgres"
import { Effect } from "effect"
import { FullCopies } from "../../adapters/langgraph/test/FullCopies.js"
import { longForecastPlugin, lorem } from "../../adapters/langgraph/test/forecast.js"

const TURNS = 300
const MARKS = [10, 100, 300] as const
const WINDOW = 10

const weather = longForecastPlugin

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export default async () => {
  const url = process.env.PLUGBOARD_TEST_POSTGRES_URL
  if (url === undefined || url === "") {
    console.log(
      'skipped: PLUGBOARD_TEST_POSTGRES_URL is not set (eval "$(scripts/services/postgres.sh env)")'
    )
    return
  }
  const schema = `bench_conversation_${randomBytes(4).toString("hex")}`
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const db = yield* Effect.orDie(makeDatabase({ url, schema, maxConnections: 4 }))
        const catalog = Catalog.unsafeMake([weather])
        prepareCatalog(catalog)
        const deltas = yield* makeCheckpointer(db).forUser("did:key:deltas")
        const copies = yield* makeCheckpointer(db).forUser("did:key:copies")
        const sides = [
          { name: "deltas", saver: deltas as BaseCheckpointSaver, session: "deltas" },
          { name: "full copies", saver: new FullCopies(copies), session: "copies" }
        ].map((s) => ({ ...s, wall: [] as Array<number>, bytes: new Map<number, number>() }))
        const storedBytes = async (session: string) => {
          const { rows } = await db.pool.query<{ n: string }>(
            `SELECT (SELECT coalesce(sum(length(blob)), 0) FROM ${db.schema}.checkpoint_blobs WHERE thread_id LIKE $1)
              + (SELECT coalesce(sum(length(blob)), 0) FROM ${db.schema}.checkpoint_writes WHERE thread_id LIKE $1) AS n`,
            [`%:${session}`]
          )
          return Number(rows[0]!.n)
        }
        const run = async (saver: BaseCheckpointSaver, session: string, turn: number) => {
          const agent = await createMainAgent({
            catalog,
            model: ScriptedChatModel.script([
              { tool: "get_forecast", args: { city: `Lisbon ${turn}` } },
              `Turn ${turn}: ${lorem.repeat(3)}`
            ]),
            checkpointer: saver,
            basePrompt: "You are a helpful assistant.",
            request: { did: "did:key:bench", sessionId: session, requestId: `${session}-${turn}` }
          })
          const result = await runTurn(agent, { message: `Question ${turn}: what is the weather in Lisbon?` })
          if (result.state.messages.length !== turn * 4) {
            throw new Error(`${session}: ${result.state.messages.length} messages after turn ${turn}`)
          }
        }
        yield* Effect.promise(async () => {
          for (let turn = 1; turn <= 10; turn++)
            for (const s of sides) await run(s.saver, `warm-${s.session}`, turn)
          console.log(
            `Postgres checkpointer, one session per side, ${TURNS} sequential turns (4 messages a turn, scripted model), alternating`
          )
          console.log(
            `load average at start: ${loadavg()
              .map((l) => l.toFixed(1))
              .join(" ")}`
          )
          for (const s of sides) s.bytes.set(0, await storedBytes(s.session))
          for (let turn = 1; turn <= TURNS; turn++) {
            for (const s of turn % 2 === 0 ? sides : [...sides].reverse()) {
              const t0 = performance.now()
              await run(s.saver, s.session, turn)
              s.wall.push(performance.now() - t0)
              if (MARKS.some((m) => m === turn || m - WINDOW === turn))
                s.bytes.set(turn, await storedBytes(s.session))
            }
          }
          console.log("messages stored as   turn  wall median  bytes/turn   (over the 10 turns ending there)")
          for (const s of sides) {
            for (const mark of MARKS) {
              const bytes = (s.bytes.get(mark)! - s.bytes.get(mark - WINDOW)!) / WINDOW
              console.log(
                `${s.name.padEnd(18)} ${String(mark).padStart(5)}  ${median(s.wall.slice(mark - WINDOW, mark))
                  .toFixed(2)
                  .padStart(8)} ms  ${bytes.toFixed(0).padStart(9)}`
              )
            }
            const ratio = median(s.wall.slice(TURNS - WINDOW)) / median(s.wall.slice(0, WINDOW))
            console.log(
              `${s.name.padEnd(18)} turn ${TURNS} / turn ${MARKS[0]}: ${ratio.toFixed(2)}× wall; thread stored ${(
                (await storedBytes(s.session)) / 1e6
              ).toFixed(1)} MB`
            )
          }
          console.log(
            `load average at end: ${loadavg()
              .map((l) => l.toFixed(1))
              .join(" ")}`
          )
        })
        yield* Effect.promise(() => db.pool.query(`DROP SCHEMA IF EXISTS ${db.schema} CASCADE`))
      })
    )
  )
}
