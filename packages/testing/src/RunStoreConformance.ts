/**
 * The shared conformance suite of the `RunStore` port. Every implementation (the in-memory store
 * in core, the SQLite store in adapters, later the shared engines) runs this same suite, so the
 * guarantees a rejoining client relies on — dense frame ids, one final `done`, the partial text,
 * a follow that neither skips nor repeats — cannot drift apart. At the top level of a test file:
 *
 * ```ts
 * RunStoreConformance.run("memory", () => RunStore.layerMemory)
 * ```
 *
 * The factory is called once per test (and per property run) and must return a fresh, empty
 * store; its layer may be scoped (the suite closes the scope afterwards). Time is the `Clock`
 * port's test clock, provided by the suite, so the layer should take `Clock` from its context.
 */
import { Clock, RunStore as RS } from "@plugboard/core"
import { Chunk, Effect, Either, Exit, Fiber, Layer, Option, Stream } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const T0 = Date.UTC(2025, 0, 1)
const ALICE = "did:key:z6MkAlice"
const BOB = "did:key:z6MkBob"

type Env = RS.RunStore | Clock.Clock | Clock.TestControl

/** Builds the store under test from the suite's `Clock`; called once per test. */
export type RunStoreFactory = () => Layer.Layer<RS.RunStore, unknown, Clock.Clock>

/** Options of the suite. */
export interface RunStoreConformanceOptions {
  /** fast-check runs of each property (default 40). */
  readonly numRuns?: number
}

const runWith = <A>(factory: RunStoreFactory, program: Effect.Effect<A, unknown, Env>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.provide(program, Layer.provideMerge(factory(), Clock.layerTest(T0))) as Effect.Effect<A, unknown>
    )
  )

const store = RS.RunStore
const advance = (ms: number) => Effect.flatMap(Clock.TestControl, (c) => c.advance(ms))

/** Fails the test unless `effect` fails with a `RunStoreError` of `reason`. */
const expectReason = <A, R>(effect: Effect.Effect<A, RS.RunStoreError, R>, reason: RS.RunStoreErrorReason) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(effect)
    if (Exit.isSuccess(exit)) expect.fail(`expected a ${reason} failure, got ${JSON.stringify(exit.value)}`)
    const cause = Exit.isFailure(exit) ? exit.cause : undefined
    const error = cause && cause._tag === "Fail" ? cause.error : undefined
    expect(error, `expected a typed failure, got ${String(cause)}`).toBeInstanceOf(RS.RunStoreError)
    expect((error as RS.RunStoreError).reason).toBe(reason)
  })

const collect = (stream: Stream.Stream<RS.Frame, RS.RunStoreError>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

/** A started run of ALICE in session s1. */
const started = (runId = "run-1", sessionId = "s1") =>
  Effect.gen(function* () {
    const s = yield* store
    yield* s.create({ runId, sessionId, did: ALICE, requestId: `req-${runId}` })
    return yield* s.start(ALICE, runId)
  })

const message = (content: string): RS.FrameInput => ({ event: "message", data: { content } })

/** Registers the RunStore conformance suite under `name` (vitest `describe`/`it`). */
export const run = (
  name: string,
  factory: RunStoreFactory,
  options: RunStoreConformanceOptions = {}
): void => {
  const numRuns = options.numRuns ?? 40
  const test = (title: string, program: Effect.Effect<void, unknown, Env>) =>
    it(title, () => runWith(factory, program))

  describe(`RunStore conformance: ${name}`, () => {
    test(
      "create makes a queued run stamped by the Clock, minting a run_ id when none is given",
      Effect.gen(function* () {
        const s = yield* store
        const minted = yield* s.create({ sessionId: "s1", did: ALICE, requestId: "req-1" })
        expect(minted.runId).toMatch(/^run_[0-9a-z]+$/)
        expect(minted).toEqual({
          runId: minted.runId,
          sessionId: "s1",
          did: ALICE,
          requestId: "req-1",
          status: "queued",
          createdAt: T0,
          updatedAt: T0,
          lastFrameId: 0,
          partialText: ""
        })
        expect(yield* s.get(ALICE, minted.runId)).toEqual(Option.some(minted))
        const other = yield* s.create({ sessionId: "s1", did: ALICE, requestId: "req-2" })
        expect(other.runId).not.toBe(minted.runId)
        const chosen = yield* s.create({ runId: "run-x", sessionId: "s2", did: ALICE, requestId: "req-3" })
        expect(chosen.runId).toBe("run-x")
        yield* expectReason(
          s.create({ runId: "run-x", sessionId: "s2", did: ALICE, requestId: "r" }),
          "invalid"
        )
        expect(yield* s.get(ALICE, "nope")).toEqual(Option.none())
        expect(yield* s.frames(ALICE, minted.runId, 0)).toEqual([])
      })
    )

    test(
      "a run's life: start, numbered frames, partialText, one final done, nothing after it",
      Effect.gen(function* () {
        const s = yield* store
        yield* s.create({ runId: "r", sessionId: "s1", did: ALICE, requestId: "q" })
        yield* advance(10)
        const running = yield* s.start(ALICE, "r")
        expect(running).toMatchObject({ status: "running", updatedAt: T0 + 10, createdAt: T0 })
        yield* expectReason(s.start(ALICE, "r"), "invalid")
        const appended = [
          yield* s.append(ALICE, "r", { event: "run", data: { runId: "r", requestId: "q" } }),
          yield* s.append(ALICE, "r", message("Hello")),
          yield* s.append(ALICE, "r", { event: "tool_call", data: { toolName: "t", status: "isRunning" } }),
          yield* s.append(ALICE, "r", message(", world 🙂"))
        ]
        expect(appended.map((f) => f.id)).toEqual([1, 2, 3, 4])
        expect(appended[1]).toEqual({ id: 2, event: "message", data: { content: "Hello" } })
        yield* advance(5)
        const done = yield* s.end(ALICE, "r", { status: "finished" })
        expect(done).toEqual({ id: 5, event: "done", data: { status: "finished" } })
        expect(yield* s.frames(ALICE, "r", 0)).toEqual([...appended, done])
        const run = Option.getOrThrow(yield* s.get(ALICE, "r"))
        expect(run).toMatchObject({
          status: "finished",
          lastFrameId: 5,
          partialText: "Hello, world 🙂",
          endedAt: T0 + 15,
          updatedAt: T0 + 15
        })
        yield* expectReason(s.append(ALICE, "r", message("late")), "ended")
        yield* expectReason(s.end(ALICE, "r", { status: "failed" }), "ended")
        yield* expectReason(s.start(ALICE, "r"), "ended")
        expect((yield* s.frames(ALICE, "r", 0)).filter((f) => f.event === "done")).toHaveLength(1)
        expect(yield* s.get(ALICE, "r")).toEqual(Option.some(run))
      })
    )

    test(
      "a run created running is running at once: frames go in, and start is refused as for a started run",
      Effect.gen(function* () {
        const s = yield* store
        const run = yield* s.create({
          runId: "r",
          sessionId: "s1",
          did: ALICE,
          requestId: "q",
          status: "running"
        })
        expect(run).toMatchObject({ status: "running", createdAt: T0, updatedAt: T0, lastFrameId: 0 })
        expect(Option.getOrThrow(yield* s.get(ALICE, "r")).status).toBe("running")
        expect(Option.getOrThrow(yield* s.activeForSession(ALICE, "s1")).runId).toBe("r")
        yield* expectReason(s.start(ALICE, "r"), "invalid")
        expect((yield* s.append(ALICE, "r", message("hi"))).id).toBe(1)
        const queued = yield* s.create({
          runId: "q",
          sessionId: "s2",
          did: ALICE,
          requestId: "q",
          status: "queued"
        })
        expect(queued.status).toBe("queued")
        yield* expectReason(
          s.create({ sessionId: "s1", did: ALICE, requestId: "q", status: "finished" as never }),
          "invalid"
        )
      })
    )

    test(
      "a run cut short says how in done, with the partial text; a queued run can end too",
      Effect.gen(function* () {
        const s = yield* store
        for (const status of ["interrupted", "aborted", "failed"] as const) {
          yield* started(status)
          yield* s.append(ALICE, status, message("par"))
          yield* s.append(ALICE, status, message("tial"))
          const done = yield* s.end(ALICE, status, { status })
          expect(done).toEqual({ id: 3, event: "done", data: { status, partialText: "partial" } })
        }
        yield* s.create({ runId: "never-started", sessionId: "s1", did: ALICE, requestId: "q" })
        const done = yield* s.end(ALICE, "never-started", { status: "aborted" })
        expect(done).toEqual({ id: 1, event: "done", data: { status: "aborted", partialText: "" } })
        expect(Option.getOrThrow(yield* s.get(ALICE, "never-started")).status).toBe("aborted")
      })
    )

    test(
      "done carries why a run was cut short; a reason that is not a short slug is refused",
      Effect.gen(function* () {
        const s = yield* store
        yield* started("bounded")
        yield* s.append(ALICE, "bounded", message("so far"))
        const refused = yield* Effect.flip(
          s.end(ALICE, "bounded", { status: "failed", reason: "no spaces allowed" })
        )
        expect(refused.reason).toBe("invalid")
        const done = yield* s.end(ALICE, "bounded", { status: "failed", reason: "max-tool-calls" })
        expect(done.data).toEqual({ status: "failed", partialText: "so far", reason: "max-tool-calls" })
        expect((yield* s.frames(ALICE, "bounded", 0)).at(-1)).toEqual(done)
      })
    )

    test(
      "appendAll appends in order with consecutive ids, as appends one by one would, and wakes followers",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("A"))
        const follower = yield* Effect.fork(collect(s.follow(ALICE, "run-1", 1)))
        yield* advance(7)
        const batch = yield* s.appendAll(ALICE, "run-1", [
          { event: "tool_call", data: { toolName: "t", status: "isRunning" } },
          message("B"),
          message("C 🙂")
        ])
        expect(batch).toEqual([
          { id: 2, event: "tool_call", data: { toolName: "t", status: "isRunning" } },
          { id: 3, event: "message", data: { content: "B" } },
          { id: 4, event: "message", data: { content: "C 🙂" } }
        ])
        expect(yield* s.appendAll(ALICE, "run-1", [])).toEqual([])
        expect((yield* s.append(ALICE, "run-1", message("D"))).id).toBe(5)
        expect(Option.getOrThrow(yield* s.get(ALICE, "run-1"))).toMatchObject({
          lastFrameId: 5,
          partialText: "ABC 🙂D",
          updatedAt: T0 + 7
        })
        yield* s.end(ALICE, "run-1", { status: "finished" })
        const followed = yield* Fiber.join(follower)
        expect(followed.map((f) => f.id)).toEqual([2, 3, 4, 5, 6])
        expect(yield* s.frames(ALICE, "run-1", 1)).toEqual([...batch, ...followed.slice(3)])
      })
    )

    test(
      "appendAll is all or none: a bad frame, an ended run or another user's run appends nothing",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("kept"))
        yield* expectReason(
          s.appendAll(ALICE, "run-1", [message("lost"), { event: "message", data: { content: 42 } }]),
          "invalid"
        )
        yield* expectReason(
          s.appendAll(ALICE, "run-1", [message("lost"), { event: "done", data: { status: "finished" } }]),
          "invalid"
        )
        yield* expectReason(s.appendAll(BOB, "run-1", [message("x")]), "not-found")
        yield* expectReason(s.appendAll(ALICE, "unknown", [message("x")]), "not-found")
        expect(Option.getOrThrow(yield* s.get(ALICE, "run-1"))).toMatchObject({
          lastFrameId: 1,
          partialText: "kept"
        })
        yield* s.end(ALICE, "run-1", { status: "aborted" })
        yield* expectReason(s.appendAll(ALICE, "run-1", [message("late")]), "ended")
        expect((yield* s.frames(ALICE, "run-1", 0)).map((f) => f.event)).toEqual(["message", "done"])
      })
    )

    test(
      "end with frames appends them, then done, in one change: consecutive ids, their text in done, followers see them in order",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("A"))
        const follower = yield* Effect.fork(collect(s.follow(ALICE, "run-1", 1)))
        yield* Effect.sleep(5)
        yield* advance(3)
        const done = yield* s.end(ALICE, "run-1", { status: "aborted", reason: "user" }, [
          message("B"),
          { event: "tool_call", data: { toolName: "t", status: "isRunning", dropped: undefined } },
          message("C 🙂")
        ])
        expect(done).toEqual({
          id: 5,
          event: "done",
          data: { status: "aborted", partialText: "ABC 🙂", reason: "user" }
        })
        const all = yield* s.frames(ALICE, "run-1", 0)
        expect(all).toEqual([
          { id: 1, event: "message", data: { content: "A" } },
          { id: 2, event: "message", data: { content: "B" } },
          { id: 3, event: "tool_call", data: { toolName: "t", status: "isRunning" } },
          { id: 4, event: "message", data: { content: "C 🙂" } },
          done
        ])
        expect(yield* Fiber.join(follower)).toEqual(all.slice(1))
        expect(Option.getOrThrow(yield* s.get(ALICE, "run-1"))).toMatchObject({
          status: "aborted",
          lastFrameId: 5,
          partialText: "ABC 🙂",
          updatedAt: T0 + 3,
          endedAt: T0 + 3
        })
        // No frames is an end like any other; a finished run's done carries no text.
        yield* started("run-2")
        expect(yield* s.end(ALICE, "run-2", { status: "finished" }, [])).toEqual({
          id: 1,
          event: "done",
          data: { status: "finished" }
        })
        yield* started("run-3")
        expect(yield* s.end(ALICE, "run-3", { status: "finished" }, [message("all")])).toEqual({
          id: 2,
          event: "done",
          data: { status: "finished" }
        })
        expect(Option.getOrThrow(yield* s.get(ALICE, "run-3")).partialText).toBe("all")
      })
    )

    test(
      "end with frames is all or none: a refused frame refuses the end, and nothing is written",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("kept"))
        const refused: ReadonlyArray<ReadonlyArray<RS.FrameInput>> = [
          [message("lost"), { event: "message", data: { content: 42 } }],
          [message("lost"), { event: "done", data: { status: "finished" } }],
          [{ event: "bad event", data: {} }],
          [message("lost"), { event: "tool_call", data: null as unknown as Record<string, unknown> }]
        ]
        for (const frames of refused) {
          yield* expectReason(s.end(ALICE, "run-1", { status: "finished" }, frames), "invalid")
        }
        yield* expectReason(
          s.end(ALICE, "run-1", { status: "nope" as RS.EndStatus }, [message("x")]),
          "invalid"
        )
        yield* expectReason(s.end(BOB, "run-1", { status: "finished" }, [message("x")]), "not-found")
        yield* expectReason(s.end(ALICE, "unknown", { status: "finished" }, [message("x")]), "not-found")
        expect(Option.getOrThrow(yield* s.get(ALICE, "run-1"))).toMatchObject({
          status: "running",
          lastFrameId: 1,
          partialText: "kept"
        })
        expect((yield* s.frames(ALICE, "run-1", 0)).map((f) => f.id)).toEqual([1])
        yield* s.end(ALICE, "run-1", { status: "interrupted" })
        yield* expectReason(s.end(ALICE, "run-1", { status: "finished" }, [message("late")]), "ended")
        expect((yield* s.frames(ALICE, "run-1", 0)).map((f) => f.event)).toEqual(["message", "done"])
        expect(Option.getOrThrow(yield* s.get(ALICE, "run-1")).partialText).toBe("kept")
      })
    )

    test(
      "frames(after) returns the frames above the cursor, in order",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        for (let i = 0; i < 6; i++) yield* s.append(ALICE, "run-1", message(`${i}`))
        expect((yield* s.frames(ALICE, "run-1", 2)).map((f) => f.id)).toEqual([3, 4, 5, 6])
        expect(yield* s.frames(ALICE, "run-1", 6)).toEqual([])
        expect(yield* s.frames(ALICE, "run-1", 60)).toEqual([])
        yield* expectReason(s.frames(ALICE, "unknown", 0), "not-found")
      })
    )

    test(
      "stored frames are copies: changing the caller's object later changes nothing",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        const data = { toolName: "t", args: { list: [1, 2] }, dropped: undefined }
        yield* s.append(ALICE, "run-1", { event: "tool_call", data })
        data.args.list.push(3)
        const [frame] = yield* s.frames(ALICE, "run-1", 0)
        expect(frame?.data).toEqual({ toolName: "t", args: { list: [1, 2] } })
        expect(Object.keys(frame?.data ?? {})).toEqual(["toolName", "args"])
      })
    )

    test(
      "users are isolated: another user's run id reads as unknown, for every operation",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("secret"))
        expect(yield* s.get(BOB, "run-1")).toEqual(Option.none())
        yield* expectReason(s.frames(BOB, "run-1", 0), "not-found")
        yield* expectReason(collect(s.follow(BOB, "run-1", 0)), "not-found")
        yield* expectReason(s.append(BOB, "run-1", message("x")), "not-found")
        yield* expectReason(s.start(BOB, "run-1"), "not-found")
        yield* expectReason(s.end(BOB, "run-1", { status: "aborted" }), "not-found")
        expect(yield* s.activeForSession(BOB, "s1")).toEqual(Option.none())
        // The same ids are free for another user and independent.
        yield* s.create({ runId: "run-1", sessionId: "s1", did: BOB, requestId: "b" })
        yield* s.end(BOB, "run-1", { status: "failed" })
        const alice = Option.getOrThrow(yield* s.get(ALICE, "run-1"))
        expect(alice).toMatchObject({ status: "running", partialText: "secret", lastFrameId: 1 })
      })
    )

    test(
      "follow replays what is stored, then follows live appends, and ends after done",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("a"))
        yield* s.append(ALICE, "run-1", message("b"))
        const fromStart = yield* Effect.fork(collect(s.follow(ALICE, "run-1", 0)))
        const fromOne = yield* Effect.fork(collect(s.follow(ALICE, "run-1", 1)))
        yield* Effect.sleep(5)
        yield* s.append(ALICE, "run-1", message("c"))
        yield* Effect.sleep(5)
        const fromThree = yield* Effect.fork(collect(s.follow(ALICE, "run-1", 3)))
        yield* s.append(ALICE, "run-1", message("d"))
        yield* s.end(ALICE, "run-1", { status: "interrupted" })
        const all = yield* s.frames(ALICE, "run-1", 0)
        expect(all.map((f) => f.id)).toEqual([1, 2, 3, 4, 5])
        expect(yield* Fiber.join(fromStart)).toEqual(all)
        expect(yield* Fiber.join(fromOne)).toEqual(all.slice(1))
        expect(yield* Fiber.join(fromThree)).toEqual(all.slice(3))
        expect(all[4]?.data).toEqual({ status: "interrupted", partialText: "abcd" })
      })
    )

    test(
      "follow of an ended run replays up to done and ends; past done it is empty",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        yield* s.append(ALICE, "run-1", message("a"))
        yield* s.end(ALICE, "run-1", { status: "finished" })
        const all = yield* s.frames(ALICE, "run-1", 0)
        expect(yield* collect(s.follow(ALICE, "run-1", 0))).toEqual(all)
        expect(yield* collect(s.follow(ALICE, "run-1", 1))).toEqual(all.slice(1))
        expect(yield* collect(s.follow(ALICE, "run-1", 2))).toEqual([])
        yield* expectReason(collect(s.follow(ALICE, "run-1", 3)), "invalid")
        yield* expectReason(collect(s.follow(ALICE, "unknown", 0)), "not-found")
        yield* expectReason(collect(s.follow(ALICE, "run-1", -1)), "invalid")
      })
    )

    test(
      "activeForSession finds the session's queued or running run, newest first, never an ended one",
      Effect.gen(function* () {
        const s = yield* store
        expect(yield* s.activeForSession(ALICE, "s1")).toEqual(Option.none())
        const queued = yield* s.create({ runId: "a", sessionId: "s1", did: ALICE, requestId: "q" })
        expect(yield* s.activeForSession(ALICE, "s1")).toEqual(Option.some(queued))
        const running = yield* s.start(ALICE, "a")
        expect(yield* s.activeForSession(ALICE, "s1")).toEqual(Option.some(running))
        yield* advance(1)
        yield* s.create({ runId: "b", sessionId: "s1", did: ALICE, requestId: "q" })
        expect(Option.map(yield* s.activeForSession(ALICE, "s1"), (r) => r.runId)).toEqual(Option.some("b"))
        yield* s.end(ALICE, "b", { status: "aborted" })
        expect(Option.map(yield* s.activeForSession(ALICE, "s1"), (r) => r.runId)).toEqual(Option.some("a"))
        yield* s.end(ALICE, "a", { status: "finished" })
        expect(yield* s.activeForSession(ALICE, "s1")).toEqual(Option.none())
        yield* s.create({ runId: "c", sessionId: "s2", did: ALICE, requestId: "q" })
        expect(yield* s.activeForSession(ALICE, "s1")).toEqual(Option.none())
        expect(yield* s.activeForSession(BOB, "s2")).toEqual(Option.none())
      })
    )

    test(
      "interruptUnfinished ends every queued or running run as interrupted, with its partial text",
      Effect.gen(function* () {
        const s = yield* store
        yield* started("r1")
        yield* s.append(ALICE, "r1", message("half an "))
        yield* s.append(ALICE, "r1", message("answer"))
        yield* s.create({ runId: "r2", sessionId: "s2", did: BOB, requestId: "q" })
        yield* started("r3", "s3")
        yield* s.end(ALICE, "r3", { status: "finished" })
        const follower = yield* Effect.fork(collect(s.follow(ALICE, "r1", 2)))
        yield* Effect.sleep(5)
        yield* advance(7)
        expect(yield* s.interruptUnfinished()).toHaveLength(2)
        const r1 = Option.getOrThrow(yield* s.get(ALICE, "r1"))
        expect(r1).toMatchObject({ status: "interrupted", endedAt: T0 + 7, lastFrameId: 3 })
        const done = {
          id: 3,
          event: "done",
          data: { status: "interrupted", partialText: "half an answer", reason: "restart" }
        }
        expect(yield* s.frames(ALICE, "r1", 2)).toEqual([done])
        expect(yield* Fiber.join(follower)).toEqual([done])
        expect(yield* s.frames(BOB, "r2", 0)).toEqual([
          { id: 1, event: "done", data: { status: "interrupted", partialText: "", reason: "restart" } }
        ])
        expect(Option.getOrThrow(yield* s.get(ALICE, "r3")).status).toBe("finished")
        expect(yield* s.interruptUnfinished()).toHaveLength(0)
      })
    )

    test(
      "prune deletes runs (and frames) that ended longer ago than the retention, never an active one",
      Effect.gen(function* () {
        const s = yield* store
        yield* started("old")
        yield* s.append(ALICE, "old", message("x"))
        yield* s.end(ALICE, "old", { status: "finished" })
        yield* started("active")
        yield* advance(1000)
        yield* started("recent")
        yield* s.end(ALICE, "recent", { status: "failed" })
        expect(yield* s.prune(1000)).toBe(0) // "old" ended exactly 1000 ms ago: kept
        yield* advance(1)
        expect(yield* s.prune(1000)).toBe(1)
        expect(yield* s.get(ALICE, "old")).toEqual(Option.none())
        yield* expectReason(s.frames(ALICE, "old", 0), "not-found")
        expect(Option.isSome(yield* s.get(ALICE, "recent"))).toBe(true)
        yield* advance(1_000_000)
        expect(yield* s.prune(0)).toBe(1)
        expect(Option.getOrThrow(yield* s.get(ALICE, "active")).status).toBe("running")
        // A pruned id may be used again.
        yield* s.create({ runId: "old", sessionId: "s1", did: ALICE, requestId: "q" })
      })
    )

    test(
      "deleteSession deletes the session's runs and frames, ended or not, and nothing else; a follower ends not-found",
      Effect.gen(function* () {
        const s = yield* store
        yield* started("ended", "gone")
        yield* s.append(ALICE, "ended", message("the deleted conversation"))
        yield* s.end(ALICE, "ended", { status: "finished" })
        yield* started("live", "gone")
        yield* started("other", "kept")
        yield* s.create({ runId: "bobs", sessionId: "gone", did: BOB, requestId: "q" })
        const follower = yield* Effect.fork(Effect.either(collect(s.follow(ALICE, "live", 0))))
        expect(yield* s.deleteSession(ALICE, "gone")).toBe(2)
        expect(yield* s.get(ALICE, "ended")).toEqual(Option.none())
        yield* expectReason(s.frames(ALICE, "ended", 0), "not-found")
        yield* expectReason(s.append(ALICE, "live", message("late")), "not-found")
        const followed = yield* Fiber.join(follower)
        expect(Either.isLeft(followed) && followed.left.reason).toBe("not-found")
        // Another session of the user, and another user's session of the same id, are untouched.
        expect(Option.isSome(yield* s.get(ALICE, "other"))).toBe(true)
        expect(Option.isSome(yield* s.get(BOB, "bobs"))).toBe(true)
        expect(yield* s.deleteSession(ALICE, "gone")).toBe(0)
        yield* expectReason(s.deleteSession(ALICE, ""), "invalid")
      })
    )

    test(
      "bad input fails Invalid and changes nothing",
      Effect.gen(function* () {
        const s = yield* store
        yield* started()
        const bad: Array<Effect.Effect<unknown, RS.RunStoreError, never>> = [
          s.create({ sessionId: "s", did: "", requestId: "q" }),
          s.create({ sessionId: "", did: ALICE, requestId: "q" }),
          s.create({ sessionId: "s", did: ALICE, requestId: "" }),
          s.create({ runId: "a\nb", sessionId: "s", did: ALICE, requestId: "q" }),
          s.create({ runId: "x".repeat(RS.MAX_ID_LENGTH + 1), sessionId: "s", did: ALICE, requestId: "q" }),
          s.append(ALICE, "run-1", { event: "done", data: { status: "finished" } }),
          s.append(ALICE, "run-1", { event: "", data: {} }),
          s.append(ALICE, "run-1", { event: "bad\nevent", data: {} }),
          s.append(ALICE, "run-1", { event: "x".repeat(65), data: {} }),
          s.append(ALICE, "run-1", { event: "message", data: {} }),
          s.append(ALICE, "run-1", { event: "message", data: { content: 5 } }),
          s.append(ALICE, "run-1", { event: "tool_call", data: null as unknown as Record<string, unknown> }),
          s.append(ALICE, "run-1", { event: "tool_call", data: [1] as unknown as Record<string, unknown> }),
          s.append(ALICE, "run-1", { event: "tool_call", data: { n: BigInt(1) } }),
          s.end(ALICE, "run-1", { status: "running" as RS.EndStatus }),
          s.frames(ALICE, "run-1", -1),
          s.frames(ALICE, "run-1", 1.5),
          s.get("", "run-1"),
          s.get(ALICE, ""),
          s.activeForSession(ALICE, "\u0000"),
          s.prune(-1),
          s.prune(Number.NaN)
        ]
        for (const effect of bad) yield* expectReason(effect, "invalid")
        const run = Option.getOrThrow(yield* s.get(ALICE, "run-1"))
        expect(run).toMatchObject({ status: "running", lastFrameId: 0, partialText: "" })
      })
    )

    it("property: concurrent appends and appendAlls get ids 1..n without gaps (each appendAll's consecutive), and partialText is the message contents in id order", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.array(
              // One frame (`append`) or several (`appendAll`).
              fc.array(
                fc.oneof(
                  fc.string({ maxLength: 4 }).map(message),
                  fc.constant<RS.FrameInput>({ event: "tool_call", data: { toolName: "t" } })
                ),
                { minLength: 1, maxLength: 3 }
              ),
              { minLength: 1, maxLength: 5 }
            ),
            { maxLength: 6 }
          ),
          (batches) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const s = yield* store
                yield* started()
                const returned: Array<RS.Frame> = []
                for (const batch of batches) {
                  const calls = yield* Effect.all(
                    batch.map((frames) =>
                      frames.length === 1
                        ? Effect.map(s.append(ALICE, "run-1", frames[0]!), (f) => [f])
                        : s.appendAll(ALICE, "run-1", frames)
                    ),
                    { concurrency: "unbounded" }
                  )
                  for (const frames of calls) {
                    expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => frames[0]!.id + i))
                    returned.push(...frames)
                  }
                }
                const stored = yield* s.frames(ALICE, "run-1", 0)
                expect(stored.map((f) => f.id)).toEqual(stored.map((_, i) => i + 1))
                expect([...returned].sort((a, b) => a.id - b.id)).toEqual(stored)
                const text = stored
                  .filter((f) => f.event === "message")
                  .map((f) => f.data.content as string)
                  .join("")
                expect(Option.getOrThrow(yield* s.get(ALICE, "run-1")).partialText).toBe(text)
                const done = yield* s.end(ALICE, "run-1", { status: "aborted" })
                expect(done).toEqual({
                  id: stored.length + 1,
                  event: "done",
                  data: { status: "aborted", partialText: text }
                })
              })
            )
        ),
        { numRuns }
      ))

    it("property: an end with frames after any appends gives ids 1..n with done last, followers from any cursor see each frame once, and done's partialText is every message's", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 3 }), { maxLength: 4 }),
          fc.array(
            fc.oneof(
              fc.string({ maxLength: 4 }).map(message),
              fc.constant<RS.FrameInput>({ event: "tool_call", data: { toolName: "t" } })
            ),
            { maxLength: 5 }
          ),
          fc.array(fc.nat({ max: 6 }), { maxLength: 3 }),
          fc.constantFrom<RS.EndStatus>("finished", "interrupted", "aborted", "failed"),
          (batches, last, backs, status) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const s = yield* store
                yield* started()
                const followers: Array<{
                  after: number
                  fiber: Fiber.RuntimeFiber<ReadonlyArray<RS.Frame>, unknown>
                }> = []
                for (const batch of batches) {
                  yield* s.appendAll(ALICE, "run-1", batch.map(message))
                  const lastId = Option.getOrThrow(yield* s.get(ALICE, "run-1")).lastFrameId
                  for (const back of backs) {
                    const after = Math.max(0, lastId - back)
                    followers.push({
                      after,
                      fiber: yield* Effect.fork(collect(s.follow(ALICE, "run-1", after)))
                    })
                  }
                }
                const before = Option.getOrThrow(yield* s.get(ALICE, "run-1")).lastFrameId
                const done = yield* s.end(ALICE, "run-1", { status }, last)
                expect(done.id).toBe(before + last.length + 1)
                const all = yield* s.frames(ALICE, "run-1", 0)
                expect(all.map((f) => f.id)).toEqual(all.map((_, i) => i + 1))
                expect(all.at(-1)).toEqual(done)
                expect(all.slice(before, -1).map(({ event, data }) => ({ event, data }))).toEqual(last)
                const text = all
                  .filter((f) => f.event === "message")
                  .map((f) => f.data.content as string)
                  .join("")
                expect(Option.getOrThrow(yield* s.get(ALICE, "run-1")).partialText).toBe(text)
                expect(done.data).toEqual(status === "finished" ? { status } : { status, partialText: text })
                for (const { after, fiber } of followers) {
                  expect(yield* Fiber.join(fiber)).toEqual(all.slice(after))
                }
              })
            )
        ),
        { numRuns }
      ))

    it("property: followers joining at any point, from any cursor, see every frame above it exactly once", () =>
      fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              fc.record({ kind: fc.constant("append" as const), parallel: fc.integer({ min: 1, max: 3 }) }),
              fc.record({ kind: fc.constant("follow" as const), back: fc.nat({ max: 4 }) }),
              fc.record({ kind: fc.constant("yield" as const), times: fc.integer({ min: 1, max: 3 }) }),
              fc.record({ kind: fc.constant("sleep" as const) })
            ),
            { maxLength: 25 }
          ),
          fc.constantFrom<RS.EndStatus>("finished", "interrupted", "aborted", "failed"),
          (ops, status) =>
            runWith(
              factory,
              Effect.gen(function* () {
                const s = yield* store
                yield* started()
                const followers: Array<{
                  after: number
                  fiber: Fiber.RuntimeFiber<ReadonlyArray<RS.Frame>, unknown>
                }> = []
                let n = 0
                for (const op of ops) {
                  if (op.kind === "append") {
                    // Appends race each other and the followers' subscriptions.
                    yield* Effect.forkDaemon(
                      Effect.all(
                        Array.from({ length: op.parallel }, () =>
                          s.append(ALICE, "run-1", message(`${n++},`))
                        ),
                        { concurrency: "unbounded" }
                      )
                    )
                  } else if (op.kind === "follow") {
                    const last = Option.getOrThrow(yield* s.get(ALICE, "run-1")).lastFrameId
                    const after = Math.max(0, last - op.back)
                    followers.push({
                      after,
                      fiber: yield* Effect.fork(collect(s.follow(ALICE, "run-1", after)))
                    })
                  } else if (op.kind === "yield") {
                    for (let i = 0; i < op.times; i++) yield* Effect.yieldNow()
                  } else {
                    yield* Effect.sleep(1)
                  }
                }
                // Let the forked appends land, then end the run.
                while (Option.getOrThrow(yield* s.get(ALICE, "run-1")).lastFrameId < n) yield* Effect.sleep(1)
                yield* s.end(ALICE, "run-1", { status })
                const all = yield* s.frames(ALICE, "run-1", 0)
                expect(all.map((f) => f.id)).toEqual(all.map((_, i) => i + 1))
                expect(all[all.length - 1]?.event).toBe("done")
                for (const { after, fiber } of followers) {
                  expect(yield* Fiber.join(fiber)).toEqual(all.slice(after))
                }
              })
            )
        ),
        { numRuns }
      ))
  })
}
