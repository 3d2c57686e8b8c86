/**
 * A run's frames leave in the order the turn emitted them, however late the store answers, and
 * `done` comes last; a store that fails leaves an explicit gap, never a renumbered log (RunLog.ts).
 */
import { Clock, RunStore } from "@plugboard/core"
import { Chunk, Effect, Scope, Stream } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as RunLog from "../src/RunLog.js"

const did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

/**
 * The memory store, answering each `appendAll` after `delays[i]` ms (stored at once, in call
 * order), and failing the calls in `failAt`.
 */
const slowStore = (delays: ReadonlyArray<number>, failAt: ReadonlySet<number>) => {
  const inner = Effect.runSync(Effect.provide(RunStore.makeMemory, Clock.layer))
  let i = 0
  const store: RunStore.RunStoreService = {
    ...inner,
    // The run log appends its frames with appendAll; append is the gap frame's, after a failure.
    append: (d, runId, frame) => inner.append(d, runId, frame),
    appendAll: (d, runId, frames) => {
      const k = i++
      const stored = Effect.runSync(Effect.either(inner.appendAll(d, runId, frames)))
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

/** The run's log in a scope of its own, writing each batch of frames as one SSE string. */
const makeRunLog = (
  runs: RunStore.RunStoreService,
  d: string,
  runId: string,
  write: (sse: string) => void
) => {
  const scope = Effect.runSync(Scope.make())
  const log = Effect.runSync(
    Scope.extend(
      RunLog.make({
        runs,
        did: d,
        runId,
        sink: (frames) => write(frames.map(RunLog.frameSse).join("")),
        background: scope
      }),
      scope
    )
  )
  return {
    record: log.record,
    end: (outcome: RunStore.EndOutcome) => Effect.runPromise(log.end(outcome)).then(RunLog.frameSse)
  }
}

describe("RunLog", () => {
  it("writes frames in emission order and done last, however late the store answers; a failure leaves a gap, never a renumbering", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 8 }),
        // Per event: whether a turn of the event loop passes before it.
        fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 12 }), { maxLength: 3 }),
        async (delays, pauses, failing) => {
          const store = slowStore(delays, new Set(failing))
          const run = Effect.runSync(store.create({ did, sessionId: "s", requestId: "r" }))
          Effect.runSync(store.start(did, run.runId))
          const written: Array<string> = []
          const log = makeRunLog(store, did, run.runId, (sse) => written.push(sse))
          for (const [n, pause] of pauses.entries()) {
            if (pause && n > 0) await new Promise((resolve) => setImmediate(resolve))
            log.record({ _tag: "message", content: `c${n}`, timestamp: "t" })
          }
          written.push(await log.end({ status: "finished" }))
          // Frames answered together leave in one write: read the stream back frame by frame.
          const frames = written.join("").split(/(?<=\n\n)/)
          expect(frames).toHaveLength(pauses.length + 1)
          frames.slice(0, pauses.length).forEach((sse, n) => {
            expect(sse).toContain(`"content":"c${n}"`)
          })
          // A prefix is numbered 1..m, in emission order; from the first failure on, nothing is.
          const numbered = frames.slice(0, pauses.length).filter((sse) => sse.startsWith("id:"))
          const m = numbered.length
          expect(numbered.map((sse) => /^id: (\d+)\n/.exec(sse)?.[1])).toEqual(
            numbered.map((_, n) => `${n + 1}`)
          )
          expect(frames.slice(m, pauses.length).filter((sse) => sse.startsWith("id:"))).toEqual([])
          // What a rejoin sees once the log is ended: every numbered frame, then (after a failure) the gap.
          const stored = await Effect.runPromise(
            Stream.runCollect(store.follow(did, run.runId, 0)).pipe(Effect.map(Chunk.toReadonlyArray))
          )
          expect(stored.slice(0, m).map((f) => f.data.content)).toEqual(
            Array.from({ length: m }, (_, n) => `c${n}`)
          )
          if (m === pauses.length) {
            expect(frames.at(-1)).toMatch(/^id: \d+\nevent: done\n/)
            expect(stored.map((f) => f.event)).toEqual([...Array(m).fill("message"), "done"])
          } else {
            // The live client's done says how the turn ended; the log says it has a hole.
            expect(frames.at(-1)).toMatch(/^event: done\ndata: \{"status":"finished"\}/)
            // This store keeps what it then reports failed (a commit whose answer was lost): those
            // frames may follow, in order, still before the gap; nothing after the failure is stored.
            const kept = stored.slice(m, -2)
            expect(kept.map((f) => f.data.content)).toEqual(kept.map((_, k) => `c${m + k}`))
            expect(kept.length).toBeLessThan(pauses.length - m + 1)
            expect(stored.slice(-2).map((f) => [f.event, f.data])).toEqual([
              ["gap", { missed: pauses.length - m, reason: "storage-unavailable" }],
              ["done", { status: "interrupted", partialText: expect.any(String), reason: "log-gap" }]
            ])
          }
        }
      ),
      { numRuns: 40 }
    )
  })

  it("hands the events of one turn of the event loop to the store in one call, those of the end's turn with the end", async () => {
    const inner = Effect.runSync(Effect.provide(RunStore.makeMemory, Clock.layer))
    const calls: Array<string> = []
    const store: RunStore.RunStoreService = {
      ...inner,
      appendAll: (d, runId, frames) => {
        calls.push(`appendAll ${frames.length}`)
        return inner.appendAll(d, runId, frames)
      },
      end: (d, runId, outcome, frames) => {
        calls.push(`end ${frames?.length ?? 0}`)
        return inner.end(d, runId, outcome, frames)
      }
    }
    const run = Effect.runSync(store.create({ did, sessionId: "s", requestId: "r", status: "running" }))
    const written: Array<string> = []
    const log = makeRunLog(store, did, run.runId, (sse) => written.push(sse))
    for (let n = 0; n < 3; n++) log.record({ _tag: "message", content: `a${n}`, timestamp: "t" })
    await new Promise((resolve) => setImmediate(resolve))
    for (let n = 0; n < 2; n++) log.record({ _tag: "message", content: `b${n}`, timestamp: "t" })
    written.push(await log.end({ status: "finished" }))
    expect(calls).toEqual(["appendAll 3", "end 2"])
    // Numbered as stored, and sent before done.
    expect(written.join("").match(/^id: \d+$/gm)).toEqual([
      "id: 1",
      "id: 2",
      "id: 3",
      "id: 4",
      "id: 5",
      "id: 6"
    ])
    expect(written.at(-1)).toMatch(/^id: 6\nevent: done\n/)
    const frames = Effect.runSync(inner.frames(did, run.runId, 0))
    expect(frames.map((f) => f.data.content ?? f.event)).toEqual(["a0", "a1", "a2", "b0", "b1", "done"])
  })

  it("writes the frames a store answers at once as one write", async () => {
    const store = Effect.runSync(Effect.provide(RunStore.makeMemory, Clock.layer))
    const run = Effect.runSync(store.create({ did, sessionId: "s", requestId: "r" }))
    Effect.runSync(store.start(did, run.runId))
    const written: Array<string> = []
    const log = makeRunLog(store, did, run.runId, (sse) => written.push(sse))
    for (let n = 0; n < 5; n++) log.record({ _tag: "message", content: `c${n}`, timestamp: "t" })
    written.push(await log.end({ status: "finished" }))
    expect(written).toHaveLength(2)
    expect(written[0]!.match(/event: message/g)).toHaveLength(5)
    expect(written[1]).toMatch(/^id: 6\nevent: done\n/)
  })
})
