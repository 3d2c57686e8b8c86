/**
 * A run's frames leave in the order the turn emitted them, whatever the order the store answers
 * in, and `done` comes last (RunLog.ts).
 */
import { Clock, RunStore } from "@plugboard/core"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeRunLog } from "../src/RunLog.js"

const did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

/** The memory store, answering each append after `delays[i]` ms (stored at once, in call order). */
const slowStore = (delays: ReadonlyArray<number>, failAt: ReadonlySet<number>) => {
  const inner = Effect.runSync(Effect.provide(RunStore.makeMemory, Clock.layer))
  let i = 0
  const store: RunStore.RunStoreService = {
    ...inner,
    append: (d, runId, frame) => {
      const k = i++
      const stored = Effect.runSync(Effect.either(inner.append(d, runId, frame)))
      return Effect.sleep(delays[k % delays.length]!).pipe(
        Effect.zipRight(
          failAt.has(k)
            ? Effect.fail(new RunStore.RunStoreError({ reason: "unavailable", message: "disk full" }))
            : stored._tag === "Right"
              ? Effect.succeed(stored.right)
              : Effect.fail(stored.left)
        )
      )
    }
  }
  return store
}

describe("RunLog", () => {
  it("writes frames in emission order and done last, however late the store answers", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 12 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 12 }), { maxLength: 3 }),
        async (delays, count, failing) => {
          const store = slowStore(delays, new Set(failing))
          const run = Effect.runSync(store.create({ did, sessionId: "s", requestId: "r" }))
          Effect.runSync(store.start(did, run.runId))
          const written: Array<string> = []
          const log = makeRunLog(store, did, run.runId, (sse) => written.push(sse))
          for (let n = 0; n < count; n++) log.record({ _tag: "message", content: `c${n}`, timestamp: "t" })
          await log.end({ status: "finished" })
          // Frames answered together leave in one write: read the stream back frame by frame.
          const frames = written.join("").split(/(?<=\n\n)/)
          expect(frames).toHaveLength(count + 1)
          frames.slice(0, count).forEach((sse, n) => {
            expect(sse).toContain(`"content":"c${n}"`)
            // A frame the store failed goes out without an id; the others carry theirs, in order.
            if (failing.includes(n)) expect(sse.startsWith("id:")).toBe(false)
            else expect(sse.startsWith(`id: ${n + 1}\n`)).toBe(true)
          })
          expect(frames.at(-1)).toMatch(/^id: \d+\nevent: done\n/)
        }
      ),
      { numRuns: 40 }
    )
  })

  it("writes the frames a store answers at once as one write", async () => {
    const store = Effect.runSync(Effect.provide(RunStore.makeMemory, Clock.layer))
    const run = Effect.runSync(store.create({ did, sessionId: "s", requestId: "r" }))
    Effect.runSync(store.start(did, run.runId))
    const written: Array<string> = []
    const log = makeRunLog(store, did, run.runId, (sse) => written.push(sse))
    for (let n = 0; n < 5; n++) log.record({ _tag: "message", content: `c${n}`, timestamp: "t" })
    await log.end({ status: "finished" })
    expect(written).toHaveLength(2)
    expect(written[0]!.match(/event: message/g)).toHaveLength(5)
    expect(written[1]).toMatch(/^id: 6\nevent: done\n/)
  })
})
