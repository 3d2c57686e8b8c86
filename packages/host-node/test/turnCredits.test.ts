/**
 * `TurnCredits` (docs/failure-modes.md) on the memory ledger and a test clock: the tally is settled
 * once, a charge after the settle is refused (the plugin then deducts directly), and a turn that
 * outlived its hold is charged as usage instead of going free.
 */
import { Clock, CreditLedger, silentLogger } from "@plugboard/core"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import * as TurnCredits from "../src/credits/TurnCredits.js"

const ALICE = "did:key:z6MkAlice"

const setup = (balance: number, ttlMs: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const clock = yield* Clock.makeTest(1_700_000_000_000)
      const ledger = yield* CreditLedger.makeMemory.pipe(Effect.provideService(Clock.Clock, clock))
      yield* ledger.topUp(ALICE, balance)
      const reservation = yield* ledger.reserve(ALICE, 2, { ttlMs })
      return { clock, ledger, credits: TurnCredits.make(ledger, reservation, silentLogger) }
    })
  )

const state = (ledger: CreditLedger.CreditLedgerService) =>
  Effect.runPromise(Effect.all([ledger.balance(ALICE), ledger.available(ALICE), ledger.history(ALICE)]))

describe("TurnCredits", () => {
  it("settles the tally once against the reservation; a later charge is refused", async () => {
    const { ledger, credits } = await setup(10, 60_000)
    expect(credits.charge(1)).toBe(true)
    expect(credits.charge(4)).toBe(true)
    await Effect.runPromise(Effect.all([credits.settle("turn"), credits.settle("again")], { concurrency: 2 }))
    expect(credits.charge(1)).toBe(false)
    const [balance, available, history] = await state(ledger)
    expect([balance, available]).toEqual([5, 5])
    expect(history.filter((e) => e.kind === "deduct").map((e) => [e.amount, e.reason])).toEqual([[5, "turn"]])
  })

  it("a turn that outlived its hold is charged as usage, from what is available", async () => {
    const { clock, ledger, credits } = await setup(10, 1_000)
    credits.charge(3)
    await Effect.runPromise(clock.advance(1_000))
    await Effect.runPromise(credits.settle("turn"))
    const [balance, available] = await state(ledger)
    expect([balance, available]).toEqual([7, 7])
  })

  it("sharedWith marks the hold as the started turn's and exposes it to the plugins", async () => {
    const { credits } = await setup(10, 60_000)
    const base = { other: 1 }
    expect(TurnCredits.sharedWith(base, undefined)).toBe(base)
    expect(credits.attached()).toBe(false)
    const shared = TurnCredits.sharedWith(base, credits)
    expect(credits.attached()).toBe(true)
    expect(shared[TurnCredits.TURN_CREDITS_KEY]).toBe(credits)
    expect(TurnCredits.isTurnCredits(shared[TurnCredits.TURN_CREDITS_KEY])).toBe(true)
    expect(base).toEqual({ other: 1 })
  })
})
