/**
 * A child process writing a stream of checkpoints is killed with SIGKILL at a random moment:
 * on reopen, every write the child saw return is there, whole, and the file passes
 * `PRAGMA integrity_check`.
 */
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeSqliteSaver } from "../src/index.js"
import { tempDir } from "./helpers.js"
import { spawnWriter } from "./spawn.js"

const t = tempDir("plugboard-crash-")
afterAll(t.cleanup)

const waitFor = async (predicate: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out")
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe("SIGKILL in the middle of a stream of checkpoint writes", () => {
  it("keeps every acknowledged write and an intact file, across three kills", async () => {
    const filename = join(t.dir, "crash.sqlite")
    const acknowledged: Array<{ id: string; value: string }> = []
    for (let round = 0; round < 3; round++) {
      const writer = spawnWriter([filename, "thread-1", "0", `r${round}`, "200"])
      // Let it get going, then kill it after a random further delay: mid-transaction or not.
      await waitFor(() => writer.acks.length >= 25, 60_000)
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 40)))
      writer.child.kill("SIGKILL")
      const { signal } = await writer.exited
      expect(signal).toBe("SIGKILL")
      // The writer itself is gone (not a wrapper around it): signal 0 finds no such process.
      expect(() => process.kill(writer.child.pid!, 0)).toThrow()
      expect(writer.errors.filter((e) => e.startsWith("error"))).toEqual([])
      acknowledged.push(...writer.acks)
    }

    const saver = makeSqliteSaver({ filename, verify: "quick" })
    try {
      expect(saver.database.integrityCheck()).toEqual(["ok"])
      expect(acknowledged.length).toBeGreaterThanOrEqual(75)
      for (const { id, value } of acknowledged) {
        const tuple = await saver.getTuple({
          configurable: { thread_id: "thread-1", checkpoint_ns: "", checkpoint_id: id }
        })
        expect(tuple?.checkpoint.channel_values.writer).toBe(value)
        expect(tuple?.pendingWrites).toEqual([[`task-${value.split(":")[0]}`, "messages", value]])
        // Each round's writer starts its versions afresh: its messages are still its own.
        const messages = tuple?.checkpoint.channel_values.messages as Array<{ content: unknown }>
        expect(messages.every((m) => String(m.content).startsWith(`${value.split(":")[0]} `))).toBe(true)
      }
    } finally {
      saver.close()
    }
  }, 120_000)
})
