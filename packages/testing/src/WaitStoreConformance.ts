/**
 * The shared conformance suite of the `WaitStore` port: the in-memory store in core, SQLite in
 * `@plugboard/sqlite`, Postgres in `@plugboard/postgres`. At the top level of a test file:
 *
 * ```ts
 * WaitStoreConformance.run("memory", () => WaitStore.layerMemory)
 * ```
 *
 * The factory is called once per test (and per property run) and must return a fresh, empty
 * store; its layer may be scoped. What it checks (docs/waiting.md#exactly-once): a wait reads
 * back as opened and only by its user; an answer is recorded once, however many arrive, in
 * sequence or at the same time, and every later one gets the first back; an answer that does not
 * fit the request, comes after the deadline, or names another author is refused and records
 * nothing; the answered record stays readable; `due` finds the open waits past their deadline;
 * and bad input is refused before anything is stored.
 */
import { WaitStore as Store, type Wait } from "@plugboard/core"
import { Effect, Exit, type Layer } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

/** Builds the store under test; called once per test. */
export type WaitStoreFactory = () => Layer.Layer<Store.WaitStore, unknown>

/** Options of the suite. */
export interface WaitStoreConformanceOptions {
  /** fast-check runs of each property (default 30). */
  readonly numRuns?: number
}

const runWith = <A>(
  factory: WaitStoreFactory,
  program: Effect.Effect<A, unknown, Store.WaitStore>
): Promise<A> =>
  Effect.runPromise(Effect.scoped(Effect.provide(program, factory())) as Effect.Effect<A, unknown>)

const store = Store.WaitStore
const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"

const approval: Wait.WaitRequest = {
  _tag: "approval",
  plugin: "payments",
  tool: "send_payment",
  args: { to: "bob", amount: 12 },
  reason: "the tool requires approval"
}
const input: Wait.WaitRequest = {
  _tag: "input",
  plugin: "travel",
  message: "Which date?",
  schema: { type: "object", properties: { date: { type: "string" } } }
}
const connect: Wait.WaitRequest = { _tag: "connect", plugin: "github", url: "https://example.com/oauth" }

const wait = (waitId: string, overrides: Partial<Store.NewWait> = {}): Store.NewWait => ({
  waitId,
  did: ALICE,
  runId: "run-1",
  sessionId: "session-1",
  request: approval,
  createdAtMs: 1_000,
  deadlineMs: 61_000,
  ...overrides
})

const approve: Wait.WaitAnswer = { _tag: "decision", approved: true }
const deny: Wait.WaitAnswer = { _tag: "decision", approved: false, note: "too much" }
const timedOut: Wait.WaitAnswer = { _tag: "timed-out" }

const reasonOf = <A>(exit: Exit.Exit<A, Store.WaitStoreError>): string =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? exit.cause.error.reason
    : `no typed failure: ${exit._tag}`

/** Registers the WaitStore conformance suite under `name` (vitest `describe`/`it`). */
export const run = (
  name: string,
  factory: WaitStoreFactory,
  options: WaitStoreConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 30
  const test = (title: string, program: Effect.Effect<void, unknown, Store.WaitStore>) =>
    it(title, () => runWith(factory, program))

  describe(`WaitStore conformance: ${name}`, () => {
    test(
      "an unknown wait reads as undefined, lists empty, and cannot be answered",
      Effect.gen(function* () {
        const s = yield* store
        expect(yield* s.get(ALICE, "w1")).toBeUndefined()
        expect(yield* s.list(ALICE)).toEqual([])
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w1", approve, ALICE, 2_000)))).toBe("not-found")
      })
    )

    test(
      "a wait reads back as opened, by its user only; another user's id is unknown to them",
      Effect.gen(function* () {
        const s = yield* store
        for (const [id, request] of [
          ["w1", approval],
          ["w2", input],
          ["w3", connect]
        ] as const)
          yield* s.open(wait(id, { request }))
        expect(yield* s.get(ALICE, "w2")).toEqual(wait("w2", { request: input }))
        expect(yield* s.get(BOB, "w1")).toBeUndefined()
        expect(yield* s.list(BOB)).toEqual([])
        expect(reasonOf(yield* Effect.exit(s.answer(BOB, "w1", approve, BOB, 2_000)))).toBe("not-found")
        expect((yield* s.get(ALICE, "w1"))?.answered).toBeUndefined()
      })
    )

    test(
      "a wait id opened twice is a conflict, for any user, and the first stays as it was",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w1"))
        expect(reasonOf(yield* Effect.exit(s.open(wait("w1", { request: input }))))).toBe("conflict")
        expect(reasonOf(yield* Effect.exit(s.open(wait("w1", { did: BOB }))))).toBe("conflict")
        expect(yield* s.get(ALICE, "w1")).toEqual(wait("w1"))
      })
    )

    test(
      "an answer is recorded once: a second one, even a different one, gets the first back",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w1"))
        const first = yield* s.answer(ALICE, "w1", deny, ALICE, 5_000)
        expect(first._tag).toBe("answered")
        expect(first.record.answered).toEqual({ answer: deny, by: ALICE, atMs: 5_000 })
        const second = yield* s.answer(ALICE, "w1", approve, ALICE, 6_000)
        expect(second).toEqual({ _tag: "already", record: first.record })
        // A timeout after the answer changes nothing either.
        expect((yield* s.answer(ALICE, "w1", timedOut, Store.HOST, 70_000))._tag).toBe("already")
        expect(yield* s.get(ALICE, "w1")).toEqual(first.record)
      })
    )

    it("any sequence of answers records exactly the first one that fits (property)", async () => {
      const answerArb = fc.oneof(
        fc.constant<Wait.WaitAnswer>(approve),
        fc.constant<Wait.WaitAnswer>(deny),
        fc.constant<Wait.WaitAnswer>({ _tag: "values", values: { x: 1 } }),
        fc.constant<Wait.WaitAnswer>({ _tag: "connected" })
      )
      await fc.assert(
        fc.asyncProperty(fc.array(answerArb, { minLength: 1, maxLength: 8 }), async (answers) => {
          await runWith(
            factory,
            Effect.gen(function* () {
              const s = yield* store
              yield* s.open(wait("w1"))
              let recorded: Wait.WaitAnswer | undefined
              for (const [k, answer] of answers.entries()) {
                const exit = yield* Effect.exit(s.answer(ALICE, "w1", answer, ALICE, 2_000 + k))
                const fits = answer._tag === "decision"
                if (recorded === undefined && fits) {
                  expect(Exit.isSuccess(exit) && exit.value._tag).toBe("answered")
                  recorded = answer
                } else if (recorded === undefined) {
                  expect(reasonOf(exit)).toBe("invalid")
                } else {
                  expect(Exit.isSuccess(exit) && exit.value._tag).toBe("already")
                }
              }
              expect((yield* s.get(ALICE, "w1"))?.answered?.answer).toEqual(recorded)
            })
          )
        }),
        { numRuns }
      )
    })

    test(
      "answers arriving at once (a double click, two hosts): exactly one is recorded",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w1"))
        const answers = Array.from({ length: 16 }, (_, k) =>
          s.answer(ALICE, "w1", k % 2 === 0 ? approve : deny, ALICE, 2_000 + k)
        )
        const outcomes = yield* Effect.all(answers, { concurrency: "unbounded" })
        const recorded = outcomes.filter((o) => o._tag === "answered")
        expect(recorded).toHaveLength(1)
        for (const o of outcomes) expect(o.record).toEqual(recorded[0]!.record)
      })
    )

    test(
      "an answer that does not fit the request is invalid and records nothing",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w1"))
        yield* s.open(wait("w2", { request: input }))
        yield* s.open(wait("w3", { request: connect }))
        const values: Wait.WaitAnswer = { _tag: "values", values: { date: "2026-12-24" } }
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w1", values, ALICE, 2_000)))).toBe("invalid")
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w2", approve, ALICE, 2_000)))).toBe("invalid")
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w3", values, ALICE, 2_000)))).toBe("invalid")
        // A client never answers timed-out or connected; the host answers nothing else.
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w1", timedOut, ALICE, 2_000)))).toBe("invalid")
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w1", approve, Store.HOST, 2_000)))).toBe(
          "invalid"
        )
        // Only the wait's user answers it.
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w1", approve, BOB, 2_000)))).toBe("invalid")
        for (const id of ["w1", "w2", "w3"]) expect((yield* s.get(ALICE, id))?.answered).toBeUndefined()
        expect((yield* s.answer(ALICE, "w2", values, ALICE, 2_000))._tag).toBe("answered")
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w3", { _tag: "connected" }, ALICE, 2_000)))).toBe(
          "invalid"
        )
        expect((yield* s.answer(ALICE, "w3", { _tag: "connected" }, Store.HOST, 2_000))._tag).toBe("answered")
      })
    )

    test(
      "past its deadline a wait refuses the client (expired) and takes the host's timed-out",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w1"))
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w1", approve, ALICE, 61_000)))).toBe("expired")
        expect((yield* s.get(ALICE, "w1"))?.answered).toBeUndefined()
        const timeout = yield* s.answer(ALICE, "w1", timedOut, Store.HOST, 61_000)
        expect(timeout.record.answered).toEqual({ answer: timedOut, by: Store.HOST, atMs: 61_000 })
        expect((yield* s.answer(ALICE, "w1", approve, ALICE, 62_000))._tag).toBe("already")
      })
    )

    test(
      "list holds the user's waits oldest first, with how each was answered (the audit)",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w-late", { createdAtMs: 3_000, deadlineMs: 9_000 }))
        yield* s.open(wait("w-early", { createdAtMs: 2_000, deadlineMs: 9_000 }))
        yield* s.open(wait("w-bob", { did: BOB }))
        yield* s.answer(ALICE, "w-late", approve, ALICE, 4_000)
        const listed = yield* s.list(ALICE)
        expect(listed.map((w) => w.waitId)).toEqual(["w-early", "w-late"])
        expect(listed[1]!.answered).toEqual({ answer: approve, by: ALICE, atMs: 4_000 })
        expect((yield* s.list(ALICE, 1)).map((w) => w.waitId)).toEqual(["w-early"])
      })
    )

    test(
      "unanswered holds only the user's waits not answered yet, oldest first",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w-late", { createdAtMs: 3_000, deadlineMs: 9_000 }))
        yield* s.open(wait("w-early", { createdAtMs: 2_000, deadlineMs: 9_000 }))
        yield* s.open(wait("w-mid", { createdAtMs: 2_500, deadlineMs: 9_000 }))
        yield* s.open(wait("w-bob", { did: BOB }))
        yield* s.answer(ALICE, "w-mid", approve, ALICE, 4_000)
        expect((yield* s.unanswered(ALICE)).map((w) => w.waitId)).toEqual(["w-early", "w-late"])
        expect((yield* s.unanswered(ALICE, 1)).map((w) => w.waitId)).toEqual(["w-early"])
        expect((yield* s.unanswered(BOB)).map((w) => w.waitId)).toEqual(["w-bob"])
        expect(reasonOf(yield* Effect.exit(s.unanswered(ALICE, 0)))).toBe("invalid")
      })
    )

    test(
      "due names every user's open waits past their deadline, earliest first",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.open(wait("w1", { deadlineMs: 10_000 }))
        yield* s.open(wait("w2", { did: BOB, deadlineMs: 5_000 }))
        yield* s.open(wait("w3", { deadlineMs: 50_000 }))
        yield* s.open(wait("w4", { deadlineMs: 6_000 }))
        yield* s.answer(ALICE, "w4", approve, ALICE, 2_000)
        expect(yield* s.due(4_999)).toEqual([])
        expect(yield* s.due(10_000)).toEqual([
          { did: BOB, waitId: "w2" },
          { did: ALICE, waitId: "w1" }
        ])
        expect(yield* s.due(10_000, 1)).toEqual([{ did: BOB, waitId: "w2" }])
      })
    )

    test(
      "bad input is refused before anything is stored",
      Effect.gen(function* () {
        const s = yield* store
        const bad: ReadonlyArray<Store.NewWait> = [
          wait(""),
          wait("x".repeat(Store.MAX_ID_LENGTH + 1)),
          wait("../etc"),
          wait("w", { did: "" }),
          wait("w", { runId: "a b" }),
          wait("w", { sessionId: "" }),
          wait("w", { createdAtMs: -1 }),
          wait("w", { deadlineMs: 1.5 }),
          wait("w", { deadlineMs: 1_000 }),
          wait("w", { request: { _tag: "approval" } as never }),
          wait("w", { request: { ...connect, url: "x".repeat(Store.MAX_JSON_LENGTH) } })
        ]
        for (const w of bad) expect(reasonOf(yield* Effect.exit(s.open(w)))).toBe("invalid")
        expect(yield* s.list(ALICE)).toEqual([])
        yield* s.open(wait("w"))
        for (const answer of [{ _tag: "nope" }, { _tag: "decision" }, null] as never[])
          expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w", answer, ALICE, 2_000)))).toBe("invalid")
        expect(reasonOf(yield* Effect.exit(s.answer(ALICE, "w", approve, ALICE, -5)))).toBe("invalid")
        expect(reasonOf(yield* Effect.exit(s.list(ALICE, 0)))).toBe("invalid")
        expect(reasonOf(yield* Effect.exit(s.due(-1)))).toBe("invalid")
        expect((yield* s.get(ALICE, "w"))?.answered).toBeUndefined()
      })
    )
  })
}
