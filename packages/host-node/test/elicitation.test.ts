/**
 * MCP elicitation as an `input` wait on the live call (issue 40, docs/waiting.md): a real server
 * on the official SDK asks, inside its tool call, for a form (`server.server.elicitInput`); the
 * run emits a `waiting` frame of kind `input` with the question and the schema, and goes on
 * streaming once `POST /runs/:runId/resume {values}` (or `{decline: true}`) answers it: the server
 * receives the values, and the tool's result shows them. Values that do not fit the schema are
 * refused with 400 and why; another user's answer is 404; an answer is recorded once; with no
 * answer by `WAIT_TIMEOUT_MS` the server is declined; a JSON turn cannot ask (declined at once).
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { EventSink } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { afterEach, describe, expect, it } from "vitest"
import { call, newSession, type Running, start, stream, user } from "./helpers.js"
import { answerTo, toolText } from "./mcpHelpers.js"

const here = dirname(fileURLToPath(import.meta.url))

let server: Running | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
})

const boot = async (env: Record<string, string> = {}) => {
  server = await start({
    plugins: [],
    mcpServers: {
      mcpServers: {
        asking: {
          command: process.execPath,
          args: [join(here, "fixtures", "mcp", "asking-server.mjs")],
          timeoutMs: 30_000
        }
      }
    },
    model: ScriptedChatModel.script([
      { tool: "load_capability", args: { names: ["asking"] } },
      { tool: "ask_name", args: {} },
      (t) => `Told: ${toolText(answerTo(t, "ask_name"))}`
    ]),
    env
  })
  return server
}

type Waiting = Extract<EventSink.AgentEvent, { _tag: "waiting" }>

/** Starts "Who am I?" and reads the stream up to its `waiting` frame; `rest` reads the remainder. */
const askAndWait = async (s: Running, headers: Record<string, string>) => {
  const session = await newSession(s.url, headers)
  const { response, events } = await stream(s.url, session, headers, "Who am I?")
  const runId = response.headers.get("x-run-id")!
  const iterator = events[Symbol.asyncIterator]()
  const before: Array<EventSink.AgentEvent> = []
  for (;;) {
    const next = await iterator.next()
    if (next.done) throw new Error(`the run ended without waiting: ${JSON.stringify(before)}`)
    before.push(next.value)
    if (next.value._tag === "waiting") break
  }
  const rest = async () => {
    const after: Array<EventSink.AgentEvent> = []
    for (;;) {
      const next = await iterator.next()
      if (next.done) return after
      after.push(next.value)
    }
  }
  return { runId, session, waiting: before.at(-1) as Waiting, rest }
}

const resume = (s: Running, runId: string, headers: Record<string, string>, body: unknown) =>
  call(`${s.url}/runs/${encodeURIComponent(runId)}/resume`, { method: "POST", headers, body })

const askOutput = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.find((e) => e._tag === "tool_call" && e.status === "done" && e.toolName === "ask_name") as
    | { output?: string }
    | undefined

describe("an MCP server's elicitation, answered through the run", () => {
  it("emits a waiting frame of kind input; the owner's values reach the server once (two answers at once: one recorded), and the run goes on", async () => {
    const s = await boot()
    const u = await user(s.app.oracleDid)
    const { runId, waiting, rest } = await askAndWait(s, u.headers)
    expect(waiting).toMatchObject({
      runId,
      kind: "input",
      plugin: "asking",
      tool: "ask_name",
      message: "Who are you?",
      schema: { type: "object", required: ["name", "age"] }
    })
    expect(Number.isNaN(Date.parse(waiting.deadline))).toBe(false)
    // Readable by its user while it waits.
    const open = await call(`${s.url}/runs/${runId}/waits`, { headers: u.headers })
    expect(open.body.waits).toEqual([
      expect.objectContaining({ waitId: waiting.waitId, answered: null, resumedRunId: null })
    ])

    const values = { name: "Ada", age: 36, newsletter: true, colour: "green" }
    // A double click: one answer is recorded and reaches the server; the other is not (already
    // answered, or the call has ended: no run waits).
    const both = await Promise.all([
      resume(s, runId, u.headers, { values }),
      resume(s, runId, u.headers, { values: { ...values, name: "Twice" } })
    ])
    const recorded = both.filter((r) => r.body.answered === true)
    expect(recorded).toHaveLength(1)
    expect(recorded[0]!.status).toBe(200)
    const first = recorded[0]!.body.wait.answered.answer.values as typeof values
    expect(
      both.filter((r) => r !== recorded[0]).map((r) => r.body.already === true || r.status === 404)
    ).toEqual([true])
    const after = await rest()
    expect(askOutput(after)?.output).toBe(`elicited: ${JSON.stringify({ action: "accept", content: first })}`)
    expect(after.at(-1)).toMatchObject({ _tag: "done", status: "finished" })

    // The record stays: who answered, what.
    const audit = await call(`${s.url}/runs/${runId}/waits`, { headers: u.headers })
    expect(audit.body.waits).toHaveLength(1)
    expect(audit.body.waits[0].answered).toMatchObject({
      answer: { _tag: "values", values: first },
      by: u.did
    })
  }, 60_000)

  it("a decline goes back to the server as decline", async () => {
    const s = await boot()
    const u = await user(s.app.oracleDid)
    const { runId, rest } = await askAndWait(s, u.headers)
    const answered = await resume(s, runId, u.headers, { decline: true })
    expect(answered.status).toBe(200)
    const after = await rest()
    expect(askOutput(after)?.output).toBe(`elicited: ${JSON.stringify({ action: "decline" })}`)
    expect(after.at(-1)).toMatchObject({ status: "finished" })
  }, 60_000)

  it("values that do not fit the schema, or a decision, are refused with 400 and why, and the wait stays open; another user's answer is 404", async () => {
    const s = await boot()
    const u = await user(s.app.oracleDid)
    const other = await user(s.app.oracleDid)
    const { runId, rest } = await askAndWait(s, u.headers)

    const wrongType = await resume(s, runId, u.headers, { values: { name: "Ada", age: "old" } })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.message).toContain("values/age must be integer")
    const missing = await resume(s, runId, u.headers, { values: { age: 3 } })
    expect(missing.status).toBe(400)
    expect(missing.body.message).toContain("must have required property 'name'")
    const notInEnum = await resume(s, runId, u.headers, { values: { name: "A", age: 3, colour: "pink" } })
    expect(notInEnum.status).toBe(400)
    expect(notInEnum.body.message).toContain("values/colour must be equal to one of the allowed values")
    const decision = await resume(s, runId, u.headers, { decision: "approve" })
    expect(decision.status).toBe(400)
    expect(decision.body.message).toContain(
      "a wait for input is answered with 'values' or 'declined', not 'decision'"
    )
    const bodyless = await resume(s, runId, u.headers, { values: "Ada" })
    expect(bodyless.status).toBe(400)

    const foreign = await resume(s, runId, other.headers, { values: { name: "Eve", age: 1 } })
    expect(foreign.status).toBe(404)
    expect((await call(`${s.url}/runs/${runId}/waits`, { headers: other.headers })).status).toBe(404)

    // Still open: the owner's good answer is the one the server gets.
    const good = await resume(s, runId, u.headers, { values: { name: "Ada", age: 36 } })
    expect(good.status).toBe(200)
    const after = await rest()
    expect(askOutput(after)?.output).toBe(
      `elicited: ${JSON.stringify({ action: "accept", content: { name: "Ada", age: 36 } })}`
    )
  }, 60_000)

  it("with no answer by WAIT_TIMEOUT_MS the server is declined and the run goes on; the record says timed-out by the host", async () => {
    const s = await boot({ WAIT_TIMEOUT_MS: "300" })
    const u = await user(s.app.oracleDid)
    const { runId, rest } = await askAndWait(s, u.headers)
    const after = await rest()
    expect(askOutput(after)?.output).toBe(`elicited: ${JSON.stringify({ action: "decline" })}`)
    expect(after.at(-1)).toMatchObject({ status: "finished" })
    const audit = await call(`${s.url}/runs/${runId}/waits`, { headers: u.headers })
    expect(audit.body.waits[0].answered).toMatchObject({ answer: { _tag: "timed-out" }, by: "host" })
    // The call has ended: a late answer finds no run waiting.
    const late = await resume(s, runId, u.headers, { values: { name: "Ada", age: 36 } })
    expect(late.status).toBe(404)
  }, 60_000)

  it("a question's deadline comes before the turn's wall clock: declined then, and the turn still finishes", async () => {
    // TURN_TIMEOUT_MS 16 s: the question is answered at the latest 15 s before it (here, 1 s in),
    // long before WAIT_TIMEOUT_MS (10 minutes by default).
    const s = await boot({ TURN_TIMEOUT_MS: "16000" })
    const u = await user(s.app.oracleDid)
    const asked = Date.now()
    const { waiting, rest } = await askAndWait(s, u.headers)
    expect(Date.parse(waiting.deadline) - asked).toBeLessThan(3_000)
    const after = await rest()
    expect(askOutput(after)?.output).toBe(`elicited: ${JSON.stringify({ action: "decline" })}`)
    expect(after.at(-1)).toMatchObject({ status: "finished" })
  }, 60_000)

  it("the user aborts the run while asked: the run ends aborted, the record is closed at once (timed-out by the host), a later answer is 404", async () => {
    const s = await boot()
    const u = await user(s.app.oracleDid)
    const { runId, session, rest } = await askAndWait(s, u.headers)
    const aborted = await call(`${s.url}/messages/abort`, {
      method: "POST",
      headers: u.headers,
      body: { sessionId: session }
    })
    expect(aborted.status).toBe(200)
    const after = await rest()
    expect(after.at(-1)).toMatchObject({ _tag: "done", status: "aborted" })
    const audit = await call(`${s.url}/runs/${runId}/waits`, { headers: u.headers })
    expect(audit.body.waits[0].answered).toMatchObject({ answer: { _tag: "timed-out" }, by: "host" })
    expect((await resume(s, runId, u.headers, { values: { name: "Ada", age: 36 } })).status).toBe(404)
  }, 60_000)

  it("a JSON turn cannot ask: the server is declined at once", async () => {
    const s = await boot()
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const r = await call(`${s.url}/messages/${session}`, {
      method: "POST",
      headers: u.headers,
      body: { message: "Who am I?" }
    })
    expect(r.status).toBe(200)
    expect(JSON.stringify(r.body)).toContain(
      `elicited: ${JSON.stringify({ action: "decline" }).replaceAll('"', '\\"')}`
    )
  }, 60_000)
})
