/**
 * The Postgres WaitStore: the port's conformance suite, each case on a fresh schema; answers
 * racing from two pools on one schema (two hosts) record exactly one, and each host reads that
 * one back; a wait and its answer outlive the pool that wrote them (a restart); text Postgres
 * cannot hold as is round-trips; a dead server fails `unavailable` without the password.
 */
import { Clock, type Wait, type WaitStore } from "@plugboard/core"
import { WaitStoreConformance } from "@plugboard/testing"
import { Effect, Exit, Layer, type Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerWaitStore, makeDatabase, makeWaitStore } from "../src/index.js"
import { database, databaseLayer, dropSchemas, freshSchema, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

const ALICE = "did:key:z6MkAlice"

const scoped = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | Clock.Clock>) =>
  Effect.runPromise(Effect.scoped(effect).pipe(Effect.provide(Clock.layer)))

const wait = (waitId: string, overrides: Partial<WaitStore.NewWait> = {}): WaitStore.NewWait => ({
  waitId,
  did: ALICE,
  runId: "run-1",
  sessionId: "s-1",
  request: {
    _tag: "approval",
    plugin: "payments",
    tool: "send_payment",
    args: { amount: 3 },
    reason: "approval"
  },
  createdAtMs: 1_000,
  deadlineMs: 60_000,
  ...overrides
})

const approve: Wait.WaitAnswer = { _tag: "decision", approved: true }
const deny: Wait.WaitAnswer = { _tag: "decision", approved: false, note: "no" }

describe.skipIf(POSTGRES_URL === undefined)(
  `Postgres WaitStore${POSTGRES_URL === undefined ? `: ${SKIP_REASON}` : ""}`,
  () => {
    afterAll(dropSchemas)

    WaitStoreConformance.run("postgres", () => layerWaitStore.pipe(Layer.provide(databaseLayer())), {
      numRuns: 10
    })

    it("answers racing from two hosts (two pools on one schema): exactly one is recorded, each host reads it back", () =>
      scoped(
        Effect.gen(function* () {
          const schema = freshSchema()
          const a = makeWaitStore(yield* database(schema))
          const b = makeWaitStore(yield* database(schema))
          // Several waits, so the race is run more than once; each is answered 24 times at once.
          for (let round = 0; round < 5; round++) {
            const id = `w${round}`
            yield* a.open(wait(id))
            const outcomes = yield* Effect.all(
              Array.from({ length: 24 }, (_, k) =>
                (k % 2 === 0 ? a : b).answer(ALICE, id, k % 3 === 0 ? deny : approve, ALICE, 2_000 + k)
              ),
              { concurrency: "unbounded" }
            )
            const recorded = outcomes.filter((o) => o._tag === "answered")
            expect(recorded).toHaveLength(1)
            for (const o of outcomes) expect(o.record).toEqual(recorded[0]!.record)
            expect(yield* a.get(ALICE, id)).toEqual(recorded[0]!.record)
            expect(yield* b.get(ALICE, id)).toEqual(recorded[0]!.record)
          }
        })
      ))

    it("a wait opened on one host is a conflict on the other; its answer outlives the pool that wrote it", async () => {
      const schema = freshSchema()
      await scoped(
        Effect.gen(function* () {
          const a = makeWaitStore(yield* database(schema))
          const b = makeWaitStore(yield* database(schema))
          yield* a.open(wait("w1"))
          const twice = yield* Effect.exit(b.open(wait("w1", { did: "did:key:z6MkBob" })))
          expect(Exit.isFailure(twice) && twice.cause._tag === "Fail" && twice.cause.error.reason).toBe(
            "conflict"
          )
          expect((yield* b.answer(ALICE, "w1", approve, ALICE, 2_000))._tag).toBe("answered")
        })
      )
      // A new pool (a restarted host) reads the answer back, and a later answer gets it.
      const read = await scoped(
        Effect.gen(function* () {
          const c = makeWaitStore(yield* database(schema))
          const again = yield* c.answer(ALICE, "w1", deny, ALICE, 3_000)
          expect(again._tag).toBe("already")
          return yield* c.get(ALICE, "w1")
        })
      )
      expect(read?.answered).toEqual({ answer: approve, by: ALICE, atMs: 2_000 })
    })

    it("text Postgres cannot store as is (U+0000 in a DID, arguments, a note) round-trips", () =>
      scoped(
        Effect.gen(function* () {
          const s = makeWaitStore(yield* database())
          const did = 'did:key:z6Mk\u0000"quoted"\\'
          const w = wait("w1", {
            did,
            request: {
              _tag: "approval",
              plugin: "p",
              tool: "t",
              args: { text: "a\u0000b", emoji: "✓" },
              reason: "r\u0000"
            }
          })
          yield* s.open(w)
          expect(yield* s.get(did, "w1")).toEqual(w)
          expect(yield* s.get(ALICE, "w1")).toBeUndefined()
          const note: Wait.WaitAnswer = { _tag: "decision", approved: false, note: "n\u0000o" }
          const outcome = yield* s.answer(did, "w1", note, did, 2_000)
          expect(outcome.record.answered).toEqual({ answer: note, by: did, atMs: 2_000 })
          expect(yield* s.list(did)).toEqual([outcome.record])
          expect(yield* s.due(100_000)).toEqual([])
        })
      ))

    it("a server that does not answer fails unavailable, naming no password", () =>
      scoped(
        Effect.gen(function* () {
          const db = yield* Effect.orDie(
            makeDatabase({ url: "postgres://u:s3cret-pass@127.0.0.1:1/x", connectTimeoutMs: 1000 })
          )
          const s = makeWaitStore(db)
          const exit = yield* Effect.exit(s.open(wait("w1")))
          const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
          expect(error?.reason).toBe("unavailable")
          expect(error?.message).toContain("wait storage unavailable")
          expect(error?.message).not.toContain("s3cret-pass")
        })
      ))
  }
)
