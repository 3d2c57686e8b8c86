/**
 * A code-mode program's call to a tool that needs approval waits as a direct call does
 * (docs/waiting.md#programs-that-wait), through the server with the real QuickJS sandbox: the
 * program stops, the run ends waiting, and the resumed run replays the program from its journal,
 * so that no earlier call runs twice. A denial reaches the program as an error; a program that
 * makes other calls when run again is stopped; a program beside other calls does not wait.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  CodeMode,
  definePlugin,
  defineTool,
  type EventSink,
  ProgramWait,
  Wait,
  WaitStore
} from "@plugboard/core"
import { ScriptedChatModel, type ScriptedTurn } from "@plugboard/models"
import { Schema } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import { call, collect, headersFor, newSession, type Running, start, stream, user } from "./helpers.js"

const ran: Array<string> = []
const ledger = definePlugin({
  name: "ledger",
  manifest: { title: "Ledger", summary: "Balance and payments.", whenToUse: ["pay"], visibility: "always" },
  tools: [
    defineTool({
      name: "balance",
      description: "Reads the balance.",
      input: Schema.Struct({}),
      handler: () => {
        ran.push("balance")
        return "100"
      }
    }),
    defineTool({
      name: "quote",
      description: "Quotes a price for a number.",
      input: Schema.Struct({ n: Schema.Number }),
      handler: ({ n }) => {
        ran.push("quote")
        return `quote ${n}`
      }
    }),
    defineTool({
      name: "statement",
      description: "Reads a long statement.",
      input: Schema.Struct({}),
      handler: () => {
        ran.push("statement")
        return "x".repeat(WaitStore.MAX_JSON_LENGTH)
      }
    }),
    defineTool({
      name: "pay",
      description: "Pays an amount.",
      input: Schema.Struct({ amount: Schema.Number }),
      requiresApproval: true,
      handler: ({ amount }) => {
        ran.push(`pay ${amount}`)
        return `paid ${amount}`
      }
    })
  ]
})

type Waiting = Extract<EventSink.AgentEvent, { _tag: "waiting" }>
const program = (code: string) => [{ tool: CodeMode.RUN_CODE, args: { code } }]
const lastToolText = (t: ScriptedTurn): string => String(t.messages.at(-1)?.content)
const toolDone = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.flatMap((e) => (e._tag === "tool_call" && e.status === "done" ? [[e.toolName, e.output]] : []))

let server: Running | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
  ran.length = 0
})

const boot = async (
  script: Parameters<typeof ScriptedChatModel.script>[0],
  env: Record<string, string> = {}
) => {
  server = await start({
    plugins: [ledger],
    model: ScriptedChatModel.script(script),
    env: { CODE_MODE: "on", ...env }
  })
  return server
}

/** Posts a message and reads the run to its end. */
const turn = async (s: Running, headers: Record<string, string>, session: string) => {
  const { response, events } = await stream(s.url, session, headers, "Pay")
  const all = await collect(events)
  return {
    runId: response.headers.get("x-run-id")!,
    all,
    waiting: all.find((e): e is Waiting => e._tag === "waiting")
  }
}

const resume = async (url: string, runId: string, headers: Record<string, string>, body: unknown) => {
  const response = await fetch(`${url}/runs/${encodeURIComponent(runId)}/resume`, {
    method: "POST",
    headers,
    body: JSON.stringify(body)
  })
  expect(response.status).toBe(200)
  const all = await collect(readSse(response.body!))
  return {
    runId: response.headers.get("x-run-id")!,
    all,
    waiting: all.find((e): e is Waiting => e._tag === "waiting")
  }
}

describe("a program that waits for approval", () => {
  it("stops at the call, and the approval replays it: the earlier call does not run again, the approved one runs once", async () => {
    const told: Array<string> = []
    const s = await boot([
      program(
        "const b = await tools.ledger.balance({}); const r = await tools.ledger.pay({ amount: 5 }); return { b, r }"
      ),
      (t) => {
        told.push(lastToolText(t))
        return "Paid 5."
      }
    ])
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const first = await turn(s, u.headers, session)
    expect(first.waiting).toMatchObject({
      kind: "approval",
      plugin: "ledger",
      tool: "pay",
      args: { amount: 5 }
    })
    // The frame never carries the program's journal; the wait record keeps it, for its user.
    expect(first.waiting).not.toHaveProperty("program")
    expect(first.all.at(-1)).toMatchObject({ status: "interrupted", reason: "waiting" })
    expect(toolDone(first.all)).toEqual([
      ["balance", "100"],
      [
        CodeMode.RUN_CODE,
        "Waiting: the program's call to 'pay' needs the user's approval; it runs again once they answer."
      ]
    ])
    expect(ran).toEqual(["balance"])
    const waits = await call(`${s.url}/runs/${first.runId}/waits`, { headers: u.headers })
    expect(waits.body.waits[0].request.program).toEqual({
      calls: [{ tool: "balance", args: {}, answer: { ok: true, value: 100 } }]
    })

    const second = await resume(s.url, first.runId, u.headers, { decision: "approve" })
    expect(second.all.at(-1)).toMatchObject({ status: "finished" })
    // The replayed call is not run, nor reported again: only the approved call and the program.
    expect(toolDone(second.all)).toEqual([
      ["pay", "paid 5"],
      [CodeMode.RUN_CODE, JSON.stringify({ b: 100, r: "paid 5" })]
    ])
    expect(ran).toEqual(["balance", "pay 5"])
    expect(JSON.parse(told[0]!)).toEqual({ b: 100, r: "paid 5" })
  })

  it("a second call that needs approval waits again, with the longer journal; each approved call runs once", async () => {
    const s = await boot([
      program(
        "const a = await tools.ledger.pay({ amount: 5 }); const b = await tools.ledger.pay({ amount: 7 }); return [a, b]"
      ),
      "Paid both."
    ])
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const first = await turn(s, u.headers, session)
    expect(first.waiting).toMatchObject({ tool: "pay", args: { amount: 5 } })
    const second = await resume(s.url, first.runId, u.headers, { decision: "approve" })
    expect(second.waiting).toMatchObject({ tool: "pay", args: { amount: 7 } })
    expect(ran).toEqual(["pay 5"])
    const waits = await call(`${s.url}/runs/${second.runId}/waits`, { headers: u.headers })
    expect(waits.body.waits[0].request.program.calls).toEqual([
      { tool: "pay", args: { amount: 5 }, answer: { ok: true, value: "paid 5" } }
    ])
    const third = await resume(s.url, second.runId, u.headers, { decision: "approve" })
    expect(third.all.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual(["pay 5", "pay 7"])
  })

  it("a denial reaches the program as the error core words; the tool never runs and the turn ends normally", async () => {
    const told: Array<string> = []
    const s = await boot([
      program(
        "try { return await tools.ledger.pay({ amount: 9 }) } catch (e) { return 'refused: ' + e.message }"
      ),
      (t) => {
        told.push(lastToolText(t))
        return "Not paid."
      }
    ])
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const first = await turn(s, u.headers, session)
    const second = await resume(s.url, first.runId, u.headers, { decision: "deny", note: "too much" })
    expect(second.all.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual([])
    expect(told[0]).toContain(`refused: ${Wait.NOT_APPROVED} The user said: too much`)
  })

  it("a program that makes other calls when run again is stopped there: nothing more runs, and the model is told", async () => {
    const told: Array<string> = []
    const s = await boot([
      program("await tools.ledger.quote({ n: Math.random() }); return await tools.ledger.pay({ amount: 5 })"),
      (t) => {
        told.push(lastToolText(t))
        return "It changed."
      }
    ])
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const first = await turn(s, u.headers, session)
    expect(first.waiting).toMatchObject({ tool: "pay" })
    const second = await resume(s.url, first.runId, u.headers, { decision: "approve" })
    expect(second.all.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual(["quote"])
    expect(told[0]).toContain("The program stopped: it was run again after its user answered, and its call 1")
  })

  it("a program beside another call does not wait: its call is refused, and the step goes on", async () => {
    const told: Array<string> = []
    const s = await boot([
      [
        ...program("try { return await tools.ledger.pay({ amount: 5 }) } catch (e) { return e.message }"),
        { tool: "balance", args: {} }
      ],
      (t) => {
        told.push(...t.messages.slice(-2).map((m) => String(m.content)))
        return "Done."
      }
    ])
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const first = await turn(s, u.headers, session)
    expect(first.waiting).toBeUndefined()
    expect(first.all.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual(["balance"])
    expect(told).toContain(ProgramWait.NOT_ALONE)
  })

  it("a program whose earlier answers are too large to keep does not wait: its call is refused, saying why", async () => {
    const told: Array<string> = []
    const s = await boot([
      program(
        "const st = await tools.ledger.statement({}); try { return await tools.ledger.pay({ amount: 5 }) } catch (e) { return e.message }"
      ),
      (t) => {
        told.push(lastToolText(t))
        return "Not paid."
      }
    ])
    const u = await user(s.app.oracleDid)
    const session = await newSession(s.url, u.headers)
    const first = await turn(s, u.headers, session)
    expect(first.waiting).toBeUndefined()
    expect(first.all.at(-1)).toMatchObject({ status: "finished" })
    expect(ran).toEqual(["statement"])
    expect(told[0]).toBe(ProgramWait.TOO_LARGE(WaitStore.MAX_JSON_LENGTH))
  })
})

describe("a program's wait across a restart", () => {
  it("the resumed run on a new app over the same data replays the stored journal", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-program-wait-"))
    const script = [
      program("const b = await tools.ledger.balance({}); return [b, await tools.ledger.pay({ amount: 3 })]"),
      "Paid 3."
    ]
    try {
      const first = await start({
        plugins: [ledger],
        model: ScriptedChatModel.script(script),
        env: { CODE_MODE: "on", PLUGBOARD_DATA_DIR: dir }
      })
      const u = await user(first.app.oracleDid)
      const session = await newSession(first.url, u.headers)
      const waited = await turn(first, u.headers, session)
      expect(waited.waiting).toMatchObject({ tool: "pay", args: { amount: 3 } })
      await first.app.close(2_000)
      // A new process's model: the script's first answer was the first app's.
      server = await start({
        plugins: [ledger],
        model: ScriptedChatModel.script(script.slice(1)),
        env: { CODE_MODE: "on", PLUGBOARD_DATA_DIR: dir }
      })
      const headers = await headersFor(u.signer, server.app.oracleDid)
      const resumed = await resume(server.url, waited.runId, headers, { decision: "approve" })
      expect(resumed.all.at(-1)).toMatchObject({ status: "finished" })
      expect(ran).toEqual(["balance", "pay 3"])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
