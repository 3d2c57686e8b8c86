/**
 * The reservation cases of the `CreditLedger` conformance suite (docs/failure-modes.md), registered
 * by `CreditLedgerConformance.run` for every implementation: reserve, settle, release, expiry on
 * the `Clock` port, typed refusals, concurrent reserves, and a property over random interleavings
 * of every operation.
 */
import { CreditLedger } from "@plugboard/core"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { expect, it } from "vitest"
import type { CreditLedgerHarness } from "./CreditLedgerHarness.js"

const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"
const TTL = { ttlMs: 60_000 }

type WithLedger = <A>(
  body: (h: CreditLedgerHarness) => Effect.Effect<A, unknown, import("effect").Scope.Scope>
) => Promise<A>

const reasonOf = <A>(effect: Effect.Effect<A, CreditLedger.CreditLedgerError>) =>
  Effect.map(Effect.either(effect), (either) => (Either.isLeft(either) ? either.left.reason : "succeeded"))

/** Registers the reservation cases (inside the suite's `describe`). */
export const register = (withLedger: WithLedger, numRuns: number): void => {
  it("reserve holds part of the balance: available drops, the balance does not", () =>
    withLedger(({ ledger, clock }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 10)
        const before = clock === undefined ? undefined : yield* clock.now()
        const r = yield* ledger.reserve(ALICE, 4, TTL)
        expect(r).toMatchObject({ did: ALICE, amount: 4 })
        expect(typeof r.id).toBe("string")
        if (before !== undefined) expect(r.expiresAt).toBe(before + TTL.ttlMs)
        expect(yield* ledger.balance(ALICE)).toBe(10)
        expect(yield* ledger.available(ALICE)).toBe(6)
        expect(yield* reasonOf(ledger.reserve(ALICE, 7, TTL))).toBe("insufficient-credits")
        const second = yield* ledger.reserve(ALICE, 6, TTL)
        expect(second.id).not.toBe(r.id)
        expect(yield* ledger.available(ALICE)).toBe(0)
        expect(yield* reasonOf(ledger.reserve(ALICE, 1, TTL))).toBe("insufficient-credits")
        expect(yield* reasonOf(ledger.reserve(BOB, 1, TTL))).toBe("insufficient-credits")
        expect(yield* ledger.available(BOB)).toBe(0)
        expect(yield* ledger.balance(ALICE)).toBe(10)
      })
    ))

  it("settle charges the actual cost and releases the rest of the reservation", () =>
    withLedger(({ ledger }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 10)
        const r = yield* ledger.reserve(ALICE, 5, TTL)
        const settled = yield* ledger.settle(ALICE, r.id, 3, "turn")
        expect(settled).toMatchObject({ charged: 3, shortfall: 0, released: 2, balance: 7 })
        expect(settled.entry).toMatchObject({
          kind: "deduct",
          requested: 3,
          amount: 3,
          balanceAfter: 7,
          reason: "turn"
        })
        expect(yield* ledger.available(ALICE)).toBe(7)
        expect((yield* ledger.history(ALICE))[0]).toEqual(settled.entry)
      })
    ))

  it("a settle past its reservation takes the excess from what is available: never another hold, never below zero", () =>
    withLedger(({ ledger }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 10)
        const first = yield* ledger.reserve(ALICE, 4, TTL)
        const second = yield* ledger.reserve(ALICE, 3, TTL)
        const over = yield* ledger.settle(ALICE, first.id, 20)
        expect(over).toMatchObject({ charged: 7, shortfall: 13, released: 0, balance: 3 })
        expect(yield* ledger.available(ALICE)).toBe(0)
        const free = yield* ledger.settle(ALICE, second.id, 0)
        expect(free).toMatchObject({ charged: 0, shortfall: 0, released: 3, balance: 3 })
        expect(free.entry).toBeUndefined()
        expect(yield* ledger.available(ALICE)).toBe(3)
        expect(yield* ledger.history(ALICE)).toHaveLength(2)
      })
    ))

  it("a settled or released reservation cannot be settled or released again, nor by another user", () =>
    withLedger(({ ledger }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 10)
        const a = yield* ledger.reserve(ALICE, 2, TTL)
        const b = yield* ledger.reserve(ALICE, 2, TTL)
        expect(yield* reasonOf(ledger.settle(BOB, a.id, 1))).toBe("unknown-reservation")
        expect(yield* reasonOf(ledger.release(BOB, a.id))).toBe("unknown-reservation")
        yield* ledger.settle(ALICE, a.id, 1)
        yield* ledger.release(ALICE, b.id)
        for (const id of [a.id, b.id]) {
          expect(yield* reasonOf(ledger.settle(ALICE, id, 1))).toBe("unknown-reservation")
          expect(yield* reasonOf(ledger.release(ALICE, id))).toBe("unknown-reservation")
        }
        expect(yield* reasonOf(ledger.settle(ALICE, "999999999", 1))).toBe("unknown-reservation")
        expect(yield* ledger.balance(ALICE)).toBe(9)
        expect(yield* ledger.available(ALICE)).toBe(9)
      })
    ))

  it("a deduct takes only what is not reserved", () =>
    withLedger(({ ledger }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 10)
        const r = yield* ledger.reserve(ALICE, 8, TTL)
        expect(yield* ledger.deduct(ALICE, 5)).toMatchObject({ charged: 2, shortfall: 3, balance: 8 })
        expect(yield* ledger.available(ALICE)).toBe(0)
        expect(yield* ledger.settle(ALICE, r.id, 8)).toMatchObject({ charged: 8, balance: 0 })
      })
    ))

  it("a reservation expires after its ttl on the Clock port, and then stops counting", async (ctx) => {
    const hasClock = await withLedger((h) => Effect.succeed(h.clock !== undefined))
    if (!hasClock) ctx.skip()
    await withLedger(({ ledger, clock }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 5)
        const r = yield* ledger.reserve(ALICE, 5, { ttlMs: 1000 })
        yield* clock!.advance(999)
        expect(yield* ledger.available(ALICE)).toBe(0)
        expect(yield* reasonOf(ledger.reserve(ALICE, 1, TTL))).toBe("insufficient-credits")
        yield* clock!.advance(1)
        expect(yield* ledger.available(ALICE)).toBe(5)
        expect(yield* reasonOf(ledger.settle(ALICE, r.id, 1))).toBe("unknown-reservation")
        expect(yield* reasonOf(ledger.release(ALICE, r.id))).toBe("unknown-reservation")
        const again = yield* ledger.reserve(ALICE, 5, { ttlMs: 1000 })
        expect(yield* ledger.settle(ALICE, again.id, 2)).toMatchObject({ charged: 2, balance: 3 })
      })
    )
  })

  it("refuses bad reservation arguments with the port's typed errors, and changes nothing", () =>
    withLedger(({ ledger }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 50)
        const r = yield* ledger.reserve(ALICE, 10, TTL)
        for (const did of ["", "alice", 42 as unknown as string]) {
          expect(yield* reasonOf(ledger.reserve(did, 1, TTL))).toBe("invalid-did")
          expect(yield* reasonOf(ledger.settle(did, r.id, 1))).toBe("invalid-did")
          expect(yield* reasonOf(ledger.release(did, r.id))).toBe("invalid-did")
          expect(yield* reasonOf(ledger.available(did))).toBe("invalid-did")
        }
        for (const amount of [0, -1, 1.5, Number.NaN, "5"] as Array<number>) {
          expect(yield* reasonOf(ledger.reserve(ALICE, amount, TTL))).toBe("invalid-amount")
        }
        for (const cost of [-1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1] as Array<number>) {
          expect(yield* reasonOf(ledger.settle(ALICE, r.id, cost))).toBe("invalid-amount")
        }
        const ttls = [0, -1, 1.5, Number.NaN, CreditLedger.MAX_RESERVATION_TTL_MS + 1, "10"]
        for (const ttlMs of ttls as Array<number>) {
          expect(yield* reasonOf(ledger.reserve(ALICE, 1, { ttlMs }))).toBe("invalid-ttl")
        }
        expect(yield* reasonOf(ledger.reserve(ALICE, 1, undefined as unknown as { ttlMs: number }))).toBe(
          "invalid-ttl"
        )
        for (const id of ["", 42, "x".repeat(65)] as Array<string>) {
          expect(yield* reasonOf(ledger.settle(ALICE, id, 1))).toBe("unknown-reservation")
          expect(yield* reasonOf(ledger.release(ALICE, id))).toBe("unknown-reservation")
        }
        expect(
          yield* reasonOf(ledger.settle(ALICE, r.id, 1, "x".repeat(CreditLedger.MAX_REASON_LENGTH + 1)))
        ).toBe("invalid-reason")
        expect(yield* ledger.balance(ALICE)).toBe(50)
        expect(yield* ledger.available(ALICE)).toBe(40)
        expect(yield* ledger.settle(ALICE, r.id, 10)).toMatchObject({ charged: 10, balance: 40 })
      })
    ))

  it("concurrent reserves never promise more than the balance (through every handle)", () =>
    withLedger(({ ledger, reopen }) =>
      Effect.gen(function* () {
        yield* ledger.topUp(ALICE, 10)
        const other = reopen === undefined ? ledger : yield* reopen()
        const outcomes = yield* Effect.all(
          Array.from({ length: 50 }, (_, i) =>
            reasonOf((i % 2 === 0 ? ledger : other).reserve(ALICE, 1, TTL))
          ),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((o) => o === "succeeded")).toHaveLength(10)
        expect(outcomes.filter((o) => o === "insufficient-credits")).toHaveLength(40)
        expect(yield* ledger.available(ALICE)).toBe(0)
        expect(yield* other.balance(ALICE)).toBe(10)
      })
    ))

  it("property: under any interleaving of reserve/settle/release/expire/topUp/deduct, balance ≥ 0, available = balance − live holds ≥ 0, and no reservation settles twice", () =>
    fc.assert(
      fc.asyncProperty(
        fc.array(operation, { maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        (ops, concurrency) => withLedger((h) => interleave(h, ops, concurrency))
      ),
      { numRuns }
    ))
}

type Op =
  | { readonly kind: "reserve"; readonly who: string; readonly amount: number; readonly ttl: number }
  | { readonly kind: "settle"; readonly who: string; readonly pick: number; readonly cost: number }
  | { readonly kind: "release"; readonly who: string; readonly pick: number }
  | { readonly kind: "expire"; readonly ms: number }
  | { readonly kind: "topUp" | "deduct"; readonly who: string; readonly amount: number }

const who = fc.constantFrom(ALICE, BOB)
const operation: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("reserve" as const),
    who,
    amount: fc.integer({ min: 1, max: 20 }),
    ttl: fc.integer({ min: 1, max: 100 })
  }),
  fc.record({
    kind: fc.constant("settle" as const),
    who,
    pick: fc.nat(),
    cost: fc.integer({ min: 0, max: 30 })
  }),
  fc.record({ kind: fc.constant("release" as const), who, pick: fc.nat() }),
  fc.record({ kind: fc.constant("expire" as const), ms: fc.integer({ min: 1, max: 60 }) }),
  fc.record({ kind: fc.constant("topUp" as const), who, amount: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ kind: fc.constant("deduct" as const), who, amount: fc.integer({ min: 1, max: 20 }) })
)

/** Runs `ops` with `concurrency`, checking the invariants after each and the accounts at the end. */
const interleave = (h: CreditLedgerHarness, ops: ReadonlyArray<Op>, concurrency: number) =>
  Effect.gen(function* () {
    const { ledger, clock } = h
    // Without a test clock, holds must outlive the run: expiry is then not exercised.
    const ttlOf = (ttl: number) => (clock === undefined ? 600_000 : ttl)
    const made: Array<CreditLedger.Reservation> = []
    const closedBy = new Map<string, number>()
    const moved = new Map<string, number>([
      [ALICE, 0],
      [BOB, 0]
    ])
    const add = (did: string, delta: number) => moved.set(did, (moved.get(did) ?? 0) + delta)
    const invariants = (ledgerNow: CreditLedger.CreditLedgerService, did: string) =>
      Effect.gen(function* () {
        expect(yield* ledgerNow.balance(did)).toBeGreaterThanOrEqual(0)
        expect(yield* ledgerNow.available(did)).toBeGreaterThanOrEqual(0)
      })
    const step = (op: Op): Effect.Effect<void, CreditLedger.CreditLedgerError> =>
      Effect.gen(function* () {
        switch (op.kind) {
          case "reserve": {
            const out = yield* Effect.either(ledger.reserve(op.who, op.amount, { ttlMs: ttlOf(op.ttl) }))
            if (Either.isRight(out)) made.push(out.right)
            else expect(out.left.reason).toBe("insufficient-credits")
            break
          }
          case "settle":
          case "release": {
            if (made.length === 0) return
            const r = made[op.pick % made.length]!
            const out = yield* Effect.either(
              op.kind === "settle"
                ? Effect.map(ledger.settle(op.who, r.id, op.cost), (s) => s.charged)
                : Effect.as(ledger.release(op.who, r.id), 0)
            )
            if (Either.isLeft(out)) {
              expect(out.left.reason).toBe("unknown-reservation")
              break
            }
            expect(op.who).toBe(r.did)
            closedBy.set(r.id, (closedBy.get(r.id) ?? 0) + 1)
            if (op.kind === "settle") expect(out.right).toBeLessThanOrEqual(op.cost)
            add(r.did, -out.right)
            break
          }
          case "expire":
            if (clock !== undefined) yield* clock.advance(op.ms)
            return
          case "topUp":
            yield* ledger.topUp(op.who, op.amount)
            add(op.who, op.amount)
            break
          case "deduct": {
            const out = yield* ledger.deduct(op.who, op.amount)
            expect(out.charged + out.shortfall).toBe(op.amount)
            add(op.who, -out.charged)
            break
          }
        }
        yield* invariants(ledger, op.who)
      })
    yield* Effect.all(ops.map(step), { concurrency, discard: true })

    for (const count of closedBy.values()) expect(count).toBe(1)
    const now = clock === undefined ? Date.now() : yield* clock.now()
    for (const did of [ALICE, BOB]) {
      const balance = yield* ledger.balance(did)
      expect(balance).toBe(moved.get(did))
      const live = made
        .filter((r) => r.did === did && !closedBy.has(r.id) && r.expiresAt > now)
        .reduce((sum, r) => sum + r.amount, 0)
      const available = yield* ledger.available(did)
      expect(available).toBe(balance - live)
      expect(available).toBeGreaterThanOrEqual(0)
    }
    for (const id of closedBy.keys()) {
      const r = made.find((m) => m.id === id)!
      expect(yield* reasonOf(ledger.settle(r.did, id, 1))).toBe("unknown-reservation")
    }
  })
