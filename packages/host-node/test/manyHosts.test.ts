/**
 * Many hosts on shared engines (README "Choosing a deployment"): two
 * `createOracleApp` instances on different ports share one Postgres (`DATABASE_URL`) and one
 * Redis (`REDIS_URL`). A session created on A continues on B with its loadedPlugins; a run
 * started on A is rejoined from B and streams to its `done`; `THROTTLE_LIMIT` holds across both.
 * Skipped, with the reason, when the engines are not running.
 */
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { generateSigner, type Signer } from "@plugboard/adapters/ucan"
import { definePlugin, defineTool, type EventSink, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import {
  call,
  collect,
  headersFor,
  newSession,
  type Running,
  recordingLogger,
  start,
  stream,
  weather
} from "./helpers.js"
import { ENGINES, SKIP_REASON, sharedEngines } from "./manyHostsHelpers.js"

/** An always-visible job that takes `ms` and finishes: a run long enough to rejoin while it goes. */
const timedJob = (ms: number): Plugin =>
  definePlugin({
    name: "timed-job",
    manifest: {
      title: "Timed job",
      summary: "Runs a job that takes a while, then finishes.",
      whenToUse: ["When asked to run the timed job."],
      examples: [{ user: "Run the timed job", tool: "run_timed_job", args: {} }],
      tags: ["job"],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "run_timed_job",
        description: "Runs the timed job to its end.",
        input: Schema.Struct({}),
        handler: () => new Promise((resolve) => setTimeout(() => resolve("the timed job finished"), ms))
      })
    ]
  })

const toolCalls = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.flatMap((e) => (e._tag === "tool_call" && e.status === "isRunning" ? [e.toolName] : []))

const THROTTLE_LIMIT = 12

describe.skipIf(!ENGINES)(
  `two hosts on one Postgres and one Redis${ENGINES ? "" : `: ${SKIP_REASON}`}`,
  () => {
    const engines = sharedEngines("many_hosts")
    let oracle: Signer
    let a: Running
    let b: Running
    const host = () =>
      start({
        plugins: [weather, timedJob(1500)],
        identity: { signer: oracle },
        env: { ...engines.env, THROTTLE_LIMIT: String(THROTTLE_LIMIT), THROTTLE_TTL_MS: "60000" }
      })

    beforeAll(async () => {
      oracle = await generateSigner()
      // One after the other: the second host finds the migrations applied.
      a = await host()
      b = await host()
    }, 60_000)
    afterAll(async () => {
      await a?.stop()
      await b?.stop()
      await engines.drop()
    })

    it("a session created on A continues on B with its messages and loadedPlugins", async () => {
      const signer = await generateSigner()
      const headersA = await headersFor(signer, a.app.oracleDid)
      const headersB = await headersFor(signer, b.app.oracleDid)
      const session = await newSession(a.url, headersA)

      const first = await collect(
        (await stream(a.url, session, headersA, "What's the weather in Berlin?")).events
      )
      expect(first.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(toolCalls(first)).toEqual(["load_capability", "get_current_weather"])
      const historyA = (await call(`${a.url}/messages/${session}`, { headers: headersA })).body.messages

      // B lists the session and reads the same thread.
      const listed = await call(`${b.url}/sessions`, { headers: headersB })
      expect(listed.body).toMatchObject({ total: 1, sessions: [{ sessionId: session }] })
      expect((await call(`${b.url}/messages/${session}`, { headers: headersB })).body.messages).toEqual(
        historyA
      )

      // weather stayed loaded: B's turn calls its tool at once.
      const next = await collect(
        (await stream(b.url, session, headersB, "What's the weather in Tokyo?")).events
      )
      expect(next.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(toolCalls(next)).toEqual(["get_current_weather"])
      const continued = (await call(`${a.url}/messages/${session}`, { headers: headersA })).body.messages
      expect(continued.slice(0, historyA.length)).toEqual(historyA)
      expect(JSON.stringify(continued.at(-1))).toContain("Tokyo")

      // Neither host kept any of it in a SQLite file of its own.
      for (const host of [a, b]) {
        const users = join(host.dir, "users")
        expect(existsSync(users) ? readdirSync(users) : []).toEqual([])
      }
      // Another user sees none of it on either host.
      const stranger = await headersFor(await generateSigner(), b.app.oracleDid)
      expect((await call(`${b.url}/sessions`, { headers: stranger })).body).toMatchObject({ total: 0 })
      expect((await call(`${b.url}/messages/${session}`, { headers: stranger })).status).toBe(404)
    })

    it("a run started on A is rejoined from B (GET /runs/:id) and streams live to its done", async () => {
      const signer = await generateSigner()
      const headersA = await headersFor(signer, a.app.oracleDid)
      const headersB = await headersFor(signer, b.app.oracleDid)
      const session = await newSession(a.url, headersA)
      const { response, events } = await stream(a.url, session, headersA, "Run the timed job")
      const runId = response.headers.get("x-run-id")!
      const iterator = events[Symbol.asyncIterator]()
      const seen: Array<EventSink.AgentEvent> = []
      while (!seen.some((e) => e._tag === "tool_call" && e.toolName === "run_timed_job")) {
        seen.push((await iterator.next()).value as EventSink.AgentEvent)
      }
      // The run is going on A; B says so, and follows it from its first frame.
      const active = await call(`${b.url}/sessions/${session}/run`, { headers: headersB })
      expect(active.body.run).toMatchObject({ runId, status: "running" })
      const rejoined = await fetch(`${b.url}/runs/${encodeURIComponent(runId)}?after=0`, {
        headers: headersB
      })
      expect(rejoined.status).toBe(200)
      expect(rejoined.headers.get("x-run-id")).toBe(runId)
      const followed = await collect(readSse(rejoined.body!))
      const original = [...seen, ...(await collect({ [Symbol.asyncIterator]: () => iterator }))]
      expect(followed.at(-1)).toEqual({ _tag: "done", status: "finished" })
      expect(followed).toEqual(original)
      expect(followed.some((e) => e._tag === "tool_call" && e.status === "done")).toBe(true)
      expect((await call(`${b.url}/sessions/${session}/run`, { headers: headersB })).body).toEqual({
        run: null
      })
    })

    it("THROTTLE_LIMIT holds across both hosts: request N+1 in the window is a 429 whichever host answers", async () => {
      const signer = await generateSigner()
      const headers = await headersFor(signer, a.app.oracleDid)
      const hosts = [a.url, b.url]
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

    it("DATABASE_URL without REDIS_URL serves, and warns that it is for one host at a time", async () => {
      const { records, logger } = recordingLogger()
      const single = await start({
        plugins: [weather],
        identity: { signer: oracle },
        logger,
        env: { ...engines.env, REDIS_URL: undefined, REDIS_PREFIX: undefined }
      })
      try {
        expect(records.filter((r) => r.level === "warn").map((r) => r.message)).toContainEqual(
          expect.stringContaining("DATABASE_URL without REDIS_URL serves from one host")
        )
        const headers = await headersFor(await generateSigner(), single.app.oracleDid)
        const session = await newSession(single.url, headers)
        const turn = await collect(
          (await stream(single.url, session, headers, "What's the weather in Oslo?")).events
        )
        expect(turn.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
        // The session is in the shared database: host A lists it.
        expect((await call(`${a.url}/sessions`, { headers })).body).toMatchObject({ total: 1 })
      } finally {
        await single.stop()
      }
    })
  }
)
