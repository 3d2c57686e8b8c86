/**
 * Runs that wait for approval (issue 40, docs/waiting.md), end to end on SQLite: a call to a tool
 * that needs approval stops the run with a `waiting` frame; `POST /runs/:runId/resume` answers it
 * once (its owner only), and the resumed run streams the tool's answer (approve) or the model's
 * answer to "not approved" (deny); a late answer finds the wait answered `timed-out` by the host.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { type EventSink, Wait } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner } from "@plugboard/ucan"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import { paymentsPlugin } from "./fixtures/payments.js"
import {
  call,
  collect,
  headersFor,
  newSession,
  type Running,
  spawnServe,
  start,
  stream,
  user
} from "./helpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(here, "../../..")

const ran: Array<number> = []
const payments = paymentsPlugin(ran)

let server: Running | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
  ran.length = 0
})

const boot = async (answer: string, env: Record<string, string> = {}) => {
  server = await start({
    plugins: [payments],
    model: ScriptedChatModel.script([{ tool: "pay", args: { amount: 5 } }, answer]),
    env
  })
  return server
}

const resume = (url: string, runId: string, headers: Record<string, string>, body: unknown) =>
  fetch(`${url}/runs/${encodeURIComponent(runId)}/resume`, {
    method: "POST",
    headers,
    body: JSON.stringify(body)
  })

type Waiting = Extract<EventSink.AgentEvent, { _tag: "waiting" }>

/** Posts "Pay 5" and reads the run to its end: it waits. */
const payAndWait = async (s: Running, headers: Record<string, string>) => {
  const session = await newSession(s.url, headers)
  const { response, events } = await stream(s.url, session, headers, "Pay 5")
  const runId = response.headers.get("x-run-id")!
  const all = await collect(events)
  const waiting = all.find((e): e is Waiting => e._tag === "waiting")
  return { session, runId, all, waiting: waiting! }
}

describe("a run that waits for approval", () => {
  it("stops before the tool runs; the owner's approval runs it once and streams the answer; a second approval gets the first back", async () => {
    const s = await boot("Paid 5.")
    const u = await user(s.app.oracleDid)
    const { session, runId, all, waiting } = await payAndWait(s, u.headers)
    expect(all.map((e) => e._tag)).toEqual(["run", "waiting", "done"])
    expect(waiting).toMatchObject({
      runId,
      kind: "approval",
      plugin: "payments",
      tool: "pay",
      args: { amount: 5 }
    })
    expect(all.at(-1)).toMatchObject({ status: "interrupted", reason: "waiting" })
    expect(ran).toEqual([])
    // Kept: the wait, unanswered, readable by its user.
    const before = await call(`${s.url}/runs/${runId}/waits`, { headers: u.headers })
    expect(before.status).toBe(200)
    expect(before.body.waits).toHaveLength(1)
    expect(before.body.waits[0]).toMatchObject({ waitId: waiting.waitId, answered: null, sessionId: session })

    const answered = await resume(s.url, runId, u.headers, { decision: "approve" })
    expect(answered.status).toBe(200)
    expect(answered.headers.get("content-type")).toContain("text/event-stream")
    const resumedRunId = answered.headers.get("x-run-id")
    expect(resumedRunId).toBe(before.body.waits[0].resumedRunId)
    const resumed = await collect(readSse(answered.body!))
    // The answer streams as message chunks.
    const tags = resumed.map((e) => e._tag).filter((t, i, all) => t !== "message" || all[i - 1] !== "message")
    expect(tags).toEqual(["run", "tool_call", "tool_call", "message", "done"])
    expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
      toolName: "pay",
      output: "paid 5"
    })
    expect(
      resumed
        .filter((e) => e._tag === "message")
        .map((e) => e._tag === "message" && e.content)
        .join("")
    ).toBe("Paid 5.")
    expect(resumed.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual([5])

    // A double click: the first answer back, nothing runs again.
    const again = await call(`${s.url}/runs/${runId}/resume`, {
      method: "POST",
      headers: u.headers,
      body: { decision: "deny" }
    })
    expect(again.status).toBe(200)
    expect(again.body.already).toBe(true)
    expect(again.body.wait.answered).toMatchObject({
      answer: { _tag: "decision", approved: true },
      by: u.did
    })
    expect(ran).toEqual([5])

    // The audit record: who, when, what.
    const after = await call(`${s.url}/runs/${runId}/waits`, { headers: u.headers })
    expect(after.body.waits[0].answered).toMatchObject({
      answer: { _tag: "decision", approved: true },
      by: u.did
    })
    expect(Number.isNaN(Date.parse(after.body.waits[0].answered.at))).toBe(false)

    // The thread has the call and its answer once.
    const history = (await call(`${s.url}/messages/${session}`, { headers: u.headers })).body
      .messages as Array<{
      type: string
      content: string
    }>
    expect(history.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"])
    expect(history.filter((m) => m.type === "tool").map((m) => m.content)).toEqual(["paid 5"])
  }, 60_000)

  it("approvals sent at once (a double click, two tabs) record one answer and run the tool once", async () => {
    const s = await boot("Paid 5.")
    const u = await user(s.app.oracleDid)
    const { runId } = await payAndWait(s, u.headers)
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => resume(s.url, runId, u.headers, { decision: "approve" }))
    )
    const streamed = answers.filter((r) => r.headers.get("content-type")?.includes("text/event-stream"))
    expect(streamed).toHaveLength(1)
    const others = await Promise.all(
      answers
        .filter((r) => !streamed.includes(r))
        .map(async (r) => [r.status, (await r.json()) as { already?: boolean }] as const)
    )
    expect(others.map(([status, body]) => [status, body.already])).toEqual(Array(5).fill([200, true]))
    const resumed = await collect(readSse(streamed[0]!.body!))
    expect(resumed.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual([5])
  }, 60_000)

  it("a JSON turn (not a run) cannot wait: it fails cannot-wait and the tool does not run", async () => {
    const s = await boot("Paid.")
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const r = await call(`${s.url}/messages/${session}`, {
      method: "POST",
      headers: u.headers,
      body: { message: "Pay 5" }
    })
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: "cannot-wait" })
    expect(r.body.message).toContain("only a streamed turn")
    expect(ran).toEqual([])
  }, 60_000)

  it("only its owner can resume it or read its wait: another user's is 404, and nothing is recorded", async () => {
    const s = await boot("Paid.")
    const owner = await user(s.app.oracleDid)
    const other = await user(s.app.oracleDid)
    const { runId } = await payAndWait(s, owner.headers)
    const refused = await call(`${s.url}/runs/${runId}/resume`, {
      method: "POST",
      headers: other.headers,
      body: { decision: "approve" }
    })
    expect(refused.status).toBe(404)
    expect((await call(`${s.url}/runs/${runId}/waits`, { headers: other.headers })).status).toBe(404)
    expect(
      (await call(`${s.url}/runs/${runId}/waits`, { headers: owner.headers })).body.waits[0].answered
    ).toBe(null)
    expect(ran).toEqual([])
    // A bad body is a 400 naming the field; an unknown run a 404.
    const bad = await call(`${s.url}/runs/${runId}/resume`, {
      method: "POST",
      headers: owner.headers,
      body: { decision: "maybe" }
    })
    expect(bad.status).toBe(400)
    const unknown = await call(`${s.url}/runs/run_nope/resume`, {
      method: "POST",
      headers: owner.headers,
      body: { decision: "approve" }
    })
    expect(unknown.status).toBe(404)
  }, 60_000)

  it("a denial gives the model 'not approved'; the tool never runs and the turn ends normally", async () => {
    const s = await boot("I did not pay.")
    const u = await user(s.app.oracleDid)
    const { session, runId } = await payAndWait(s, u.headers)
    const answered = await resume(s.url, runId, u.headers, { decision: "deny", note: "too much" })
    const resumed = await collect(readSse(answered.body!))
    expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
      toolName: "pay",
      output: `${Wait.NOT_APPROVED} The user said: too much`,
      isError: true
    })
    expect(resumed.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual([])
    const history = (await call(`${s.url}/messages/${session}`, { headers: u.headers })).body
      .messages as Array<{
      type: string
      content: string
    }>
    expect(history.at(-1)).toMatchObject({ type: "ai", content: "I did not pay." })
  }, 60_000)

  it("past WAIT_TIMEOUT_MS the host has answered it timed-out: a late approval is not recorded and the tool never runs", async () => {
    const s = await boot("No answer came.", { WAIT_TIMEOUT_MS: "1" })
    const u = await user(s.app.oracleDid)
    const { runId } = await payAndWait(s, u.headers)
    const late = await call(`${s.url}/runs/${runId}/resume`, {
      method: "POST",
      headers: u.headers,
      body: { decision: "approve" }
    })
    // The host's timer answered first (200, already) or the late answer found it past its deadline (409).
    expect([200, 409]).toContain(late.status)
    expect(late.body.wait.answered).toMatchObject({ answer: { _tag: "timed-out" }, by: "host" })
    expect(ran).toEqual([])
    // The run the host resumed (no client listening) ends, and a client rejoining it reads to its `done`.
    const rejoined = await fetch(`${s.url}/runs/${late.body.wait.resumedRunId}?after=0`, {
      headers: u.headers
    })
    const frames = await collect(readSse(rejoined.body!))
    expect(frames.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
      toolName: "pay",
      output: Wait.NO_ANSWER
    })
    expect(frames.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
  }, 60_000)
})

describe("an approval across a kill -9", () => {
  const cwd = mkdtempSync(join(tmpdir(), "plugboard-approval-kill-"))
  const log = join(cwd, "pay.log")
  const command = [
    process.execPath,
    "--conditions=@plugboard/source",
    join(ROOT, "scripts/plugboard.mjs"),
    "serve",
    join(here, "fixtures", "approvals", "pay.ts")
  ] as const
  afterAll(() => rmSync(cwd, { recursive: true, force: true }))

  it("a run waits, the server is killed, and after the restart the approval runs the tool once and streams the answer", async () => {
    const signer = await generateSigner()
    const first = spawnServe(command, cwd, { PORT: "0", PAY_LOG: log })
    let runId: string
    let session: string
    try {
      const url = await first.url
      const oracleDid = (await call(`${url}/health`)).body.oracleDid as string
      const headers = await headersFor(signer, oracleDid)
      session = await newSession(url, headers)
      const { response, events } = await stream(url, session, headers, "Pay 5 euros")
      runId = response.headers.get("x-run-id")!
      const all = await collect(events)
      expect(all.find((e) => e._tag === "waiting")).toMatchObject({ tool: "pay", args: { amount: 5 } })
      first.child.kill("SIGKILL")
      await first.exited
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill("SIGKILL")
    }

    const second = spawnServe(command, cwd, { PORT: "0", PAY_LOG: log })
    try {
      const url = await second.url
      const oracleDid = (await call(`${url}/health`)).body.oracleDid as string
      const headers = await headersFor(signer, oracleDid)
      const waits = await call(`${url}/runs/${runId}/waits`, { headers })
      expect(waits.body.waits[0]).toMatchObject({ answered: null, request: { tool: "pay" } })
      const answered = await resume(url, runId, headers, { decision: "approve" })
      expect(answered.status).toBe(200)
      const resumed = await collect(readSse(answered.body!))
      expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
        toolName: "pay",
        output: "paid 5 euros"
      })
      expect(resumed.at(-1)).toMatchObject({ status: "finished" })
      expect(resumed.some((e) => e._tag === "message")).toBe(true)
      // A second approval (another tab) runs nothing.
      const again = await call(`${url}/runs/${runId}/resume`, {
        method: "POST",
        headers,
        body: { decision: "approve" }
      })
      expect(again.body.already).toBe(true)
      expect(readFileSync(log, "utf8")).toBe("paid 5\n")
      const history = (await call(`${url}/messages/${session}`, { headers })).body.messages as Array<{
        type: string
      }>
      expect(history.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"])
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
  }, 120_000)
})
