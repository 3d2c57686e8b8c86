/**
 * `appendsInCallOrder` (`OrderedRuns.ts`): on a store whose calls take the run's next frame id when
 * they land (a pool of connections), the appends of one run started together still get their ids
 * in call order, the `done` last; another run does not wait for them.
 */
import { Clock, RunStore } from "@plugboard/core"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { appendsInCallOrder } from "../src/OrderedRuns.js"

const DID = "did:key:z6MkOrdered"

describe("appendsInCallOrder", () => {
  it("one run's appends, started at once and landing in any order, are numbered in call order", async () => {
    const store = await Effect.runPromise(Effect.provide(RunStore.makeMemory, Clock.layer))
    // Later calls land sooner: without the order, ids would come out reversed.
    let delay = 40
    const slow: RunStore.RunStoreService = {
      ...store,
      append: (did, runId, frame) => {
        delay = Math.max(0, delay - 10)
        return Effect.zipRight(Effect.sleep(`${delay} millis`), store.append(did, runId, frame))
      }
    }
    const runs = appendsInCallOrder(slow)
    const [a, b] = await Effect.runPromise(
      Effect.all([
        store.create({ did: DID, sessionId: "s", requestId: "a" }),
        store.create({ did: DID, sessionId: "t", requestId: "b" })
      ])
    )
    await Effect.runPromise(Effect.all([store.start(DID, a!.runId), store.start(DID, b!.runId)]))
    const landed = await Promise.all([
      ...["one ", "two ", "three."].map((content) =>
        Effect.runPromise(runs.append(DID, a!.runId, { event: "message", data: { content } }))
      ),
      // The end's own last frames (`RunStore.end`'s `frames`) are the store's: numbered before `done`.
      Effect.runPromise(
        runs.end(DID, a!.runId, { status: "finished" }, [{ event: "message", data: { content: " four" } }])
      ),
      Effect.runPromise(runs.append(DID, b!.runId, { event: "message", data: { content: "other" } }))
    ])
    expect(landed.slice(0, 4).map((f) => f.id)).toEqual([1, 2, 3, 5])
    expect(landed[3]!.event).toBe("done")
    const frames = await Effect.runPromise(store.frames(DID, a!.runId, 0))
    expect(frames.map((f) => f.data.content ?? f.event)).toEqual(["one ", "two ", "three.", " four", "done"])
    expect(landed[4]!.id).toBe(1)
  })
})
