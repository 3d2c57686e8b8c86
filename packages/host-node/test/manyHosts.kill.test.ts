/**
 * kill -9 of a host sharing Postgres and Redis, in the middle of a run (README "Choosing a deployment"): the session's
 * next turn on the other host works, the cut run reads `interrupted` with its partial text, and
 * nothing committed is lost. A host booting meanwhile interrupts nothing: a run is ended only once
 * nobody holds its lease (`RunLiveness.ts`), which a dead host's does `TURN_LOCK_TTL_MS` after its
 * last refresh. The hosts are processes (`fixtures/manyHosts/host.ts`). Skipped, with the reason,
 * when the engines are not running.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { generateSigner } from "@plugboard/adapters/ucan"
import type { EventSink } from "@plugboard/core"
import { afterAll, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import { call, collect, headersFor, newSession, spawnServe, stream } from "./helpers.js"
import { ENGINES, SKIP_REASON, sharedEngines } from "./manyHostsHelpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const command = [
  process.execPath,
  "--conditions=@plugboard/source",
  join(here, "fixtures", "manyHosts", "host.mjs")
] as const
const TTL_MS = 1500

describe.skipIf(!ENGINES)(`kill -9 of a host mid-run${ENGINES ? "" : `: ${SKIP_REASON}`}`, () => {
  const engines = sharedEngines("many_hosts_kill")
  const root = mkdtempSync(join(tmpdir(), "plugboard-many-kill-"))
  const hostEnv = (name: string) => ({
    ...engines.env,
    PORT: "0",
    PLUGBOARD_DATA_DIR: join(root, name),
    // One oracle: a user's token is good on every host.
    ORACLE_KEY_FILE: join(root, "oracle.key"),
    TURN_LOCK_TTL_MS: String(TTL_MS)
  })
  afterAll(async () => {
    rmSync(root, { recursive: true, force: true })
    await engines.drop()
  })

  it("the next turn on B works, the cut run reads interrupted with its partial text, nothing committed is lost", async () => {
    const a = spawnServe(command, root, hostEnv("a"))
    let b: ReturnType<typeof spawnServe> | undefined
    try {
      const urlA = await a.url
      const oracleDid = (await call(`${urlA}/health`)).body.oracleDid as string
      const headers = await headersFor(await generateSigner(), oracleDid)
      const session = await newSession(urlA, headers)

      // A committed turn, then one cut in the middle of its answer.
      const first = await collect(
        (await stream(urlA, session, headers, "What's the weather in Berlin?")).events
      )
      expect(first.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const committed = (await call(`${urlA}/messages/${session}`, { headers })).body.messages
      expect(committed.length).toBeGreaterThan(1)
      const { response, events } = await stream(urlA, session, headers, "Say something long.")
      const runId = response.headers.get("x-run-id")!
      const iterator = events[Symbol.asyncIterator]()
      const seen: Array<EventSink.AgentEvent> = []
      let streamed = ""
      while (streamed !== "The first words arrive, ") {
        const e = (await iterator.next()).value as EventSink.AgentEvent
        seen.push(e)
        if (e._tag === "message") streamed += e.content
      }

      // B boots while the run is live on A: the run goes on.
      b = spawnServe(command, root, hostEnv("b"))
      const urlB = await b.url
      expect((await call(`${urlB}/sessions/${session}/run`, { headers })).body.run).toMatchObject({
        runId,
        status: "running"
      })

      a.child.kill("SIGKILL")
      await a.exited
      // A rejoin on B right away follows the run until its lease lapses, then gets its done.
      const started = Date.now()
      const rejoined = await fetch(`${urlB}/runs/${encodeURIComponent(runId)}?after=0`, { headers })
      const replay = await collect(readSse(rejoined.body!))
      expect(Date.now() - started).toBeLessThan(TTL_MS * 4)
      expect(replay.slice(0, seen.length)).toEqual(seen)
      expect(replay.at(-1)).toEqual({
        _tag: "done",
        status: "interrupted",
        reason: "host-lost",
        partialText: streamed
      })
      expect((await call(`${urlB}/sessions/${session}/run`, { headers })).body).toEqual({ run: null })

      // The session's next turn, on B, works and builds on every committed message.
      const next = await collect(
        (await stream(urlB, session, headers, "What's the weather in Tokyo?")).events
      )
      expect(next.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const history = (await call(`${urlB}/messages/${session}`, { headers })).body.messages
      expect(history.slice(0, committed.length)).toEqual(committed)
      expect(JSON.stringify(history.at(-1))).toContain("Tokyo")
    } finally {
      if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill("SIGKILL")
      if (b !== undefined) {
        b.child.kill("SIGTERM")
        await b.exited
      }
    }
  }, 120_000)
})
