/**
 * Credits (402 → top-up → 200, charged by token usage) and per-user rate limits (429 with
 * Retry-After, served again after the window) over real sockets. The rate limiter's window is
 * moved with a test clock, never by sleeping.
 */
import { Clock, CreditLedger } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { creditsPlugin } from "../src/index.js"
import { call, collect, newSession, start, stream, user, weather } from "./helpers.js"

describe("credits", () => {
  it("a turn is 402 with an empty balance, 200 after a top-up, then charged by token usage", async () => {
    const server = await start({ plugins: [weather, creditsPlugin] })
    try {
      expect(server.app.creditsEnabled).toBe(true)
      const u = await user(server.app.oracleDid)
      const refused = await call(`${server.url}/messages/first`, {
        method: "POST",
        headers: u.headers,
        body: { message: "hi" }
      })
      expect(refused).toMatchObject({
        status: 402,
        body: { statusCode: 402, error: "insufficient-credits", claims: [], outstandingClaims: [] }
      })
      // Public routes skip the pipeline.
      expect((await call(`${server.url}/health`)).status).toBe(200)
      // Only a turn spends credits: at a zero balance the user still reaches their own data.
      const kept = await newSession(server.url, u.headers)
      expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
      expect((await call(`${server.url}/messages/${kept}`, { headers: u.headers })).status).toBe(200)
      expect((await call(`${server.url}/sessions/${kept}/messages`, { headers: u.headers })).status).toBe(200)
      expect(
        (await call(`${server.url}/sessions/${kept}`, { method: "DELETE", headers: u.headers })).status
      ).toBe(200)

      await server.app.credits.topUp(u.did, 100)
      const session = await newSession(server.url, u.headers)
      const { events } = await stream(server.url, session, u.headers, "What's the weather in Berlin?")
      const seen = await collect(events)
      expect(seen.at(-1)?._tag).toBe("done")
      // Three model calls (load, tool, answer), each a few hundred tokens: charged, not free.
      const balance = await server.app.credits.balance(u.did)
      expect(balance).toBeLessThan(100)
      expect(balance).toBeGreaterThan(100 - 10)
    } finally {
      await server.stop()
    }
  })

  it("DISABLE_CREDITS=true never answers 402; without the credits plugin there is no check", async () => {
    const disabled = await start({ plugins: [weather, creditsPlugin], env: { DISABLE_CREDITS: "true" } })
    const absent = await start({ plugins: [weather] })
    try {
      for (const server of [disabled, absent]) {
        expect(server.app.creditsEnabled).toBe(false)
        const u = await user(server.app.oracleDid)
        const session = await newSession(server.url, u.headers)
        const { response } = await stream(server.url, session, u.headers, "hi")
        expect(response.status).toBe(200)
      }
    } finally {
      await disabled.stop()
      await absent.stop()
    }
  })

  it("a ledger that cannot answer is a 503, never a free pass", async () => {
    const broken: CreditLedger.CreditLedgerService = {
      balance: () =>
        Effect.fail(new CreditLedger.CreditLedgerError({ reason: "unavailable", message: "down" })),
      available: () =>
        Effect.fail(new CreditLedger.CreditLedgerError({ reason: "unavailable", message: "down" })),
      reserve: () =>
        Effect.fail(new CreditLedger.CreditLedgerError({ reason: "unavailable", message: "down" })),
      settle: () => Effect.die("unused"),
      release: () => Effect.die("unused"),
      topUp: () => Effect.die("unused"),
      deduct: () => Effect.die("unused"),
      history: () => Effect.die("unused")
    }
    const server = await start({
      plugins: [weather, creditsPlugin],
      ledger: Layer.succeed(CreditLedger.CreditLedger, broken)
    })
    try {
      const u = await user(server.app.oracleDid)
      const r = await call(`${server.url}/messages/any`, {
        method: "POST",
        headers: u.headers,
        body: { message: "hi" }
      })
      expect(r).toMatchObject({ status: 503, body: { statusCode: 503 } })
    } finally {
      await server.stop()
    }
  })
})

describe("rate limit", () => {
  it("429 with Retry-After after the limit, per user, and served again after the window", async () => {
    const clock = Effect.runSync(Clock.makeTest(Date.now()))
    const server = await start({
      env: { THROTTLE_LIMIT: "3", THROTTLE_TTL_MS: "60000" },
      clock: Layer.succeed(Clock.Clock, clock)
    })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      for (let i = 0; i < 3; i++)
        expect((await call(`${server.url}/sessions`, { headers: alice.headers })).status).toBe(200)
      const limited = await call(`${server.url}/sessions`, { headers: alice.headers })
      expect(limited).toMatchObject({ status: 429, body: { statusCode: 429, error: "rate-limited" } })
      expect(Number(limited.headers.get("retry-after"))).toBe(60)
      // Limits are per user: Bob is served while Alice waits.
      expect((await call(`${server.url}/sessions`, { headers: bob.headers })).status).toBe(200)

      await Effect.runPromise(clock.advance(30_000))
      const later = await call(`${server.url}/sessions`, { headers: alice.headers })
      expect(later.status).toBe(429)
      expect(Number(later.headers.get("retry-after"))).toBe(30)

      await Effect.runPromise(clock.advance(30_000))
      expect((await call(`${server.url}/sessions`, { headers: alice.headers })).status).toBe(200)
      // Unauthenticated requests never take a slot (auth comes first).
      expect((await call(`${server.url}/sessions`)).status).toBe(401)
    } finally {
      await server.stop()
    }
  })
})
