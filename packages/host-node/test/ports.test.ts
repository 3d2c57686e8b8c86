/**
 * A host points the server's ports at engines of its own (docs/spec/pipeline.md#hosting: shared
 * engines when one process is not enough): the rate limiter, the session store and the credit
 * ledger given to `createOracleApp` are the ones the pipeline, the routes and the socket handshake
 * use — not the embedded defaults.
 */
import { Clock, CreditLedger, RateLimiter, SessionStore } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { creditsPlugin } from "../src/index.js"
import { call, start, user, weather } from "./helpers.js"

describe("createOracleApp with the host's own ports", () => {
  it("uses the given rate limiter instead of THROTTLE_LIMIT's in-memory one", async () => {
    let takes = 0
    const counting = Layer.effect(
      RateLimiter.RateLimiter,
      Effect.map(RateLimiter.makeMemory({ limit: 2, windowMs: 60_000 }), (inner) => ({
        take: (key: string) => {
          takes += 1
          return inner.take(key)
        }
      }))
    )
    // THROTTLE_LIMIT stays 1000 (helpers): only the host's limiter can refuse the third request.
    const server = await start({ rateLimiter: counting })
    try {
      const u = await user(server.app.oracleDid)
      expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
      expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
      const third = await call(`${server.url}/sessions`, { headers: u.headers })
      expect(third).toMatchObject({
        status: 429,
        body: { message: expect.stringMatching(/at most 2 per window/) }
      })
      expect(takes).toBe(3)
    } finally {
      await server.stop()
    }
  })

  it("keeps sessions in the given store instead of the per-user SQLite databases", async () => {
    const store = await Effect.runPromise(Effect.provide(SessionStore.makeMemory, Clock.layer))
    const server = await start({ sessions: Layer.succeed(SessionStore.SessionStore, store) })
    try {
      const u = await user(server.app.oracleDid)
      const created = await call(`${server.url}/sessions`, { method: "POST", headers: u.headers, body: {} })
      expect(created.status).toBe(201)
      const page = await Effect.runPromise(store.list(u.did))
      expect(page.sessions.map((s) => s.sessionId)).toEqual([created.body.sessionId])
    } finally {
      await server.stop()
    }
  })

  it("charges the given credit ledger", async () => {
    const ledger = await Effect.runPromise(Effect.provide(CreditLedger.makeMemory, Clock.layer))
    const server = await start({
      plugins: [weather, creditsPlugin],
      ledger: Layer.succeed(CreditLedger.CreditLedger, ledger)
    })
    try {
      const u = await user(server.app.oracleDid)
      await Effect.runPromise(ledger.topUp(u.did, 7, "host top-up"))
      expect(await server.app.credits.balance(u.did)).toBe(7)
      expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
    } finally {
      await server.stop()
    }
  })
})
