/**
 * The shared conformance suite of the `TurnControl` port. At the top level of a test file:
 *
 * ```ts
 * TurnControlConformance.run("memory", () =>
 *   Effect.sync(() => {
 *     const hub = TurnControl.makeHub()
 *     return Effect.sync(() => TurnControl.makeMemory(hub))
 *   })
 * )
 * ```
 *
 * The factory is called once per test and returns a fresh engine (its own key space): an effect
 * that makes one process's control on it, called once per simulated process. These tests take
 * real milliseconds (an answer that does not come in time is waited for).
 */
import { TurnControl as TC } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import { describe, expect, it } from "vitest"

/** A fresh engine: an effect making one process's control on it. */
export type TurnControlFactory = () => Effect.Effect<
  Effect.Effect<TC.TurnControlService, unknown, Scope.Scope>,
  unknown,
  Scope.Scope
>

const DID = "did:key:z6MkAlice"
const request = (sessionId: string, waitMs = 0, reason: TC.StopReason = "user"): TC.StopRequest => ({
  did: DID,
  sessionId,
  reason,
  waitMs
})

/** A handler recording its requests, answering `found` for the sessions in `running`. */
const recording = (running: ReadonlyArray<string>, delayMs = 0) => {
  const seen: Array<TC.StopRequest> = []
  const handler: TC.StopHandler = async (r) => {
    seen.push(r)
    if (delayMs > 0) await Effect.runPromise(Effect.sleep(delayMs))
    return { found: r.did === DID && running.includes(r.sessionId), ended: true }
  }
  return { seen, handler }
}

/** Registers the suite's tests for one implementation. */
export const run = (name: string, factory: TurnControlFactory): void => {
  const test = (
    title: string,
    body: (
      host: () => Effect.Effect<TC.TurnControlService, unknown, Scope.Scope>
    ) => Effect.Effect<void, unknown, Scope.Scope>,
    timeout = 15_000
  ) =>
    it(
      title,
      () => Effect.runPromise(Effect.scoped(Effect.flatMap(factory(), (make) => body(() => make)))),
      timeout
    )

  describe(`TurnControl conformance: ${name}`, () => {
    test("a stop nobody serves finds nothing, and nothing is left running", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        expect(yield* a.stop(request("s1", 200, "deleted"))).toEqual({ found: false, ended: true })
      }))

    test("a stop from one process reaches the handler of another, with the request as sent", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        const b = yield* host()
        const onA = recording(["s1"])
        yield* a.serve(onA.handler)
        expect(yield* b.stop(request("s1", 0, "user"))).toEqual({ found: true, ended: true })
        expect(onA.seen).toEqual([request("s1", 0, "user")])
        expect(yield* b.stop(request("s2", 250, "deleted"))).toEqual({ found: false, ended: true })
        expect(onA.seen.at(-1)).toEqual(request("s2", 250, "deleted"))
      }))

    test("every serving process is asked, the sender's own included; found if any found", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        const b = yield* host()
        const onA = recording([])
        const onB = recording(["s1"])
        yield* a.serve(onA.handler)
        yield* b.serve(onB.handler)
        expect(yield* b.stop(request("s1"))).toEqual({ found: true, ended: true })
        expect(yield* a.stop(request("s1"))).toEqual({ found: true, ended: true })
        expect(onA.seen).toHaveLength(2)
        expect(onB.seen).toHaveLength(2)
      }))

    test("concurrent stops get their own answers", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        const b = yield* host()
        yield* a.serve(recording(["x"], 50).handler)
        const results = yield* Effect.all(
          ["x", "y", "x", "y", "y"].map((s) => b.stop(request(s))),
          { concurrency: "unbounded" }
        )
        expect(results.map((r) => r.found)).toEqual([true, false, true, false, false])
      }))

    test("a handler that says its turn has not ended, or does not answer in time, leaves ended false", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        const b = yield* host()
        // A turn that would not stop.
        yield* a.serve(async () => ({ found: true, ended: false }))
        expect(yield* b.stop(request("s1", 100, "deleted"))).toEqual({ found: true, ended: false })
        // A process that never answers: after waitMs (and the port's grace) the stop gives up on it.
        const silent = yield* host()
        yield* silent.serve(() => new Promise(() => {}))
        const started = Date.now()
        const result = yield* b.stop(request("s1", 100, "deleted"))
        expect(result.ended).toBe(false)
        expect(result.found).toBe(true)
        expect(Date.now() - started).toBeLessThan(100 + TC.ANSWER_GRACE_MS + 3_000)
      }))

    test("a handler whose scope closed is no longer asked", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        const b = yield* host()
        const onA = recording(["s1"])
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* a.serve(onA.handler)
            expect((yield* b.stop(request("s1"))).found).toBe(true)
          })
        )
        expect(yield* b.stop(request("s1"))).toEqual({ found: false, ended: true })
        expect(onA.seen).toHaveLength(1)
      }))

    test("a bad request fails Invalid, naming the field, and reaches no handler", (host) =>
      Effect.gen(function* () {
        const a = yield* host()
        const onA = recording(["s1"])
        yield* a.serve(onA.handler)
        const bad: ReadonlyArray<[unknown, string]> = [
          [null, "object"],
          [{ ...request("s1"), did: "" }, "did"],
          [{ ...request("s1"), sessionId: 7 }, "sessionId"],
          [{ ...request("s1"), reason: "shutdown" }, "reason"],
          [{ ...request("s1"), waitMs: -1 }, "waitMs"],
          [{ ...request("s1"), waitMs: 1.5 }, "waitMs"],
          [{ ...request("s1"), waitMs: TC.MAX_WAIT_MS + 1 }, "waitMs"]
        ]
        for (const [input, field] of bad) {
          const exit = yield* Effect.exit(a.stop(input as TC.StopRequest))
          expect(Exit.isFailure(exit)).toBe(true)
          if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
            expect(exit.cause.error.reason).toBe("invalid")
            expect(exit.cause.error.message).toContain(field)
          }
        }
        expect(onA.seen).toEqual([])
      }))
  })
}
