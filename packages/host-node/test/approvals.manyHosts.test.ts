/**
 * Approvals across two hosts (issue 40, docs/waiting.md, "Across hosts"): two `plugboard serve`
 * processes share one Postgres (`DATABASE_URL`: the wait store, runs, checkpoints) and one Redis
 * (`REDIS_URL`). A turn on host A stops for approval; the resume is sent to host B:
 * - an approval on B runs the tool once and its answer streams from B; a second approval sent to A
 *   gets `already` with B's answer and runs nothing;
 * - approvals sent to both hosts at once record one answer and run the tool once;
 * - a denial on the other host gives the model "not approved", and the turn ends normally;
 * - a turn waiting on a host killed with -9 is approved on another: the tool runs once;
 * - another user's resume is a 404 on either host, and records nothing.
 * The hosts serve `fixtures/approvals/pay.ts`, whose `pay` tool appends a line to PAY_LOG each
 * time it runs (so runs are counted across both processes). Skipped, with the reason, when the
 * engines are not running.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { type EventSink, Wait } from "@plugboard/core"
import { generateSigner, loadOrCreateSigner } from "@plugboard/ucan"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import { call, collect, headersFor, newSession, spawnServe, stream } from "./helpers.js"
import { ENGINES, SKIP_REASON, sharedEngines } from "./manyHostsHelpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = join(here, "..", "..", "..")
const command = [
  process.execPath,
  "--conditions=@plugboard/source",
  join(ROOT, "scripts", "plugboard.mjs"),
  "serve",
  join(here, "fixtures", "approvals", "pay.ts"),
  "--port",
  "0",
  "--host",
  "127.0.0.1"
] as const

type Waiting = Extract<EventSink.AgentEvent, { _tag: "waiting" }>

describe.skipIf(!ENGINES)(
  `approvals on two plugboard serve processes sharing Postgres and Redis${ENGINES ? "" : `: ${SKIP_REASON}`}`,
  () => {
    const engines = sharedEngines("approvals_many")
    const root = mkdtempSync(join(tmpdir(), "plugboard-approvals-many-"))
    const log = join(root, "pay.log")
    const hostEnv = (name: string) => ({
      ...engines.env,
      PLUGBOARD_DATA_DIR: join(root, name),
      // One oracle: a user's token is good on every host.
      ORACLE_KEY_FILE: join(root, "oracle.key"),
      PAY_LOG: log
    })
    let a: ReturnType<typeof spawnServe>
    let b: ReturnType<typeof spawnServe>
    let urlA: string
    let urlB: string
    let oracleDid: string

    const member = async () => {
      const signer = await generateSigner()
      return { did: signer.did(), headers: await headersFor(signer, oracleDid) }
    }
    const payments = () => (existsSync(log) ? readFileSync(log, "utf8") : "")
    const resume = (url: string, runId: string, headers: Record<string, string>, body: unknown) =>
      fetch(`${url}/runs/${encodeURIComponent(runId)}/resume`, {
        method: "POST",
        headers,
        body: JSON.stringify(body)
      })

    /** On host A (or `url`): "Pay 5 euros" stops for approval; the run ends interrupted/waiting. */
    const waitOnA = async (headers: Record<string, string>, url = urlA) => {
      const session = await newSession(url, headers)
      const { response, events } = await stream(url, session, headers, "Pay 5 euros")
      const runId = response.headers.get("x-run-id")!
      const all = await collect(events)
      const waiting = all.find((e): e is Waiting => e._tag === "waiting")
      expect(waiting).toMatchObject({ runId, kind: "approval", tool: "pay", args: { amount: 5 } })
      expect(all.at(-1)).toMatchObject({ _tag: "done", status: "interrupted", reason: "waiting" })
      return { session, runId, waiting: waiting! }
    }

    beforeAll(async () => {
      mkdirSync(join(root, "a"))
      mkdirSync(join(root, "b"))
      oracleDid = (await loadOrCreateSigner(join(root, "oracle.key"))).signer.did()
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

    it("a wait opened on A is approved on B: the tool runs once, the answer streams from B; a second approval on A gets 'already' and runs nothing", async () => {
      const u = await member()
      const before = payments()
      const { session, runId, waiting } = await waitOnA(u.headers)
      expect(payments()).toBe(before)
      // B reads the wait A opened.
      const waits = await call(`${urlB}/runs/${runId}/waits`, { headers: u.headers })
      expect(waits.status).toBe(200)
      expect(waits.body.waits[0]).toMatchObject({
        waitId: waiting.waitId,
        answered: null,
        request: { tool: "pay" }
      })

      const answered = await resume(urlB, runId, u.headers, { decision: "approve" })
      expect(answered.status).toBe(200)
      expect(answered.headers.get("content-type")).toContain("text/event-stream")
      expect(answered.headers.get("x-run-id")).toBe(waits.body.waits[0].resumedRunId)
      const resumed = await collect(readSse(answered.body!))
      expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
        toolName: "pay",
        output: "paid 5 euros"
      })
      expect(resumed.some((e) => e._tag === "message")).toBe(true)
      expect(resumed.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(payments()).toBe(`${before}paid 5\n`)

      // The second approval, on A: B's answer comes back and nothing runs again.
      const again = await call(`${urlA}/runs/${runId}/resume`, {
        method: "POST",
        headers: u.headers,
        body: { decision: "approve" }
      })
      expect(again.status).toBe(200)
      expect(again.body.already).toBe(true)
      expect(again.body.wait.answered).toMatchObject({
        answer: { _tag: "decision", approved: true },
        by: u.did
      })
      expect(payments()).toBe(`${before}paid 5\n`)
      // A reads the same audit record, and the thread holds the call and its answer once.
      const audit = await call(`${urlA}/runs/${runId}/waits`, { headers: u.headers })
      expect(audit.body.waits[0].answered).toEqual(again.body.wait.answered)
      const history = (await call(`${urlA}/messages/${session}`, { headers: u.headers })).body
        .messages as Array<{
        type: string
        content: string
      }>
      expect(history.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"])
      expect(history.filter((m) => m.type === "tool").map((m) => m.content)).toEqual(["paid 5 euros"])
    }, 60_000)

    it("approvals sent to both hosts at once record one answer and run the tool once", async () => {
      const u = await member()
      const before = payments()
      const { runId } = await waitOnA(u.headers)
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          resume(i % 2 === 0 ? urlA : urlB, runId, u.headers, { decision: "approve" })
        )
      )
      const streamed = answers.filter((r) => r.headers.get("content-type")?.includes("text/event-stream"))
      expect(streamed).toHaveLength(1)
      const others = await Promise.all(
        answers
          .filter((r) => !streamed.includes(r))
          .map(async (r) => [r.status, ((await r.json()) as { already?: boolean }).already] as const)
      )
      expect(others).toEqual(Array(5).fill([200, true]))
      expect((await collect(readSse(streamed[0]!.body!))).at(-1)).toMatchObject({ status: "finished" })
      expect(payments()).toBe(`${before}paid 5\n`)
    }, 60_000)

    it("a denial on B gives the model 'not approved': the tool never runs and the turn ends normally", async () => {
      const u = await member()
      const before = payments()
      const { session, runId } = await waitOnA(u.headers)
      const answered = await resume(urlB, runId, u.headers, { decision: "deny", note: "not today" })
      expect(answered.status).toBe(200)
      const resumed = await collect(readSse(answered.body!))
      expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
        toolName: "pay",
        output: `${Wait.NOT_APPROVED} The user said: not today`,
        isError: true
      })
      expect(resumed.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(payments()).toBe(before)
      // An approval afterwards, on A, changes nothing.
      const late = await call(`${urlA}/runs/${runId}/resume`, {
        method: "POST",
        headers: u.headers,
        body: { decision: "approve" }
      })
      expect(late.body).toMatchObject({ already: true, wait: { answered: { answer: { approved: false } } } })
      expect(payments()).toBe(before)
      const history = (await call(`${urlA}/messages/${session}`, { headers: u.headers })).body
        .messages as Array<{
        type: string
        content: string
      }>
      expect(history.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"])
      expect(history[2]!.content).toContain(Wait.NOT_APPROVED)
    }, 60_000)

    it("a turn waits on host C, C is killed (-9), and the approval sent to B runs the tool once and streams the answer", async () => {
      const u = await member()
      const before = payments()
      mkdirSync(join(root, "c"))
      const c = spawnServe(command, root, hostEnv("c"))
      let runId: string
      let session: string
      try {
        ;({ runId, session } = await waitOnA(u.headers, await c.url))
        c.child.kill("SIGKILL")
        await c.exited
      } finally {
        if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL")
      }
      const answered = await resume(urlB, runId, u.headers, { decision: "approve" })
      expect(answered.status).toBe(200)
      const resumed = await collect(readSse(answered.body!))
      expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
        toolName: "pay",
        output: "paid 5 euros"
      })
      expect(resumed.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(payments()).toBe(`${before}paid 5\n`)
      const history = (await call(`${urlA}/messages/${session}`, { headers: u.headers })).body
        .messages as Array<{
        type: string
      }>
      expect(history.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"])
    }, 60_000)

    it("another user's resume is 404 on either host and records nothing", async () => {
      const owner = await member()
      const other = await member()
      const before = payments()
      const { runId } = await waitOnA(owner.headers)
      for (const url of [urlB, urlA]) {
        const refused = await call(`${url}/runs/${runId}/resume`, {
          method: "POST",
          headers: other.headers,
          body: { decision: "approve" }
        })
        expect(refused.status).toBe(404)
        expect((await call(`${url}/runs/${runId}/waits`, { headers: other.headers })).status).toBe(404)
      }
      expect(
        (await call(`${urlB}/runs/${runId}/waits`, { headers: owner.headers })).body.waits[0].answered
      ).toBe(null)
      expect(payments()).toBe(before)
    }, 60_000)
  }
)
