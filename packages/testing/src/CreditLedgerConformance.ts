/**
 * The conformance suite of the `CreditLedger` port. Every implementation runs it:
 *
 * ```ts
 * CreditLedgerConformance.run("memory", () => makeLedger())
 * ```
 *
 * It registers vitest `describe`/`it` blocks. A persistent implementation can also pass
 * `reopen`, a second handle on the same storage, to prove persistence and cross-handle safety.
 * The reservation cases move time: a factory passes `clock`, the test clock its ledger reads
 * (`Clock.makeTest`); without it, the cases that need expiry are skipped.
 */
import { CreditLedger } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { CreditLedgerHarness } from "./CreditLedgerHarness.js"
import * as ReservationCases from "./CreditLedgerReservationCases.js"
import { acquire, type Factory, failureOf } from "./Factory.js"

export type { CreditLedgerHarness } from "./CreditLedgerHarness.js"

/** Options of the suite. */
export interface CreditLedgerConformanceOptions {
  /** fast-check runs of the interleaving properties (default 60). */
  readonly numRuns?: number
}

const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"

const harness = (factory: Factory<CreditLedgerHarness | CreditLedger.CreditLedgerService>) =>
  Effect.map(acquire(factory), (made): CreditLedgerHarness => ("ledger" in made ? made : { ledger: made }))

const withLedger = <A>(
  factory: Factory<CreditLedgerHarness | CreditLedger.CreditLedgerService>,
  body: (h: CreditLedgerHarness) => Effect.Effect<A, unknown, Scope.Scope>
): Promise<A> => Effect.runPromise(Effect.scoped(Effect.flatMap(harness(factory), body)))

const expectFailure = async (
  effect: Effect.Effect<unknown, CreditLedger.CreditLedgerError>,
  reason: CreditLedger.CreditLedgerError["reason"]
): Promise<CreditLedger.CreditLedgerError> => {
  const exit = await Effect.runPromiseExit(effect)
  expect(Exit.isFailure(exit), `expected a '${reason}' failure`).toBe(true)
  const error = failureOf(exit)
  expect(error?._tag).toBe("CreditLedgerError")
  expect(error?.reason).toBe(reason)
  expect(error?.message.length).toBeGreaterThan(0)
  return error!
}

/** Registers the CreditLedger conformance suite for one implementation. */
export const run = (
  name: string,
  factory: Factory<CreditLedgerHarness | CreditLedger.CreditLedgerService>,
  options: CreditLedgerConformanceOptions = {}
): void => {
  describe(`CreditLedger conformance: ${name}`, () => {
    it("an unknown user has balance 0 and no history", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          expect(yield* ledger.balance(ALICE)).toBe(0)
          expect(yield* ledger.history(ALICE)).toEqual([])
        })
      ))

    it("top-ups add, deducts subtract, each recorded with the balance after it", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          const up = yield* ledger.topUp(ALICE, 100, "welcome")
          expect(up.balance).toBe(100)
          expect(up.entry).toMatchObject({
            did: ALICE,
            kind: "top-up",
            requested: 100,
            amount: 100,
            shortfall: 0,
            balanceAfter: 100,
            reason: "welcome"
          })
          expect(typeof up.entry.at).toBe("number")
          const down = yield* ledger.deduct(ALICE, 30, "turn")
          expect(down).toMatchObject({ charged: 30, shortfall: 0, balance: 70 })
          expect(down.entry).toMatchObject({ kind: "deduct", requested: 30, amount: 30, balanceAfter: 70 })
          expect(yield* ledger.balance(ALICE)).toBe(70)
        })
      ))

    it("a deduct beyond the balance takes what is there and reports the shortfall", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          yield* ledger.topUp(ALICE, 10)
          const result = yield* ledger.deduct(ALICE, 25)
          expect(result).toMatchObject({ charged: 10, shortfall: 15, balance: 0 })
          expect(yield* ledger.balance(ALICE)).toBe(0)
          const empty = yield* ledger.deduct(ALICE, 5)
          expect(empty).toMatchObject({ charged: 0, shortfall: 5, balance: 0 })
          const history = yield* ledger.history(ALICE)
          expect(history.map((e) => [e.kind, e.amount, e.shortfall, e.balanceAfter])).toEqual([
            ["deduct", 0, 5, 0],
            ["deduct", 10, 15, 0],
            ["top-up", 10, 0, 10]
          ])
        })
      ))

    it("balances are per user", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          yield* ledger.topUp(ALICE, 5)
          yield* ledger.topUp(BOB, 7)
          yield* ledger.deduct(BOB, 3)
          expect(yield* ledger.balance(ALICE)).toBe(5)
          expect(yield* ledger.balance(BOB)).toBe(4)
          expect((yield* ledger.history(ALICE)).every((e) => e.did === ALICE)).toBe(true)
          expect(yield* ledger.history(BOB)).toHaveLength(2)
        })
      ))

    it("history is newest first, honours the limit and keeps reasons", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          for (let i = 1; i <= 5; i++) yield* ledger.topUp(ALICE, i, `r${i}`)
          const all = yield* ledger.history(ALICE)
          expect(all.map((e) => e.reason)).toEqual(["r5", "r4", "r3", "r2", "r1"])
          const two = yield* ledger.history(ALICE, 2)
          expect(two.map((e) => e.amount)).toEqual([5, 4])
          expect(new Set(all.map((e) => e.id)).size).toBe(5)
          const unreasoned = yield* ledger.topUp(BOB, 1)
          expect(unreasoned.entry.reason).toBeUndefined()
        })
      ))

    it("refuses bad DIDs, amounts, reasons and limits, and changes nothing", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          yield* ledger.topUp(ALICE, 50)
          const snapshot = yield* ledger.history(ALICE)
          const bad = <A>(
            effect: Effect.Effect<A, CreditLedger.CreditLedgerError>,
            reason: CreditLedger.CreditLedgerError["reason"]
          ) => Effect.promise(() => expectFailure(effect, reason))
          for (const did of ["", "alice", "did:", "did:key:", "did:Key:x", 42 as unknown as string]) {
            yield* bad(ledger.balance(did), "invalid-did")
            yield* bad(ledger.topUp(did, 1), "invalid-did")
            yield* bad(ledger.deduct(did, 1), "invalid-did")
            yield* bad(ledger.history(did), "invalid-did")
          }
          const amounts = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1, "5"]
          for (const amount of amounts as Array<number>) {
            yield* bad(ledger.topUp(ALICE, amount), "invalid-amount")
            yield* bad(ledger.deduct(ALICE, amount), "invalid-amount")
          }
          yield* bad(ledger.topUp(ALICE, 1, "x".repeat(CreditLedger.MAX_REASON_LENGTH + 1)), "invalid-reason")
          yield* bad(ledger.deduct(ALICE, 1, 7 as unknown as string), "invalid-reason")
          for (const limit of [0, -1, 2.5, CreditLedger.MAX_HISTORY_LIMIT + 1, Number.NaN]) {
            yield* bad(ledger.history(ALICE, limit), "invalid-limit")
          }
          expect(yield* ledger.balance(ALICE)).toBe(50)
          expect(yield* ledger.history(ALICE)).toEqual(snapshot)
        })
      ))

    it("a top-up past Number.MAX_SAFE_INTEGER fails with 'overflow' and changes nothing", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          yield* ledger.topUp(ALICE, Number.MAX_SAFE_INTEGER - 1)
          yield* Effect.promise(() => expectFailure(ledger.topUp(ALICE, 2), "overflow"))
          expect(yield* ledger.balance(ALICE)).toBe(Number.MAX_SAFE_INTEGER - 1)
          expect(yield* ledger.topUp(ALICE, 1)).toMatchObject({ balance: Number.MAX_SAFE_INTEGER })
        })
      ))

    it("concurrent deducts never lose one and never overdraw", () =>
      withLedger(factory, ({ ledger }) =>
        Effect.gen(function* () {
          yield* ledger.topUp(ALICE, 100)
          const results = yield* Effect.all(
            Array.from({ length: 150 }, () => ledger.deduct(ALICE, 1)),
            { concurrency: "unbounded" }
          )
          expect(results.reduce((sum, r) => sum + r.charged, 0)).toBe(100)
          expect(results.filter((r) => r.shortfall === 1)).toHaveLength(50)
          expect(yield* ledger.balance(ALICE)).toBe(0)
          expect(yield* ledger.history(ALICE, CreditLedger.MAX_HISTORY_LIMIT)).toHaveLength(151)
        })
      ))

    it("property: balance = Σ top-ups − Σ charged, never negative, under any interleaving", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              who: fc.constantFrom(ALICE, BOB),
              kind: fc.constantFrom("top-up" as const, "deduct" as const),
              amount: fc.integer({ min: 1, max: 50 })
            }),
            { maxLength: 40 }
          ),
          fc.integer({ min: 1, max: 8 }),
          (ops, concurrency) =>
            withLedger(factory, ({ ledger }) =>
              Effect.gen(function* () {
                const outcomes = yield* Effect.all(
                  ops.map((op) =>
                    op.kind === "top-up"
                      ? Effect.map(ledger.topUp(op.who, op.amount), (r) => ({ op, moved: r.entry.amount }))
                      : Effect.map(ledger.deduct(op.who, op.amount), (r) => ({ op, moved: r.charged }))
                  ),
                  { concurrency }
                )
                for (const did of [ALICE, BOB]) {
                  const mine = outcomes.filter((o) => o.op.who === did)
                  const expected = mine.reduce(
                    (sum, o) => sum + (o.op.kind === "top-up" ? o.moved : -o.moved),
                    0
                  )
                  const balance = yield* ledger.balance(did)
                  expect(balance).toBe(expected)
                  expect(balance).toBeGreaterThanOrEqual(0)
                  const history = [...(yield* ledger.history(did, CreditLedger.MAX_HISTORY_LIMIT))].reverse()
                  expect(history).toHaveLength(mine.length)
                  checkChain(history)
                }
              })
            )
        ),
        { numRuns: options.numRuns ?? 60 }
      ))

    ReservationCases.register((body) => withLedger(factory, body), options.numRuns ?? 60)

    it("reopening the storage keeps balances and history (persistent implementations)", async (ctx) => {
      const probe = await withLedger(factory, (h) => Effect.succeed(h.reopen !== undefined))
      if (!probe) ctx.skip()
      await withLedger(factory, ({ ledger, reopen }) =>
        Effect.gen(function* () {
          yield* ledger.topUp(ALICE, 40, "first")
          const other = yield* reopen!()
          expect(yield* other.balance(ALICE)).toBe(40)
          // Interleave deducts through both handles: none may be lost.
          const results = yield* Effect.all(
            Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? ledger : other).deduct(ALICE, 1)),
            { concurrency: "unbounded" }
          )
          expect(results.reduce((sum, r) => sum + r.charged, 0)).toBe(40)
          expect(yield* ledger.balance(ALICE)).toBe(0)
          expect(yield* other.balance(ALICE)).toBe(0)
          expect((yield* other.history(ALICE, CreditLedger.MAX_HISTORY_LIMIT)).at(-1)?.reason).toBe("first")
        })
      )
    })
  })
}

/** Each entry's balance follows from the previous one; deducts take min(requested, balance). */
const checkChain = (oldestFirst: ReadonlyArray<CreditLedger.LedgerEntry>): void => {
  let balance = 0
  for (const entry of oldestFirst) {
    if (entry.kind === "top-up") {
      expect(entry.amount).toBe(entry.requested)
      balance += entry.amount
    } else {
      expect(entry.amount).toBe(Math.min(entry.requested, balance))
      balance -= entry.amount
    }
    expect(entry.shortfall).toBe(entry.requested - entry.amount)
    expect(entry.balanceAfter).toBe(balance)
  }
}
