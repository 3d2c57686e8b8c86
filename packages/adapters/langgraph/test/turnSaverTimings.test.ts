/**
 * `TurnSaver.timings`: the wall time during which the turn's writes (or reads) were in flight,
 * however many overlapped; summing each call's own time would count a group commit once per write.
 */
import { MemorySaver } from "@langchain/langgraph"
import type { PendingWrite } from "@langchain/langgraph-checkpoint"
import { silentLogger } from "@plugboard/core"
import { afterEach, describe, expect, it, vi } from "vitest"
import { TurnSaver } from "../src/TurnSaver.js"

afterEach(() => vi.restoreAllMocks())

/** A saver whose writes land only when the test says so. */
class HeldSaver extends MemorySaver {
  readonly held: Array<() => void> = []
  override async putWrites(config: never, writes: Array<PendingWrite>, taskId: string): Promise<void> {
    await new Promise<void>((resolve) => this.held.push(resolve))
    return super.putWrites(config, writes, taskId)
  }
}

describe("TurnSaver timings", () => {
  it("counts overlapping writes once, and separate ones each", async () => {
    let now = 0
    vi.spyOn(performance, "now").mockImplementation(() => now)
    const inner = new HeldSaver()
    const saver = new TurnSaver(inner, silentLogger)
    const config = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c" } }
    // Three writes in flight together from t=0 to t=10: 10 ms, not 30.
    const together = [0, 1, 2].map((i) => saver.putWrites(config as never, [["messages", i]], `task-${i}`))
    await Promise.resolve()
    now = 10
    for (const release of inner.held.splice(0)) release()
    await Promise.all(together)
    expect(saver.timings.save).toBe(10)
    // Then one more, alone, from t=20 to t=25.
    now = 20
    const alone = saver.putWrites(config as never, [["messages", 3]], "task-3")
    await Promise.resolve()
    now = 25
    for (const release of inner.held.splice(0)) release()
    await alone
    expect(saver.timings.save).toBe(15)
  })
})
