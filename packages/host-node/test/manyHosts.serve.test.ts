/**
 * Two `plugboard serve` processes (the CLI, as an operator runs it) on different ports share one
 * Postgres (`DATABASE_URL`) and one Redis (`REDIS_URL`), docs/deployment.md:
 * - a session created on A continues on B, with its loadedPlugins;
 * - a run started on A is rejoined from B (`GET /runs/:id`) and streams live to its `done`;
 * - `THROTTLE_LIMIT` holds across both: request N+1 in the window is a 429 on either host;
 * - 10 credits, 50 concurrent streamed turns over both hosts: exactly 10 run, 40 get a 402, the
 *   balance ends at 0;
 * - `POST /messages/abort` and `DELETE /sessions/:id` on B stop a turn running on A;
 * - kill -9 of A mid-run: the cut run reads `interrupted` (`host-lost`) from B, the session's next
 *   turn on B works, nothing committed is lost; a host booting meanwhile interrupts nothing (a run
 *   is ended only once nobody holds its lease, `RunLiveness.ts`).
 * The hosts serve `fixtures/manyHosts/plugins.ts` with the scripted router. Skipped, with the
 * reason, when the engines are not running.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Clock, type CreditLedger, type EventSink } from "@plugboard/core"
import { makeCreditLedger, makeDatabase } from "@plugboard/postgres"
import { generateSigner, loadOrCreateSigner } from "@plugboard/ucan"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import { call, collect, headersFor, newSession, spawnServe, stream } from "./helpers.js"
import { ENGINES, POSTGRES_URL, SKIP_REASON, sharedEngines } from "./manyHostsHelpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = join(here, "..", "..", "..")
const command = [
  process.execPath,
  "--conditions=@plugboard/source",
  join(ROOT, "scripts", "plugboard.mjs"),
  "serve",
  join(here, "fixtures", "manyHosts", "plugins.ts"),
  "--port",
  "0",
  "--host",
  "127.0.0.1"
] as const

const THROTTLE_LIMIT = 60
const TTL_MS = 2000

const toolCalls = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.flatMap((e) => (e._tag === "tool_call" && e.status === "isRunning" ? [e.toolName] : []))

/** Reads `events` until `until` holds for one; returns what it read, and the iterator to go on with. */
const readUntil = async (
  events: AsyncIterable<EventSink.AgentEvent>,
  until: (e: EventSink.AgentEvent) => boolean
) => {
  const iterator = events[Symbol.asyncIterator]()
  const seen: Array<EventSink.AgentEvent> = []
  for (;;) {
    const next = await iterator.next()
    if (next.done) throw new Error(`the stream ended first: ${JSON.stringify(seen)}`)
    seen.push(next.value)
    if (until(next.value)) break
  }
  return { seen, rest: () => collect({ [Symbol.asyncIterator]: () => iterator }) }
}

const jobRunning = (name: string) => (e: EventSink.AgentEvent) =>
  e._tag === "tool_call" && e.toolName === name && e.status === "isRunning"

describe.skipIf(!ENGINES)(
  `two plugboard serve processes on one Postgres and one Redis${ENGINES ? "" : `: ${SKIP_REASON}`}`,
  () => {
    const engines = sharedEngines("many_serve")
    const root = mkdtempSync(join(tmpdir(), "plugboard-many-serve-"))
    const gate = join(root, "gate")
    const hostEnv = (name: string) => ({
      ...engines.env,
      PLUGBOARD_DATA_DIR: join(root, name),
      // One oracle: a user's token is good on every host.
      ORACLE_KEY_FILE: join(root, "oracle.key"),
      THROTTLE_LIMIT: String(THROTTLE_LIMIT),
      THROTTLE_TTL_MS: "60000",
      TURN_LOCK_TTL_MS: String(TTL_MS),
      MANY_HOSTS_GATE: gate
    })
    let a: ReturnType<typeof spawnServe>
    let b: ReturnType<typeof spawnServe>
    let urlA: string
    let urlB: string
    let oracleDid: string

    /** A fresh user with `credits` on the shared ledger, and its headers. */
    const member = async (credits = 100) => {
      const signer = await generateSigner()
      if (credits > 0) await onLedger((ledger) => ledger.topUp(signer.did(), credits))
      return { did: signer.did(), headers: await headersFor(signer, oracleDid) }
    }
    const onLedger = <A>(body: (ledger: CreditLedger.CreditLedgerService) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const db = yield* makeDatabase({ url: POSTGRES_URL!, schema: engines.schema })
            return yield* body(yield* makeCreditLedger(db))
          })
        ).pipe(Effect.provide(Clock.layer))
      )

    beforeAll(async () => {
      mkdirSync(join(root, "a"))
      mkdirSync(join(root, "b"))
      oracleDid = (await loadOrCreateSigner(join(root, "oracle.key"))).signer.did()
      // Booting together: the migrations are applied once, under Postgres's advisory lock.
      a = spawnServe(command, root, hostEnv("a"))
      b = spawnServe(command, root, hostEnv("b"))
      ;[urlA, urlB] = await Promise.all([a.url, b.url])
      expect(urlA).not.toBe(urlB)
    }, 90_000)
    afterAll(async () => {
      for (const host of [a, b]) {
        if (host !== undefined && host.child.exitCode === null && host.child.signalCode === null) {
          host.child.kill("SIGTERM")
          await host.exited
        }
      }
      rmSync(root, { recursive: true, force: true })
      await engines.drop()
    }, 30_000)

    it("a session created on A continues on B with its messages and loadedPlugins", async () => {
      const { headers } = await member()
      const session = await newSession(urlA, headers)
      const first = await collect(
        (await stream(urlA, session, headers, "What's the weather in Berlin?")).events
      )
      expect(first.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(toolCalls(first)).toEqual(["load_capability", "get_current_weather"])
      const historyA = (await call(`${urlA}/messages/${session}`, { headers })).body.messages

      // B lists the session and reads the same thread.
      expect((await call(`${urlB}/sessions`, { headers })).body).toMatchObject({
        total: 1,
        sessions: [{ sessionId: session }]
      })
      expect((await call(`${urlB}/messages/${session}`, { headers })).body.messages).toEqual(historyA)

      // weather stayed loaded: B's turn calls its tool at once.
      const next = await collect(
        (await stream(urlB, session, headers, "What's the weather in Tokyo?")).events
      )
      expect(next.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(toolCalls(next)).toEqual(["get_current_weather"])
      const continued = (await call(`${urlA}/messages/${session}`, { headers })).body.messages
      expect(continued.slice(0, historyA.length)).toEqual(historyA)
      expect(JSON.stringify(continued.at(-1))).toContain("Tokyo")

      // Neither host kept any of it in a SQLite file of its own.
      for (const name of ["a", "b"]) {
        const users = join(root, name, "users")
        expect(existsSync(users) ? readdirSync(users) : []).toEqual([])
      }
      // Another user sees none of it on either host.
      const stranger = await member(0)
      expect((await call(`${urlB}/sessions`, { headers: stranger.headers })).body).toMatchObject({ total: 0 })
      expect((await call(`${urlA}/messages/${session}`, { headers: stranger.headers })).status).toBe(404)
    })

    it("a run started on A is rejoined from B (GET /runs/:id) and streams live to its done", async () => {
      const { headers } = await member()
      const session = await newSession(urlA, headers)
      const { response, events } = await stream(urlA, session, headers, "Run the timed job")
      const runId = response.headers.get("x-run-id")!
      const { seen, rest } = await readUntil(events, jobRunning("run_timed_job"))
      // The run is going on A; B says so, and follows it from its first frame.
      expect((await call(`${urlB}/sessions/${session}/run`, { headers })).body.run).toMatchObject({
        runId,
        status: "running"
      })
      const rejoined = await fetch(`${urlB}/runs/${encodeURIComponent(runId)}?after=0`, { headers })
      expect(rejoined.status).toBe(200)
      expect(rejoined.headers.get("x-run-id")).toBe(runId)
      const followed = await collect(readSse(rejoined.body!))
      const original = [...seen, ...(await rest())]
      expect(followed.at(-1)).toEqual({ _tag: "done", status: "finished" })
      expect(followed).toEqual(original)
      expect(followed.some((e) => e._tag === "tool_call" && e.status === "done")).toBe(true)
      expect((await call(`${urlB}/sessions/${session}/run`, { headers })).body).toEqual({ run: null })
    })

    it("THROTTLE_LIMIT holds across both hosts: request N+1 in the window is a 429 whichever host answers", async () => {
      const { headers } = await member(0)
      const hosts = [urlA, urlB]
      const statuses: Array<number> = []
      for (let i = 0; i < THROTTLE_LIMIT; i++) {
        statuses.push((await call(`${hosts[i % 2]}/sessions`, { headers })).status)
      }
      expect(statuses).toEqual(Array(THROTTLE_LIMIT).fill(200))
      for (const url of hosts) {
        const refused = await call(`${url}/sessions`, { headers })
        expect(refused.status).toBe(429)
        expect(refused.body).toMatchObject({ statusCode: 429 })
      }
    })

    it("10 credits, 50 concurrent streamed turns over both hosts: exactly 10 run, 40 get 402, the balance ends at 0", async () => {
      const u = await member(10)
      // Closed: every turn that starts waits at its first model call until all 50 have their status.
      writeFileSync(gate, "")
      let statuses: Array<number>
      try {
        const started = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            stream(i % 2 === 0 ? urlA : urlB, `race-${i}`, u.headers, "Hello there")
          )
        )
        statuses = started.map((s) => s.response.status)
        rmSync(gate)
        const ends = await Promise.all(
          started.map(async ({ response, events }) =>
            response.status === 200 ? (await collect(events)).at(-1) : await response.json()
          )
        )
        for (const [i, end] of ends.entries()) {
          if (statuses[i] === 200) expect(end).toMatchObject({ _tag: "done", status: "finished" })
          else expect(end).toMatchObject({ statusCode: 402, error: "insufficient-credits" })
        }
      } finally {
        rmSync(gate, { force: true })
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(10)
      expect(statuses.filter((s) => s === 402)).toHaveLength(40)
      const [history, balance, available] = await onLedger((ledger) =>
        Effect.all([ledger.history(u.did, 1000), ledger.balance(u.did), ledger.available(u.did)])
      )
      for (const e of history) expect(e.balanceAfter).toBeGreaterThanOrEqual(0)
      expect(history.filter((e) => e.kind === "deduct")).toHaveLength(10)
      expect(balance).toBe(0)
      expect(available).toBe(0)
    }, 60_000)

    it("POST /messages/abort on B stops the turn running on A: its run ends aborted", async () => {
      const { headers } = await member()
      const session = await newSession(urlA, headers)
      // Nothing runs yet: nothing to abort, on either host.
      expect(
        (await call(`${urlB}/messages/abort`, { method: "POST", headers, body: { sessionId: session } })).body
      ).toEqual({
        success: false
      })
      const { events } = await stream(urlA, session, headers, "Run the endless job")
      const { rest } = await readUntil(events, jobRunning("run_endless_job"))
      const aborted = await call(`${urlB}/messages/abort`, {
        method: "POST",
        headers,
        body: { sessionId: session }
      })
      expect(aborted.body).toEqual({ success: true })
      expect((await rest()).at(-1)).toMatchObject({ _tag: "done", status: "aborted", reason: "user" })
      expect((await call(`${urlB}/sessions/${session}/run`, { headers })).body).toEqual({ run: null })
      // The session goes on, on either host.
      const next = await collect((await stream(urlB, session, headers, "What's the weather in Oslo?")).events)
      expect(next.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
    }, 30_000)

    it("DELETE /sessions/:id on B stops the turn running on A first, then deletes the session and its thread", async () => {
      const { headers } = await member()
      const session = await newSession(urlA, headers)
      const { events } = await stream(urlA, session, headers, "Run the endless job")
      const { rest } = await readUntil(events, jobRunning("run_endless_job"))
      const deleted = await call(`${urlB}/sessions/${session}`, { method: "DELETE", headers })
      expect(deleted.status).toBe(200)
      expect(deleted.body).toEqual({ success: true, sessionId: session })
      expect((await rest()).at(-1)).toMatchObject({ _tag: "done", status: "interrupted", reason: "deleted" })
      // The stopped turn did not write the thread back: gone on both hosts.
      for (const url of [urlA, urlB]) {
        expect((await call(`${url}/messages/${session}`, { headers })).status).toBe(404)
        expect((await call(`${url}/sessions`, { headers })).body).toMatchObject({ total: 0 })
      }
    }, 30_000)

    it("kill -9 of A mid-run: the cut run reads interrupted from B, the next turn on B works, nothing committed is lost", async () => {
      const { headers } = await member()
      const session = await newSession(urlA, headers)
      const first = await collect(
        (await stream(urlA, session, headers, "What's the weather in Berlin?")).events
      )
      expect(first.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const committed = (await call(`${urlA}/messages/${session}`, { headers })).body.messages
      expect(committed.length).toBeGreaterThan(1)

      const { response, events } = await stream(urlA, session, headers, "Run the endless job")
      const runId = response.headers.get("x-run-id")!
      const { seen } = await readUntil(events, jobRunning("run_endless_job"))

      // C boots while the run is live on A: the run goes on.
      mkdirSync(join(root, "c"))
      const c = spawnServe(command, root, hostEnv("c"))
      try {
        const urlC = await c.url
        expect((await call(`${urlC}/sessions/${session}/run`, { headers })).body.run).toMatchObject({
          runId,
          status: "running"
        })
      } finally {
        c.child.kill("SIGTERM")
        await c.exited
      }

      a.child.kill("SIGKILL")
      await a.exited

      // A rejoin on B right away follows the run until its lease lapses, then gets its done.
      const rejoined = await fetch(`${urlB}/runs/${encodeURIComponent(runId)}?after=0`, { headers })
      const replay = await collect(readSse(rejoined.body!))
      expect(replay.slice(0, seen.length)).toEqual(seen)
      expect(replay.at(-1)).toMatchObject({ _tag: "done", status: "interrupted", reason: "host-lost" })
      expect((await call(`${urlB}/sessions/${session}/run`, { headers })).body).toEqual({ run: null })

      // The session's next turn, on B, works and builds on every committed message.
      const next = await collect(
        (await stream(urlB, session, headers, "What's the weather in Tokyo?")).events
      )
      expect(next.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const history = (await call(`${urlB}/messages/${session}`, { headers })).body.messages
      expect(history.slice(0, committed.length)).toEqual(committed)
      expect(JSON.stringify(history.at(-1))).toContain("Tokyo")
    }, 90_000)
  }
)
