/**
 * Concurrent turns of one user never surface SQLITE_BUSY and lose no write: several threads
 * at once through the registry, two savers on separate connections writing one thread, and
 * two processes writing one thread of one file (real lock contention, with a 1 ms SQLite
 * busy timeout so the asynchronous retry path does the waiting).
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { RunnableConfig } from "@langchain/core/runnables"
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { afterAll, describe, expect, it } from "vitest"
import { makeSqliteSaver, UserDatabaseRegistry } from "../../src/sqlite/index.js"
import { conversationCheckpoint, tempDir } from "./helpers.js"
import { spawnWriter } from "./spawn.js"

const t = tempDir("plugboard-concurrency-")
afterAll(t.cleanup)

describe("concurrent writers", () => {
  it("several threads of one user at once, through the registry", async () => {
    const registry = new UserDatabaseRegistry({ directory: join(t.dir, "reg"), retention: false })
    const saver = registry.checkpointerForUser("did:key:busy")
    const threads = Array.from({ length: 8 }, (_, i) => `thread-${i}`)
    const written = await Promise.all(
      threads.map((thread) =>
        registry.withTurn("did:key:busy", async () => {
          const ids: Array<string> = []
          let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: "" } }
          for (let step = 1; step <= 25; step++) {
            const cp = conversationCheckpoint(step)
            config = (await saver.put(
              config,
              cp,
              { source: "loop", step, parents: {} },
              {
                messages: step + 1,
                step: step + 1
              }
            )) as never
            await saver.putWrites(config, [["messages", `${thread}:${step}`]], "task")
            ids.push(cp.id)
          }
          return ids
        })
      )
    )
    for (const [i, thread] of threads.entries()) {
      const listed = []
      for await (const tuple of saver.list({ configurable: { thread_id: thread } }))
        listed.push(tuple.checkpoint.id)
      expect(listed).toEqual([...written[i]!].reverse())
    }
    await registry.close()
  })

  it("two savers on two connections interleaving writes to one thread", async () => {
    const filename = join(t.dir, "two-savers.sqlite")
    const a = makeSqliteSaver({ filename })
    const b = makeSqliteSaver({ filename })
    const write = async (saver: typeof a, tag: string) => {
      const ids: Array<string> = []
      for (let step = 1; step <= 40; step++) {
        const cp = conversationCheckpoint(step)
        const config = await saver.put(
          { configurable: { thread_id: "shared" } },
          cp,
          { source: "loop", step, parents: {}, tag } as CheckpointMetadata,
          {}
        )
        await saver.putWrites(config, [["x", tag]], `task-${tag}`)
        ids.push(cp.id)
      }
      return ids
    }
    const [ia, ib] = await Promise.all([write(a, "a"), write(b, "b")])
    for (const [tag, ids] of [
      ["a", ia],
      ["b", ib]
    ] as const) {
      for (const id of ids) {
        const tuple = await a.getTuple({ configurable: { thread_id: "shared", checkpoint_id: id } })
        expect((tuple?.metadata as Record<string, unknown> | undefined)?.tag).toBe(tag)
        expect(tuple?.pendingWrites).toEqual([[`task-${tag}`, "x", tag]])
      }
    }
    a.close()
    b.close()
  })

  it("two processes writing one thread of one file: no BUSY, no lost write", async () => {
    const filename = join(t.dir, "two-processes.sqlite")
    makeSqliteSaver({ filename }).close() // create the schema once, before the race
    const go = `${filename}.go`
    // busy_timeout 0: SQLite returns BUSY at once, so all waiting is the saver's async retry.
    const writers = ["A", "B"].map((tag, i) =>
      spawnWriter([filename, "shared-thread", "100", tag, "0", String((i + 1) * 1_000_000), go])
    )
    while (!writers.every((w) => w.isReady())) await new Promise((resolve) => setTimeout(resolve, 10))
    writeFileSync(go, "")
    const exits = await Promise.all(writers.map((w) => w.exited))
    for (const [i, w] of writers.entries()) {
      expect(w.errors).toEqual([])
      expect(exits[i]).toEqual({ code: 0, signal: null })
      expect(w.acks).toHaveLength(100)
    }
    const saver = makeSqliteSaver({ filename })
    try {
      expect(saver.database.integrityCheck()).toEqual(["ok"])
      for (const w of writers) {
        for (const { id, value } of w.acks) {
          const tuple = await saver.getTuple({
            configurable: { thread_id: "shared-thread", checkpoint_id: id }
          })
          expect(tuple?.checkpoint.channel_values.writer).toBe(value)
        }
      }
      let count = 0
      for await (const _ of saver.list({ configurable: { thread_id: "shared-thread" } })) count++
      expect(count).toBe(200)
      // The race was real: SQLite reported the lock held, and the retry path absorbed it.
      expect(writers.reduce((n, w) => n + (w.stats[0] ?? 0), 0)).toBeGreaterThan(0)
    } finally {
      saver.close()
    }
  }, 120_000)
})
