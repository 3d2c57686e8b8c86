/**
 * Contract details of issues 7 and 8 that the broader tests would not notice breaking: the exact
 * credit charge of a turn (core's pricing of each model call's usage), the client tools stored in
 * the thread, failed turns on both answer forms, the configuration's defaults (and the default
 * rate limit at work), and `x-ucan-delegation` through the real server.
 */

import { Clock, CreditLedger, CreditPricing } from "@plugboard/core"
import { MemorySaver } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { encodeToken, generateSigner, mintDelegation } from "@plugboard/ucan"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import * as ServerConfig from "../src/Config.js"
import { creditsPlugin, makeCreditsPlugin } from "../src/index.js"
import { call, collect, headersFor, newSession, start, stream, user, weather } from "./helpers.js"

describe("credits: a turn costs exactly core's price of each model call's usage", () => {
  // The default price, and a finer one under which dropping either side of the usage, or
  // rounding the turn instead of each call, gives another total.
  it.each([
    ["the default credits plugin", creditsPlugin, CreditPricing.DEFAULT_TOKENS_PER_CREDIT],
    ["100 tokens per credit", makeCreditsPlugin({ tokensPerCredit: 100 }), 100]
  ] as const)(
    "%s: each model call priced by costOf(usage), the turn settled for their sum, the balance down by it",
    async (_label, plugin, price) => {
      const ledger = await Effect.runPromise(Effect.provide(CreditLedger.makeMemory, Clock.layer))
      // One token per character: every call costs several credits, so a flat per-call charge (or
      // charging only input, or only output) gives another total.
      const counter = { name: "chars", count: (text: string) => text.length }
      let model: ScriptedChatModel | undefined
      const server = await start({
        plugins: [weather, plugin],
        ledger: Layer.succeed(CreditLedger.CreditLedger, ledger),
        model: (catalog) => {
          model = ScriptedChatModel.router({ catalog }, { tokenCounter: counter })
          return model
        }
      })
      try {
        const u = await user(server.app.oracleDid)
        await server.app.credits.topUp(u.did, 1_000)
        const session = await newSession(server.url, u.headers)
        const seen = await collect(
          (await stream(server.url, session, u.headers, "What's the weather in Berlin?")).events
        )
        expect(seen.at(-1)?._tag).toBe("done")
        expect(seen.some((e) => e._tag === "error")).toBe(false)

        const calls = model!.calls
        expect(calls).toHaveLength(3) // load_capability, get_current_weather, the answer
        const costs = calls.map((c) =>
          CreditPricing.costOf(
            { inputTokens: c.usage!.input_tokens, outputTokens: c.usage!.output_tokens },
            price
          )
        )
        const total = costs.reduce((a, b) => a + b, 0)
        // The usage is large enough that a flat one-credit-per-call charge would give another total.
        expect(total).toBeGreaterThan(calls.length)
        expect(await server.app.credits.balance(u.did)).toBe(1_000 - total)

        const history = await Effect.runPromise(ledger.history(u.did))
        // Each call is priced alone (costOf per call), and the turn settles their sum against its
        // reservation at its end (docs/failure-modes.md): one deduct for the turn.
        const deducts = history.filter((e) => e.kind === "deduct").reverse()
        expect(deducts.map((e) => e.amount)).toEqual([total])
        for (const e of deducts) expect(e.reason).toContain(session)
        expect(await Effect.runPromise(ledger.available(u.did))).toBe(1_000 - total)
      } finally {
        await server.stop()
      }
    }
  )
})

describe("client tools are stored in the thread's state", () => {
  it("browserTools and agActions equal the normalized DTOs of what the client sent", async () => {
    const saver = new MemorySaver()
    const model = ScriptedChatModel.script(["Noted."])
    const server = await start({ model, hooks: { checkpointerForUser: () => saver } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const tools = [
        {
          name: "pick_color",
          description: "Asks the user to pick a color.",
          // `parameters` is accepted as the schema; unknown fields are not stored.
          parameters: { type: "object", properties: { prompt: { type: "string" } } },
          extra: "dropped"
        }
      ]
      const agActions = [
        {
          name: "open_panel",
          description: "Opens a panel.",
          schema: { type: "object", properties: { panel: { type: "string", enum: ["billing"] } } }
        }
      ]
      const r = await call(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: { message: "Remember my tools", tools, agActions }
      })
      expect(r.status).toBe(200)
      // The model was offered them, after the server's tools.
      expect(model.calls[0]!.offeredTools.slice(-2)).toEqual(["pick_color", "open_panel"])

      const tuple = await saver.getTuple({ configurable: { thread_id: session } })
      const state = tuple?.checkpoint.channel_values as Record<string, unknown>
      expect(state.browserTools).toEqual([
        { name: "pick_color", description: tools[0]!.description, schema: tools[0]!.parameters }
      ])
      expect(state.agActions).toEqual([
        { name: "open_panel", description: agActions[0]!.description, schema: agActions[0]!.schema }
      ])
    } finally {
      await server.stop()
    }
  })
})

describe("a turn whose model fails", () => {
  const failing = () => ScriptedChatModel.script([new Error("the provider is down")])

  it("streamed: an error event naming the failure, then done, and nothing after", async () => {
    const server = await start({ model: failing() })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const { response, events } = await stream(server.url, session, u.headers, "Hello there")
      expect(response.status).toBe(200)
      const seen = await collect(events)
      // The model failed before exposing any reasoning: no placeholder is sent either.
      expect(seen.map((e) => e._tag)).toEqual(["run", "error", "done"])
      expect(seen[2]).toEqual({ _tag: "done", status: "failed", partialText: "", reason: "turn-failed" })
      const error = seen[1] as { error: string; code?: string; details?: Record<string, unknown> }
      expect(error.error).toContain("the provider is down")
      expect(error.code).toBe("turn-failed")
      expect(error.details).toMatchObject({
        sessionId: session,
        requestId: response.headers.get("x-request-id")
      })
    } finally {
      await server.stop()
    }
  })

  it("JSON: a 502 with the contract's error body", async () => {
    const server = await start({ model: failing() })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const r = await call(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: { message: "Hello there" }
      })
      expect(r.status).toBe(502)
      expect(r.headers.get("content-type")).toMatch(/application\/json/)
      expect(Object.keys(r.body).sort()).toEqual(["error", "message", "statusCode"])
      expect(r.body.statusCode).toBe(502)
      expect(r.body.message).toContain("the provider is down")
      // A plain Error from the model carries no name worth showing: the code says the turn failed.
      expect(r.body.error).toBe("turn-failed")
    } finally {
      await server.stop()
    }
  })
})

describe("defaults of an empty environment", () => {
  it("the parsed configuration: 120 requests per 60 s, heartbeat 15 s, scripted model, credits on unless disabled", async () => {
    const config = await Effect.runPromise(ServerConfig.fromEnv({}, "/srv/oracle"))
    expect(config.throttleLimit).toBe(120)
    expect(config.throttleTtlMs).toBe(60_000)
    expect(config.heartbeatMs).toBe(15_000)
    expect(config.disableCredits).toBe(false)
    expect(config.port).toBe(3000)
    expect(config.dataDir).toBe("/srv/oracle/.plugboard")
    expect(config.model.provider).toBe("scripted")
  })

  it("the default limit at work: the 121st request in the window is a 429 with Retry-After 60, naming the variables", async () => {
    const clock = Effect.runSync(Clock.makeTest(Date.now()))
    const server = await start({
      // The helper's generous limit removed: the server's own default applies.
      env: { THROTTLE_LIMIT: undefined, THROTTLE_TTL_MS: undefined, SSE_HEARTBEAT_MS: undefined },
      clock: Layer.succeed(Clock.Clock, clock)
    })
    try {
      expect(server.app.config.heartbeatMs).toBe(15_000)
      const u = await user(server.app.oracleDid)
      for (let i = 0; i < 120; i++) {
        expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
      }
      const limited = await call(`${server.url}/sessions`, { headers: u.headers })
      expect(limited).toMatchObject({
        status: 429,
        body: {
          statusCode: 429,
          error: "rate-limited",
          message:
            "Too many requests: at most 120 per window (set by THROTTLE_LIMIT and THROTTLE_TTL_MS). Retry in 60 s."
        }
      })
      expect(limited.headers.get("retry-after")).toBe("60")
      await Effect.runPromise(clock.advance(59_000))
      expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(429)
      await Effect.runPromise(clock.advance(1_000))
      expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
    } finally {
      await server.stop()
    }
  })
})

describe("x-ucan-delegation through the real server", () => {
  it("a valid delegation authenticates its issuer; an invalid one is a 401", async () => {
    const server = await start()
    try {
      const signer = await generateSigner()
      const delegation = await encodeToken(
        await mintDelegation({ issuer: signer, audience: server.app.oracleDid, ttlSeconds: 300 })
      )
      const created = await call(`${server.url}/sessions`, {
        method: "POST",
        headers: { "x-ucan-delegation": delegation, "content-type": "application/json" },
        body: {}
      })
      expect(created.status).toBe(201)
      // The same user through the invocation header sees that session: the delegation's issuer is the user.
      const listed = await call(`${server.url}/sessions`, {
        headers: await headersFor(signer, server.app.oracleDid)
      })
      expect(listed.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([
        created.body.sessionId
      ])
      // Another user does not.
      const other = await user(server.app.oracleDid)
      expect((await call(`${server.url}/sessions`, { headers: other.headers })).body.total).toBe(0)

      const elsewhere = await encodeToken(
        await mintDelegation({ issuer: signer, audience: other.did, ttlSeconds: 300 })
      )
      const tooLong = await encodeToken(
        await mintDelegation({ issuer: signer, audience: server.app.oracleDid, ttlSeconds: 3600 })
      )
      for (const [token, reason] of [
        [elsewhere, "wrong-audience"],
        [tooLong, "expiry-too-far"],
        ["not-a-ucan", "malformed"]
      ] as const) {
        const r = await call(`${server.url}/sessions`, { headers: { "x-ucan-delegation": token } })
        expect(r).toMatchObject({ status: 401, body: { statusCode: 401, error: reason } })
      }
    } finally {
      await server.stop()
    }
  })
})
