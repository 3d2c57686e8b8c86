/**
 * The credit race (docs/failure-modes.md), through the real server: with 1 credit, 10 concurrent
 * turns all ran and 9 were never charged, since the gate only checked that the balance was above
 * zero. Now each turn reserves `CREDIT_RESERVE_ESTIMATE` before it runs and settles at its end.
 * Every turn here waits at a gate (a silent plugin's `beforeModel`) until all requests have been
 * answered their status, so the turns really overlap; the ledger is the server's own SQLite file,
 * read afterwards through a second handle. The race across two hosts on one Postgres is in
 * manyHosts.serve.test.ts.
 */

import { Clock, type CreditLedger, definePlugin } from "@plugboard/core"
import { SqliteCreditLedger } from "@plugboard/ledger"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { creditsPlugin } from "../src/index.js"
import { call, collect, type Running, start, stream, user, weather } from "./helpers.js"

/** A silent plugin holding every model call until `open()`. */
const gated = () => {
  let open!: () => void
  const gate = new Promise<void>((resolve) => {
    open = resolve
  })
  const plugin = definePlugin({
    name: "gate",
    manifest: {
      title: "Gate",
      summary: "Holds model calls until the test opens it.",
      whenToUse: [],
      visibility: "silent"
    },
    middlewares: [{ name: "gate", beforeModel: () => gate }]
  })
  return { plugin, open }
}

// One token per character: every model call costs at least one credit.
const counter = { name: "chars", count: (text: string) => text.length }

const boot = (plugins: ReadonlyArray<ReturnType<typeof definePlugin>>, env: Record<string, string> = {}) =>
  start({
    plugins: [weather, creditsPlugin, ...plugins],
    model: (catalog) => ScriptedChatModel.router({ catalog }, { tokenCounter: counter }),
    env
  })

/** The server's ledger file, through a second handle: its history and what is available. */
const ledgerOf = <A>(
  server: Running,
  body: (ledger: CreditLedger.CreditLedgerService) => Effect.Effect<A, unknown>
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(SqliteCreditLedger.make({ filename: server.app.config.creditsDatabasePath }), body)
    ).pipe(Effect.provide(Clock.layer))
  )

/** Runs `n` streamed turns at once (each on its own session); returns each status and, for 200s, the events. */
const race = async (server: Running, credits: number, n: number) => {
  const gate = (server as Running & { gate: { open: () => void } }).gate
  const u = await user(server.app.oracleDid)
  await server.app.credits.topUp(u.did, credits)
  const started = await Promise.all(
    Array.from({ length: n }, (_, i) => stream(server.url, `race-${i}`, u.headers, "Hello there"))
  )
  // Every request has its answer (402 at once, or the stream's headers) before any turn goes on.
  gate.open()
  const outcomes = await Promise.all(
    started.map(async ({ response, events }) =>
      response.status === 200
        ? { status: 200, events: await collect(events) }
        : { status: response.status, body: await response.json() }
    )
  )
  return { u, outcomes }
}

const withRace = async (credits: number, n: number) => {
  const { plugin, open } = gated()
  const server = Object.assign(await boot([plugin]), { gate: { open } })
  try {
    const { u, outcomes } = await race(server, credits, n)
    const [history, available, balance] = await ledgerOf(server, (ledger) =>
      Effect.all([ledger.history(u.did, 1000), ledger.available(u.did), ledger.balance(u.did)])
    )
    return { outcomes, history, available, balance }
  } finally {
    await server.stop()
  }
}

const expectRace = (result: Awaited<ReturnType<typeof withRace>>, credits: number, n: number) => {
  const ran = result.outcomes.filter((o) => o.status === 200)
  const refused = result.outcomes.filter((o) => o.status === 402)
  expect(ran).toHaveLength(credits)
  expect(refused).toHaveLength(n - credits)
  for (const o of refused) {
    expect(o.body).toMatchObject({
      statusCode: 402,
      error: "insufficient-credits",
      claims: [],
      outstandingClaims: []
    })
  }
  for (const o of ran) {
    const done = o.events!.at(-1)
    expect(done?._tag).toBe("done")
    expect((done as { status?: string }).status).toBe("finished")
  }
  // The balance never went below zero and ends where the charges say: top-up − Σ deducts.
  const oldestFirst = [...result.history].reverse()
  for (const e of oldestFirst) expect(e.balanceAfter).toBeGreaterThanOrEqual(0)
  const deducts = oldestFirst.filter((e) => e.kind === "deduct")
  expect(deducts).toHaveLength(credits) // one settle per turn that ran, each charging something
  for (const e of deducts) expect(e.amount).toBeGreaterThanOrEqual(1)
  expect(result.balance).toBe(credits - deducts.reduce((sum, e) => sum + e.amount, 0))
  expect(result.balance).toBeGreaterThanOrEqual(0)
  // Every hold was settled: nothing stays reserved.
  expect(result.available).toBe(result.balance)
}

describe("the credit race (docs/failure-modes.md): each turn reserves before it runs", () => {
  it("1 credit and 50 concurrent streamed turns: exactly 1 runs, 49 get 402, the balance ends at 0", async () => {
    const result = await withRace(1, 50)
    expectRace(result, 1, 50)
    expect(result.balance).toBe(0)
  }, 60_000)

  it("10 credits and 50 concurrent streamed turns: exactly 10 run, 40 get 402, never below zero", async () => {
    const result = await withRace(10, 50)
    expectRace(result, 10, 50)
    expect(result.balance).toBe(0)
  }, 60_000)

  it("CREDIT_RESERVE_ESTIMATE=3 with 10 credits: exactly 3 turns run at once", async () => {
    const { plugin, open } = gated()
    const server = Object.assign(await boot([plugin], { CREDIT_RESERVE_ESTIMATE: "3" }), { gate: { open } })
    try {
      const { outcomes } = await race(server, 10, 12)
      expect(outcomes.filter((o) => o.status === 200)).toHaveLength(3)
      expect(outcomes.filter((o) => o.status === 402)).toHaveLength(9)
    } finally {
      await server.stop()
    }
  }, 60_000)

  it("a request that fails before its turn starts (429, 400) gives its reservation back", async () => {
    const server = await boot([], { THROTTLE_LIMIT: "2" })
    try {
      const u = await user(server.app.oracleDid)
      await server.app.credits.topUp(u.did, 5)
      const bad = await call(`${server.url}/messages/s1`, {
        method: "POST",
        headers: u.headers,
        body: { nope: 1 }
      })
      expect(bad.status).toBe(400)
      const ok = await stream(server.url, "s1", u.headers, "Hello there")
      expect(ok.response.status).toBe(200)
      await collect(ok.events)
      const limited = await call(`${server.url}/messages/s1`, {
        method: "POST",
        headers: u.headers,
        body: { message: "again" }
      })
      expect(limited.status).toBe(429)
      const [balance, available] = await ledgerOf(server, (ledger) =>
        Effect.all([ledger.balance(u.did), ledger.available(u.did)])
      )
      expect(balance).toBeLessThan(5) // the one turn that ran was charged
      expect(available).toBe(balance) // and neither refused request holds anything
    } finally {
      await server.stop()
    }
  }, 60_000)

  it("an aborted turn settles what it used (nothing, here) and releases its reservation", async () => {
    const { plugin } = gated() // never opened: the turn waits at its first model call
    const server = await boot([plugin])
    try {
      const u = await user(server.app.oracleDid)
      await server.app.credits.topUp(u.did, 1)
      const turn = await stream(server.url, "s1", u.headers, "Hello there")
      expect(turn.response.status).toBe(200)
      // The only credit is held: a second turn is refused.
      const second = await call(`${server.url}/messages/s2`, {
        method: "POST",
        headers: u.headers,
        body: { message: "hi" }
      })
      expect(second.status).toBe(402)
      const abort = await call(`${server.url}/messages/abort`, {
        method: "POST",
        headers: u.headers,
        body: { sessionId: "s1" }
      })
      expect(abort.body).toMatchObject({ success: true })
      const events = await collect(turn.events)
      expect((events.at(-1) as { status?: string }).status).toBe("aborted")
      const [balance, available] = await ledgerOf(server, (ledger) =>
        Effect.all([ledger.balance(u.did), ledger.available(u.did)])
      )
      expect([balance, available]).toEqual([1, 1])
    } finally {
      await server.stop()
    }
  }, 60_000)

  it("a JSON (unstreamed) turn is settled before its answer: balance and available agree at once", async () => {
    const server = await boot([])
    try {
      const u = await user(server.app.oracleDid)
      await server.app.credits.topUp(u.did, 100)
      const answer = await call(`${server.url}/messages/json`, {
        method: "POST",
        headers: u.headers,
        body: { message: "Hello there" }
      })
      expect(answer.status).toBe(200)
      const [balance, available] = await ledgerOf(server, (ledger) =>
        Effect.all([ledger.balance(u.did), ledger.available(u.did)])
      )
      expect(balance).toBeLessThan(100)
      expect(available).toBe(balance)
    } finally {
      await server.stop()
    }
  }, 60_000)

  it("a failed turn (a bound hit after one model call) is settled for what that call cost, the rest released", async () => {
    const server = await boot([], { TURN_MAX_MODEL_CALLS: "1" })
    try {
      const u = await user(server.app.oracleDid)
      await server.app.credits.topUp(u.did, 100)
      const events = await collect(
        (await stream(server.url, "failing", u.headers, "What's the weather in Berlin?")).events
      )
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "failed", reason: "max-model-calls" })
      const [history, balance, available] = await ledgerOf(server, (ledger) =>
        Effect.all([ledger.history(u.did), ledger.balance(u.did), ledger.available(u.did)])
      )
      const deducts = history.filter((e) => e.kind === "deduct")
      expect(deducts).toHaveLength(1)
      expect(deducts[0]!.amount).toBeGreaterThanOrEqual(1)
      expect(deducts[0]!.reason).toContain("failing")
      expect(balance).toBe(100 - deducts[0]!.amount)
      expect(available).toBe(balance)
    } finally {
      await server.stop()
    }
  }, 60_000)
})
