/**
 * Code mode through the server (`CODE_MODE=on`, docs/code-mode.md), with the real QuickJS sandbox:
 * the scripted router answers a request about three cities with one `run_code` program whose
 * calls stream as events nested under it, and a program's calls meet the same gate as direct
 * calls: a tool of a plugin not loaded is refused with core's message, invalid arguments get
 * core's validation message, the turn's tool-call bound ends the turn mid-program, and an abort
 * stops the program while it waits on a tool. Credits are priced per model call (core's
 * `CreditPricing`): a program's turn pays for its model calls and nothing for the calls it makes,
 * as a direct turn pays nothing for its tool calls, and a user without credits runs nothing.
 * Credits that run out during a program's turn end it as they end a direct turn.
 */
import {
  Catalog,
  Clock,
  CreditLedger,
  CreditPricing,
  definePlugin,
  defineTool,
  type EventSink,
  LoadedPlugins,
  Offer,
  ToolCall
} from "@plugboard/core"
import { ScriptedChatModel, type ScriptedTurn } from "@plugboard/models"
import { Effect, Either, Layer, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { getCurrentWeather, weather } from "../../../examples/plugins/weather.js"
import { creditsPlugin } from "../src/index.js"
import { call, collect, newSession, recordingLogger, start, stream, user } from "./helpers.js"

type ToolEvent = EventSink.AgentEvent & { readonly _tag: "tool_call" }
const toolEvents = (events: ReadonlyArray<EventSink.AgentEvent>) =>
  events.filter((e): e is ToolEvent => e._tag === "tool_call")
const doneOf = (events: ReadonlyArray<EventSink.AgentEvent>, name: string) =>
  toolEvents(events).filter((e) => e.toolName === name && e.status === "done")

/** The text the last tool message of the turn carries (what the model read of the program). */
const lastToolText = (t: ScriptedTurn): string => String(t.messages.at(-1)?.content)

/** A gate a tool waits on until the test opens it. */
const deferred = () => {
  let open = () => {}
  const wait = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, wait }
}

const vault = definePlugin({
  name: "vault",
  manifest: { title: "Vault", summary: "Secrets.", whenToUse: ["secrets"], visibility: "on-demand" },
  tools: [
    defineTool({
      name: "open_vault",
      description: "Opens the vault.",
      input: Schema.Struct({}),
      handler: () => "opened"
    })
  ]
})

/** Who a call runs as: whatever the program passes, the turn's user and session. */
const whoami = definePlugin({
  name: "whoami",
  manifest: { title: "Who am I", summary: "The caller.", whenToUse: ["who"], visibility: "always" },
  tools: [
    defineTool({
      name: "whoami",
      description: "Who the call runs as.",
      input: Schema.Struct({}),
      handler: (_, ctx) => ({ did: ctx.user.did, session: ctx.session.id })
    })
  ]
})

const slowGate = deferred()
const slowStarted = deferred()
const ran: Array<string> = []
const slow = definePlugin({
  name: "slow",
  manifest: { title: "Slow", summary: "Slow work.", whenToUse: ["slow"], visibility: "always" },
  tools: [
    defineTool({
      name: "slow_step",
      description: "One slow step.",
      input: Schema.Struct({ n: Schema.Number }),
      handler: async ({ n }) => {
        ran.push(`slow ${n}`)
        slowStarted.open()
        await slowGate.wait
        return { n }
      }
    }),
    defineTool({
      name: "count_step",
      description: "One quick step.",
      input: Schema.Struct({ n: Schema.Number }),
      handler: ({ n }) => {
        ran.push(`count ${n}`)
        return { n }
      }
    })
  ]
})

const program = (code: string) => [{ tool: "run_code", args: { code } }]

describe("code mode through the server (CODE_MODE=on)", () => {
  it("answers a request about three cities with one program; its calls stream nested under it", async () => {
    const server = await start({ env: { CODE_MODE: "on" } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const events = await collect(
        (await stream(server.url, session, u.headers, "What's the weather in Berlin, Paris and Rome?")).events
      )
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const [program] = doneOf(events, "run_code")
      expect(program?.isError).toBeUndefined()
      const nested = doneOf(events, "get_current_weather")
      expect(nested.map((e) => (e.args as { city: string }).city)).toEqual(["Berlin", "Paris", "Rome"])
      for (const e of nested) expect(e.parentEventId).toBe(program!.eventId)
      expect(JSON.parse(String(program!.output))).toMatchObject({
        Berlin: { city: "Berlin" },
        Paris: { city: "Paris" },
        Rome: { city: "Rome" }
      })
      // The thread keeps the program's answer, not the calls it made.
      const history = await call(`${server.url}/messages/${session}`, { headers: u.headers })
      const names = JSON.stringify(history.body)
      expect(names).toContain("run_code")
    } finally {
      await server.stop()
    }
  })

  it("gates a program's calls as direct ones: not loaded, invalid arguments", async () => {
    const told: Array<string> = []
    const model = ScriptedChatModel.script([
      program(`
        const out = []
        try { await tools.vault.open_vault({}) } catch (e) { out.push(e.message) }
        try { await tools.weather.get_current_weather({ town: "Oslo" }) } catch (e) { out.push(e.message) }
        out.push(JSON.stringify(await tools.whoami.whoami({ did: "did:key:other", session: "theirs" })))
        return out`),
      (t) => {
        told.push(lastToolText(t))
        return "Done."
      }
    ])
    // Weather always offered, so its tools are the program's from the first call.
    const alwaysWeather = { ...weather, manifest: { ...weather.manifest, visibility: "always" as const } }
    const server = await start({ plugins: [alwaysWeather, vault, whoami], model, env: { CODE_MODE: "on" } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const events = await collect((await stream(server.url, session, u.headers, "run it")).events)
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const catalog = Catalog.unsafeMake([alwaysWeather, vault])
      const step: ToolCall.Step = {
        catalog,
        offered: Offer.offer(catalog, LoadedPlugins.empty),
        loaded: LoadedPlugins.empty
      }
      const direct = ToolCall.plan(step, { name: "open_vault", args: {} })
      expect(direct._tag).toBe("Answer")
      const [notLoaded, invalid, whoami] = JSON.parse(told[0]!) as Array<string>
      expect(notLoaded).toBe(direct._tag === "Answer" ? direct.answer.content : "")
      const direct2 = ToolCall.decodeArguments(
        "get_current_weather",
        getCurrentWeather.input,
        { town: "Oslo" },
        0
      )
      expect(invalid).toBe(Either.isLeft(direct2) ? direct2.left.content : "")
      // The program names no user: its call ran as the turn's user, in the turn's session.
      expect(JSON.parse(whoami!)).toEqual({ did: u.did, session })
    } finally {
      await server.stop()
    }
  })

  it("ends the turn at TURN_MAX_TOOL_CALLS mid-program, as a direct call past it does", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([
      program("for (let n = 1; n <= 5; n++) await tools.slow.count_step({ n })\nreturn 'all'"),
      "never"
    ])
    const server = await start({ plugins: [slow], model, env: { CODE_MODE: "on", TURN_MAX_TOOL_CALLS: "3" } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const events = await collect((await stream(server.url, session, u.headers, "count")).events)
      // run_code is the first call; two of the program's fit under the bound of 3.
      expect(ran).toEqual(["count 1", "count 2"])
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "failed" })
      expect(JSON.stringify(events.at(-1))).toContain("max-tool-calls")
    } finally {
      await server.stop()
    }
  })

  it("stops a program waiting on a tool when the turn is aborted: nothing after it runs", async () => {
    ran.length = 0
    const model = ScriptedChatModel.script([
      program("await tools.slow.slow_step({ n: 1 })\nawait tools.slow.count_step({ n: 2 })\nreturn 'done'"),
      "never"
    ])
    const server = await start({ plugins: [slow], model, env: { CODE_MODE: "on" } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const { events } = await stream(server.url, session, u.headers, "slow")
      const collected = collect(events)
      await slowStarted.wait
      const aborted = await call(`${server.url}/messages/abort`, {
        method: "POST",
        headers: u.headers,
        body: { sessionId: session }
      })
      expect(aborted.status).toBe(200)
      const all = await collected
      expect(all.at(-1)).toMatchObject({ _tag: "done" })
      expect((all.at(-1) as { status?: string }).status).not.toBe("finished")
      slowGate.open()
      // The slow step returns into a program that was stopped: the next call never runs.
      await new Promise((resolve) => setImmediate(resolve))
      expect(ran).toEqual(["slow 1"])
    } finally {
      await server.stop()
    }
  })

  it("credits: a program's turn costs core's price of its model calls, and its tool calls nothing more; no credits, no program", async () => {
    const ledger = await Effect.runPromise(Effect.provide(CreditLedger.makeMemory, Clock.layer))
    const counter = { name: "chars", count: (text: string) => text.length }
    let model: ScriptedChatModel | undefined
    const server = await start({
      plugins: [weather, creditsPlugin],
      ledger: Layer.succeed(CreditLedger.CreditLedger, ledger),
      model: (catalog) => {
        model = ScriptedChatModel.router({ catalog }, { tokenCounter: counter })
        return model
      },
      env: { CODE_MODE: "on" }
    })
    try {
      const u = await user(server.app.oracleDid)
      await server.app.credits.topUp(u.did, 1_000)
      const session = await newSession(server.url, u.headers)
      const events = await collect(
        (await stream(server.url, session, u.headers, "What's the weather in Berlin, Paris and Rome?")).events
      )
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(doneOf(events, "get_current_weather")).toHaveLength(3)
      const calls = model!.calls
      expect(calls).toHaveLength(3) // load_capability, run_code, the answer
      const total = calls
        .map((c) =>
          CreditPricing.costOf({ inputTokens: c.usage!.input_tokens, outputTokens: c.usage!.output_tokens })
        )
        .reduce((a, b) => a + b, 0)
      expect(await server.app.credits.balance(u.did)).toBe(1_000 - total)

      // A user with no credits is refused before the turn: no model call, no program, no tool.
      const broke = await user(server.app.oracleDid)
      const theirs = await newSession(server.url, broke.headers)
      const before = calls.length
      const refused = await stream(
        server.url,
        theirs,
        broke.headers,
        "What's the weather in Berlin, Paris and Rome?"
      )
      expect(refused.response.status).toBe(402)
      expect(model!.calls).toHaveLength(before)
    } finally {
      await server.stop()
    }
  })

  it("credits that run out mid-turn: a program's turn ends as a direct turn's does", async () => {
    // The turn reserves CREDIT_RESERVE_ESTIMATE (1) and costs more: a balance of 1 runs out in it.
    const outcome = async (codeMode: "on" | "off") => {
      const ledger = await Effect.runPromise(Effect.provide(CreditLedger.makeMemory, Clock.layer))
      const { logger, records } = recordingLogger()
      const server = await start({
        plugins: [weather, creditsPlugin],
        ledger: Layer.succeed(CreditLedger.CreditLedger, ledger),
        logger,
        env: { CODE_MODE: codeMode }
      })
      try {
        const u = await user(server.app.oracleDid)
        await server.app.credits.topUp(u.did, 1)
        const session = await newSession(server.url, u.headers)
        const request = "What's the weather in Berlin, Paris and Rome?"
        const events = await collect((await stream(server.url, session, u.headers, request)).events)
        const next = await stream(server.url, session, u.headers, request)
        return {
          end: events.at(-1),
          weatherCalls: doneOf(events, "get_current_weather").length,
          programs: doneOf(events, "run_code").length,
          balance: await server.app.credits.balance(u.did),
          shortfallLogged: records.some((r) => r.level === "warn" && r.fields?.shortfall !== undefined),
          next: next.response.status
        }
      } finally {
        await server.stop()
      }
    }
    const direct = await outcome("off")
    const code = await outcome("on")
    expect(direct.programs).toBe(0)
    expect(code.programs).toBe(1)
    const { programs: _a, ...directRest } = direct
    const { programs: _b, ...codeRest } = code
    expect(codeRest).toEqual(directRest)
    expect(code).toMatchObject({
      end: { _tag: "done", status: "finished" },
      weatherCalls: 3,
      balance: 0,
      shortfallLogged: true,
      next: 402
    })
  })
})
