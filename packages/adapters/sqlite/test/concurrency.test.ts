/**
 * Concurrent turns of one user never surface SQLITE_BUSY and lose no write: several threads
 * at once through the registry, two savers on separate connections writing one thread, and
 * two processes writing one thread of one file (real lock contention, with a 1 ms SQLite
 * busy timeout so the asynchronous retry path does the waiting).
 *
 * The writers of one thread store real channel values under versions each mints with the
 * saver's `getNextVersion` from the same starting point, as two LangGraph runs do: a write
 * is only "not lost" if every checkpoint reads back its own writer's values.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { RunnableConfig } from "@langchain/core/runnables"
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { afterAll, describe, expect, it } from "vitest"
import { makeSqliteSaver, UserDatabaseRegistry } from "../src/index.js"
import { bumpVersions, conversationCheckpoint, tempDir } from "./helpers.js"
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
      const versions: Record<string, number> = {}
      let config: RunnableConfig = { configurable: { thread_id: "shared" } }
      for (let step = 1; step <= 40; step++) {
        const cp = conversationCheckpoint(step, tag)
        cp.channel_values.writer = `${tag}:${step}`
        const newVersions = bumpVersions(
          saver,
          versions,
          step === 1 ? ["messages", "writer", "step", "loadedPlugins"] : ["messages", "writer", "step"]
        )
        cp.channel_versions = { ...versions }
        config = await saver.put(
          config,
          cp,
          { source: "loop", step, parents: {}, tag } as CheckpointMetadata,
          newVersions
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
      for (const [i, id] of ids.entries()) {
        const tuple = await a.getTuple({ configurable: { thread_id: "shared", checkpoint_id: id } })
        expect((tuple?.metadata as Record<string, unknown> | undefined)?.tag).toBe(tag)
        expect(tuple?.pendingWrites).toEqual([[`task-${tag}`, "x", tag]])
        const values = tuple?.checkpoint.channel_values ?? {}
        expect(values.writer).toBe(`${tag}:${i + 1}`)
        expect(values.step).toBe(i + 1)
        expect(values.loadedPlugins).toEqual(["weather"])
        const messages = values.messages as Array<{ content: unknown }>
        expect(messages).toHaveLength(2 * (i + 1))
        expect(messages.every((m) => String(m.content).startsWith(`${tag} `))).toBe(true)
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
    const writers = ["A", "B"].map((tag) => spawnWriter([filename, "shared-thread", "100", tag, "0", go]))
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
          const messages = tuple?.checkpoint.channel_values.messages as Array<{ content: unknown }>
          expect(messages.every((m) => String(m.content).startsWith(`${value.split(":")[0]} `))).toBe(true)
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
