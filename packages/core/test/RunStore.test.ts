import { RunStoreConformance } from "@plugboard/testing"
import { Chunk, Effect, Fiber, Option, Stream } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Clock from "../src/Clock.js"
import * as RunStore from "../src/RunStore.js"

RunStoreConformance.run("memory", () => RunStore.layerMemory)

describe("RunStore helpers", () => {
  it("mints distinct run_ ids", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => RunStore.mintRunId(1_700_000_000_000)))
    expect(ids.size).toBe(1000)
    for (const id of ids) expect(id).toMatch(/^run_[0-9a-z]{30,}$/)
  })

  it("done reports partialText unless the run finished, and the reason when there is one", () => {
    expect(RunStore.doneData({ status: "finished" }, "abc")).toEqual({ status: "finished" })
    expect(RunStore.doneData({ status: "aborted" }, "abc")).toEqual({ status: "aborted", partialText: "abc" })
    expect(RunStore.doneData({ status: "aborted", reason: "user" }, "")).toEqual({
      status: "aborted",
      partialText: "",
      reason: "user"
    })
  })

  it("a notifier keeps nothing for runs nobody follows", async () => {
    const notifier = RunStore.makeNotifier()
    notifier.publish("did:key:a", "r", 3)
    const woke = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(notifier.subscribe("did:key:a", "r"), (sub) =>
          Effect.gen(function* () {
            // A wake-up kept for it would let the wait end at once: give it every chance to.
            const waiting = yield* Effect.fork(sub.awaitBeyond(0))
            for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
            return Option.isNone(yield* Fiber.poll(waiting)) ? "slept" : "woken"
          })
        )
      )
    )
    // The publish happened before anyone subscribed: a follower finds those frames by reading.
    expect(woke).toBe("slept")
  })

  it("two memory stores do not share state", async () => {
    const program = Effect.gen(function* () {
      const a = yield* RunStore.makeMemory
      const b = yield* RunStore.makeMemory
      yield* a.create({ runId: "r", sessionId: "s", did: "did:key:x", requestId: "q" })
      return yield* b.get("did:key:x", "r")
    })
    expect(await Effect.runPromise(Effect.provide(program, Clock.layer))).toEqual(Option.none())
  })

  it("a follower that stops early releases its subscription", async () => {
    const program = Effect.gen(function* () {
      const s = yield* RunStore.makeMemory
      yield* s.create({ runId: "r", sessionId: "s", did: "did:key:x", requestId: "q" })
      yield* s.append("did:key:x", "r", { event: "message", data: { content: "a" } })
      yield* s.append("did:key:x", "r", { event: "message", data: { content: "b" } })
      return yield* Stream.runCollect(Stream.take(s.follow("did:key:x", "r", 0), 1))
    })
    const frames = await Effect.runPromise(Effect.provide(program, Clock.layer))
    expect(Chunk.toReadonlyArray(frames).map((f) => f.id)).toEqual([1])
  })
})

describe("decoding stored frames", () => {
  it("an object decodes as itself; anything else is {undecodable: true}, never an error, never the bytes", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (data) => {
        expect(RunStore.decodeFrameData(JSON.stringify(data))).toEqual(JSON.parse(JSON.stringify(data)))
      })
    )
    fc.assert(
      fc.property(fc.string(), (text) => {
        const decoded = RunStore.decodeFrameData(text)
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {}
        const isObject = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
        if (!isObject) expect(decoded).toEqual({ undecodable: true })
      })
    )
  })
})
