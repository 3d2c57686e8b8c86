/**
 * The waits' timeout on the test clock (issue 40): at WAIT_TIMEOUT_MS the host answers the wait
 * `timed-out` and starts the resumed turn once; the sweep answers what a dead process left due.
 */
import { WaitStore } from "@plugboard/core"
import { Effect, Fiber, type Scope, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import { quietLogger } from "../src/index.js"
import * as TurnWaits from "../src/TurnWaits.js"

const request = {
  _tag: "approval",
  plugin: "payments",
  tool: "pay",
  args: { amount: 1 },
  reason: "asks"
} as const

const run = <A>(effect: Effect.Effect<A, unknown, Scope.Scope>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(TestContext.TestContext)))

describe("TurnWaits on the test clock", () => {
  it("answers an open wait timed-out at its deadline, by the host, and resumes it once", async () => {
    const store = WaitStore.makeMemory()
    const started: Array<TurnWaits.TurnResume> = []
    await run(
      Effect.gen(function* () {
        const waits = yield* TurnWaits.make<object, string, never>(
          { store, timeoutMs: 10_000, sweepEveryMs: 60_000 },
          ({ resume }) =>
            Effect.sync(() => {
              started.push(resume)
              return resume.runId
            }),
          quietLogger,
          {}
        )
        const opened = yield* waits.open({
          did: "did:key:zA",
          runId: "run_1",
          sessionId: "s1",
          request,
          context: {}
        })
        expect(opened.waitId).toBe(TurnWaits.waitIdOf("run_1"))
        yield* TestClock.adjust(9_999)
        expect(started).toEqual([])
        expect((yield* store.get("did:key:zA", opened.waitId))?.answered).toBeUndefined()
        yield* TestClock.adjust(1)
        // Let the timer's fiber finish its answer.
        yield* Effect.yieldNow()
        expect(started).toEqual([
          {
            waitId: opened.waitId,
            runId: TurnWaits.resumedRunIdOf(opened.waitId),
            request,
            answer: { _tag: "timed-out" }
          }
        ])
        expect((yield* store.get("did:key:zA", opened.waitId))?.answered).toEqual({
          answer: { _tag: "timed-out" },
          by: WaitStore.HOST,
          atMs: 10_000
        })
        // A user's answer after that gets the first back and starts nothing.
        const late = yield* waits.answer(
          "did:key:zA",
          opened.waitId,
          { _tag: "decision", approved: true },
          "did:key:zA",
          {}
        )
        expect(late.outcome._tag).toBe("already")
        expect(late.started).toBeUndefined()
        expect(started).toHaveLength(1)
      })
    )
  })

  it("the sweep answers the due waits a previous process left, at once and then every interval", async () => {
    const store = WaitStore.makeMemory()
    // Opened by a process that died: no timer of this one is behind it.
    await Effect.runPromise(
      store.open({
        waitId: "wait_left",
        did: "did:key:zB",
        runId: "run_left",
        sessionId: "s1",
        request,
        createdAtMs: 0,
        deadlineMs: 500
      })
    )
    const started: Array<string> = []
    await run(
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(
          TurnWaits.make<object, string, never>(
            { store, timeoutMs: 10_000, sweepEveryMs: 1_000 },
            ({ resume }) =>
              Effect.sync(() => {
                started.push(resume.waitId)
                return resume.runId
              }),
            quietLogger,
            {}
          )
        )
        yield* Fiber.join(fiber)
        yield* Effect.yieldNow()
        // At time 0 it is not due yet.
        expect(started).toEqual([])
        yield* TestClock.adjust(1_000)
        yield* Effect.yieldNow()
        expect(started).toEqual(["wait_left"])
        yield* TestClock.adjust(5_000)
        yield* Effect.yieldNow()
        expect(started).toEqual(["wait_left"])
      })
    )
  })
})
