/**
 * The agent's messages stored as deltas on the SQLite saver (docs/benchmarks.md, conversation):
 * a checkpoint holds only what its turn wrote, a database written with full copies (before
 * deltas) loads and goes on as deltas, the saver's cached history reads the same as a fresh
 * read, and retention never loses a message. A new thread's first turn is one full copy.
 */
import { join } from "node:path"
import type { BaseMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  type BaseCheckpointSaver,
  DeltaSnapshot,
  emptyCheckpoint,
  uuid6
} from "@langchain/langgraph-checkpoint"
import { Catalog, silentLogger } from "@plugboard/core"
import { createMainAgent, DelegatingCheckpointSaver, runTurn, threadMessages } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeSqliteSaver, type OwnedSqliteSaver } from "@plugboard/sqlite"
import { afterEach, describe, expect, it } from "vitest"
import { tempDir } from "../../../sqlite/test/helpers.js"
import { FullCopies } from "../FullCopies.js"
import { forecastPlugin } from "../forecast.js"

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.reverse()) c()
  cleanups = []
})

const open = (file: string, options: Partial<Parameters<typeof makeSqliteSaver>[0]> = {}) => {
  const saver = makeSqliteSaver({ filename: file, ...options })
  cleanups.push(() => saver.close())
  return saver
}

const file = () => {
  const { dir, cleanup } = tempDir()
  cleanups.push(cleanup)
  return join(dir, "user.sqlite")
}

const weather = forecastPlugin
const catalog = Catalog.unsafeMake([weather])

const turn = async (saver: BaseCheckpointSaver, session: string, n: number) =>
  runTurn(
    await createMainAgent({
      catalog,
      model: ScriptedChatModel.script([{ tool: "get_forecast", args: { city: `city ${n}` } }, `answer ${n}`]),
      checkpointer: saver,
      request: { did: "did:key:alice", sessionId: session, requestId: `r${n}` }
    }),
    { message: `question ${n}` }
  )

const contents = (messages: ReadonlyArray<BaseMessage>) =>
  messages.map((m) =>
    m.getType() === "tool" ? `tool:${String(m.content).slice(0, 20)}` : `${m.getType()}:${m.content}`
  )

const expected = (turns: number) =>
  Array.from({ length: turns }, (_, i) => [
    `human:question ${i}`,
    "ai:",
    `tool:${JSON.stringify({ city: `city ${i}`, summary: "light rain" }).slice(0, 20)}`,
    `ai:answer ${i}`
  ]).flat()

/** The stored form of the latest checkpoint's messages: a list, a snapshot, or nothing (deltas). */
const storedForm = async (saver: OwnedSqliteSaver, session: string) => {
  const value = (await saver.getTuple({ configurable: { thread_id: session } }))?.checkpoint.channel_values
    .messages
  return value instanceof DeltaSnapshot ? "snapshot" : Array.isArray(value) ? "list" : "none"
}

describe("messages stored as deltas", () => {
  it("a checkpoint stores only its turn's messages: the bytes a turn adds do not grow with the thread", async () => {
    const saver = open(file())
    const added: Array<number> = []
    const stored = () =>
      (
        saver.database.db
          .prepare(
            "SELECT (SELECT coalesce(sum(length(value)), 0) FROM writes) + (SELECT coalesce(sum(length(value)), 0) FROM blobs) + (SELECT sum(length(checkpoint) + length(metadata)) FROM checkpoints) AS n"
          )
          .get() as { n: number }
      ).n
    for (let n = 0; n < 12; n++) {
      const before = n === 0 ? 0 : stored()
      const result = await turn(saver, "s", n)
      expect(contents(result.state.messages)).toEqual(expected(n + 1))
      added.push(stored() - before)
    }
    expect(await storedForm(saver, "s")).toBe("none")
    // Turn 2 onwards (turn 1 also makes the thread's first checkpoint): the same bytes each turn,
    // give or take the digits of the counters in the text.
    const later = added.slice(1)
    expect(Math.max(...later) / Math.min(...later)).toBeLessThan(1.05)
  })

  it("a new thread's first turn is one full copy in one commit; its later turns go on as deltas", async () => {
    const path = file()
    const saver = open(path)
    const rows = (table: string) =>
      (
        saver.database.db.prepare(`SELECT count(*) AS n FROM ${table} WHERE thread_id = ?`).get("s") as {
          n: number
        }
      ).n
    const commits = saver.database.commits
    await turn(saver, "s", 0)
    // No empty stub checkpoint for the messages to hang from, and no message written apart.
    expect(await storedForm(saver, "s")).toBe("snapshot")
    expect(rows("checkpoints")).toBe(1)
    expect(rows("writes")).toBe(0)
    expect(saver.database.commits - commits).toBe(1)
    for (let n = 1; n < 3; n++) {
      const result = await turn(saver, "s", n)
      expect(contents(result.state.messages)).toEqual(expected(n + 1))
      expect(await storedForm(saver, "s")).toBe("none")
    }
    expect(rows("writes")).toBeGreaterThan(0)
    expect(contents(await threadMessages(saver, "s"))).toEqual(expected(3))
    // And read back from a new process's saver, which has no cached history.
    saver.close()
    expect(contents(await threadMessages(open(path), "s"))).toEqual(expected(3))
  })

  it("a database written with full copies (before deltas) loads, and goes on as deltas", async () => {
    const path = file()
    const before = open(path)
    for (let n = 0; n < 3; n++) await turn(new FullCopies(before), "old", n)
    expect(await storedForm(before, "old")).toBe("list")
    before.close()

    const after = open(path)
    expect(contents(await threadMessages(after, "old"))).toEqual(expected(3))
    for (let n = 3; n < 5; n++) {
      const result = await turn(after, "old", n)
      expect(contents(result.state.messages)).toEqual(expected(n + 1))
    }
    expect(await storedForm(after, "old")).toBe("none")
    expect(contents(await threadMessages(after, "old"))).toEqual(expected(5))
    // And read back from a new process's saver, which has no cached history.
    after.close()
    expect(contents(await threadMessages(open(path), "old"))).toEqual(expected(5))
  })

  it("the saver's cached history reads what a fresh read of the file reads, turn after turn", async () => {
    const path = file()
    const saver = open(path)
    for (let n = 0; n < 6; n++) {
      await turn(saver, "s", n)
      const cached = await threadMessages(saver, "s")
      const fresh = open(path)
      expect(contents(await threadMessages(fresh, "s"))).toEqual(contents(cached))
      expect(cached.map((m) => m.id)).toEqual((await threadMessages(fresh, "s")).map((m) => m.id))
    }
  })

  it("a write to an older checkpoint is seen by the next read (the cached history is dropped)", async () => {
    const saver = open(file())
    const thread = { configurable: { thread_id: "t", checkpoint_ns: "" } }
    const put = (config: RunnableConfig, values: Record<string, unknown>) => {
      const versions = Object.fromEntries(Object.keys(values).map((k) => [k, 1]))
      return saver.put(
        config,
        { ...emptyCheckpoint(), id: uuid6(0), channel_values: values, channel_versions: versions },
        { source: "loop", step: 0, parents: {} },
        versions
      )
    }
    const c0 = await put(thread, { messages: new DeltaSnapshot(["a"]) })
    await saver.putWrites(c0, [["messages", ["b"]]], "task-1")
    const c1 = await put(c0, {})
    await saver.putWrites(c1, [["messages", ["c"]]], "task-2")
    const c2 = await put(c1, {})
    const values = async (config: RunnableConfig) =>
      (await saver.getDeltaChannelHistory({ config, channels: ["messages"] })).messages!.writes.map(
        (w) => w[2]
      )
    expect(await values(c2)).toEqual([["b"], ["c"]])
    expect(await values(c2)).toEqual([["b"], ["c"]]) // from the cache
    await saver.putWrites(c0, [["messages", ["b2"]]], "task-3")
    expect(await values(c2)).toEqual([["b"], ["b2"], ["c"]])
  })

  it("a delta history that cannot be read is a failed load: logged, and the turn does not save over the thread", async () => {
    const saver = open(file())
    for (let n = 0; n < 2; n++) await turn(saver, "s", n)
    const before = contents(await threadMessages(saver, "s"))
    class HistoryFails extends DelegatingCheckpointSaver {
      override getDeltaChannelHistory(): never {
        throw new Error("disk on fire")
      }
    }
    const errors: Array<string> = []
    const logger = { ...silentLogger, error: (message: string) => errors.push(message) }
    const agent = await createMainAgent({
      catalog,
      model: ScriptedChatModel.script(["never saved"]),
      checkpointer: new HistoryFails(saver),
      logger,
      request: { did: "did:key:alice", sessionId: "s", requestId: "r-fail" }
    })
    await expect(runTurn(agent, { message: "hello?" })).rejects.toThrow(/holds a history/)
    expect(errors.some((e) => e.includes("load failed"))).toBe(true)
    expect(contents(await threadMessages(saver, "s"))).toEqual(before)
  })

  it("retention prunes a delta thread without losing a message", async () => {
    const path = file()
    const saver = open(path, { retention: { keepCheckpoints: 2, pruneEvery: 1 } })
    for (let n = 0; n < 8; n++) await turn(saver, "s", n)
    await turn(saver, "other", 0)
    expect(await saver.prune()).toBeGreaterThanOrEqual(0)
    expect(contents(await threadMessages(saver, "s"))).toEqual(expected(8))
    saver.close()
    expect(contents(await threadMessages(open(path), "s"))).toEqual(expected(8))
  })
})
