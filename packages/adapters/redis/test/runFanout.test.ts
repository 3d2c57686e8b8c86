/**
 * Run fan-out: a follower on host B, built with core's `followLog` on wake-ups alone (no
 * polling), follows live a run whose frames host A appends and announces. The log itself is a
 * store both hosts read (core's memory RunStore standing in for a shared one).
 */
import { Clock, RunStore } from "@plugboard/core"
import { Chunk, Effect, Fiber, Queue, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { makeRunFanout } from "../src/index.js"
import { connection, deleteKeys, freshPrefix, REDIS_URL, SKIP_REASON } from "./helpers.js"

const ALICE = "did:key:z6MkAlice"

describe.skipIf(REDIS_URL === undefined)(
  `Redis run fan-out${REDIS_URL === undefined ? `: ${SKIP_REASON}` : ""}`,
  () => {
    afterAll(deleteKeys)

    it("a follower on host B is woken by frames host A appends, and sees each once, to done", () =>
      Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const prefix = freshPrefix()
            const hostA = yield* makeRunFanout(yield* connection(prefix))
            const hostB = yield* makeRunFanout(yield* connection(prefix))
            const store = yield* RunStore.makeMemory
            yield* store.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" })
            yield* store.start(ALICE, "r")
            // Host A writes through the store, then announces; it never touches B's followers.
            const appendOnA = (content: string) =>
              Effect.flatMap(store.append(ALICE, "r", { event: "message", data: { content } }), (f) =>
                hostA.publish(ALICE, "r", f.id)
              )
            yield* appendOnA("one ")
            const read = (after: number) =>
              Effect.map(store.frames(ALICE, "r", after), (frames) => ({
                frames,
                ended: frames.some((f) => f.event === "done"),
                lastFrameId: frames.at(-1)?.id ?? after
              }))
            // No pollMs: without the fan-out this follower would wait forever.
            // Each append waits until the follower has seen the frame before it: it is waiting
            // again, and only host A's announcement can bring it the next one.
            const seen = yield* Queue.unbounded<number>()
            const follower = yield* Effect.fork(
              Stream.runCollect(
                Stream.tap(RunStore.followLog(0, { read, subscribe: hostB.subscribe(ALICE, "r") }), (f) =>
                  Queue.offer(seen, f.id)
                )
              )
            )
            expect(yield* Queue.take(seen)).toBe(1)
            yield* appendOnA("two ")
            expect(yield* Queue.take(seen)).toBe(2)
            yield* appendOnA("three")
            const done = yield* store.end(ALICE, "r", { status: "finished" })
            yield* hostA.publish(ALICE, "r", done.id)
            const frames = Chunk.toReadonlyArray(
              yield* Fiber.join(follower).pipe(
                Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "not woken" })
              )
            )
            expect(frames.map((f) => f.id)).toEqual([1, 2, 3, 4])
            expect(frames.map((f) => f.event)).toEqual(["message", "message", "message", "done"])
          })
        ).pipe(Effect.provide(Clock.layer))
      ))

    it("another run's announcements do not wake a follower", () =>
      Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const prefix = freshPrefix()
            const hostA = yield* makeRunFanout(yield* connection(prefix))
            const hostB = yield* makeRunFanout(yield* connection(prefix))
            const subscription = yield* hostB.subscribe(ALICE, "mine")
            yield* hostA.publish(ALICE, "other", 5)
            yield* hostA.publish("did:key:z6MkBob", "mine", 5)
            const early = yield* subscription.awaitBeyond(0).pipe(Effect.timeout("200 millis"), Effect.option)
            expect(early._tag).toBe("None")
            yield* hostA.publish(ALICE, "mine", 1)
            yield* subscription.awaitBeyond(0).pipe(Effect.timeout("2 seconds"))
          })
        )
      ))
  }
)
