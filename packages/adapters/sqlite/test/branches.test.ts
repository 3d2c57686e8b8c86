/**
 * Two writers continuing from one checkpoint — two concurrent turns on one thread, or a fork
 * from an earlier `checkpoint_id` — each keep their own channel values: every stored
 * checkpoint returns exactly the messages it was written with, as with LangGraph's MemorySaver.
 * (With integer versions both writers minted the same (channel, version) blob key and the
 * second overwrote the first: branch A's head then showed branch B's messages.)
 */
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import { MemorySaver, MessagesAnnotation, StateGraph } from "@langchain/langgraph"
import type { BaseCheckpointSaver, CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { afterAll, describe, expect, it } from "vitest"
import { makeSqliteSaver } from "../src/index.js"
import { nextChannelVersion } from "../src/SqliteSaver.js"
import { conversationCheckpoint, tempDir } from "./helpers.js"

const t = tempDir("plugboard-branches-")
afterAll(t.cleanup)
let files = 0
const sqliteSaver = () => makeSqliteSaver({ filename: `${t.dir}/b${files++}.sqlite` })

const text = (messages: unknown): string =>
  ((messages ?? []) as Array<BaseMessage>).map((m) => String(m.content)).join(" | ")

/** A one-node chat graph whose node yields, so two invokes on one thread really interleave. */
const chat = (saver: BaseCheckpointSaver) =>
  new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => {
      await new Promise((resolve) => setTimeout(resolve, 20))
      const last = state.messages[state.messages.length - 1]!
      return { messages: [new AIMessage(`reply to ${String(last.content)}`)] }
    })
    .addEdge("__start__", "agent")
    .compile({ checkpointer: saver })

/** Records, per checkpoint id, the messages and parent each `put` was given. */
const recording = (saver: BaseCheckpointSaver) => {
  const written = new Map<string, { messages: string; parent: string | undefined }>()
  const put = saver.put.bind(saver)
  saver.put = (config, checkpoint, metadata, newVersions) => {
    written.set(checkpoint.id, {
      messages: text(checkpoint.channel_values.messages),
      parent: config.configurable?.checkpoint_id
    })
    return put(config, checkpoint, metadata, newVersions)
  }
  return written
}

/** Every checkpoint still returns what it was written with: by id, and through `list`. */
const expectEveryCheckpointIntact = async (
  saver: BaseCheckpointSaver,
  written: Map<string, { messages: string }>,
  threads: Array<string>
) => {
  let listed = 0
  for (const thread of threads) {
    for await (const tuple of saver.list({ configurable: { thread_id: thread } })) {
      listed++
      const id = tuple.checkpoint.id
      expect({ id, messages: text(tuple.checkpoint.channel_values.messages) }).toEqual({
        id,
        messages: written.get(id)?.messages
      })
      const byId = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_id: id } })
      expect(text(byId?.checkpoint.channel_values.messages)).toBe(written.get(id)?.messages)
    }
  }
  expect(listed).toBe(written.size)
}

/** The scenario, run against any saver; returns what a test compares across savers. */
const scenario = async (saver: BaseCheckpointSaver) => {
  const written = recording(saver)
  const graph = chat(saver)
  const head = async (thread: string) => (await saver.getTuple({ configurable: { thread_id: thread } }))!

  // A fork: turn 2 on branch A, then turn 2 again from the checkpoint after turn 1 (branch B).
  const fork: RunnableConfig = { configurable: { thread_id: "fork" } }
  await graph.invoke({ messages: [new HumanMessage("A1")] }, fork)
  const afterTurn1 = (await head("fork")).checkpoint.id
  await graph.invoke({ messages: [new HumanMessage("A2")] }, fork)
  const headA = (await head("fork")).checkpoint.id
  const branchB = await graph.invoke(
    { messages: [new HumanMessage("B2")] },
    { configurable: { thread_id: "fork", checkpoint_id: afterTurn1 } }
  )
  const headB = (await head("fork")).checkpoint.id
  const branchHeads = {
    a: text(
      (await saver.getTuple({ configurable: { thread_id: "fork", checkpoint_id: headA } }))?.checkpoint
        .channel_values.messages
    ),
    b: text(
      (await saver.getTuple({ configurable: { thread_id: "fork", checkpoint_id: headB } }))?.checkpoint
        .channel_values.messages
    ),
    returnedB: text(branchB.messages)
  }

  // Two concurrent turns on one thread, both continuing from the same checkpoint.
  const concurrent: RunnableConfig = { configurable: { thread_id: "concurrent" } }
  await graph.invoke({ messages: [new HumanMessage("base")] }, concurrent)
  const base = (await head("concurrent")).checkpoint.id
  const before = new Set(written.keys())
  const [x, y] = await Promise.all([
    graph.invoke({ messages: [new HumanMessage("X")] }, concurrent),
    graph.invoke({ messages: [new HumanMessage("Y")] }, concurrent)
  ])
  // The precondition of the race: both turns' first checkpoint has `base` as its parent.
  const firsts = [...written.entries()].filter(([id, w]) => !before.has(id) && w.parent === base)
  const concurrentStored: Array<string> = []
  for await (const tuple of saver.list(concurrent))
    concurrentStored.push(text(tuple.checkpoint.channel_values.messages))

  await expectEveryCheckpointIntact(saver, written, ["fork", "concurrent"])
  return {
    branchHeads,
    turns: [text(x.messages), text(y.messages)],
    racedFromBase: firsts.length,
    concurrentStored: concurrentStored.sort()
  }
}

describe("branches of one thread keep their own channel values", () => {
  it("a fork and two concurrent turns, on a StateGraph over MessagesAnnotation: as MemorySaver", async () => {
    const memory = await scenario(new MemorySaver())
    const saver = sqliteSaver()
    try {
      const sqlite = await scenario(saver)
      expect(memory.branchHeads).toEqual({
        a: "A1 | reply to A1 | A2 | reply to A2",
        b: "A1 | reply to A1 | B2 | reply to B2",
        returnedB: "A1 | reply to A1 | B2 | reply to B2"
      })
      expect(memory.racedFromBase).toBe(2)
      expect(memory.turns).toEqual([
        "base | reply to base | X | reply to X",
        "base | reply to base | Y | reply to Y"
      ])
      expect(sqlite).toEqual(memory)
    } finally {
      saver.close()
    }
  })

  it("a thread written with integer versions (before this fix) continues and forks correctly", async () => {
    const saver = sqliteSaver()
    try {
      const written = recording(saver)
      const graph = chat(saver)
      const config = { configurable: { thread_id: "legacy" } }
      // The base class's versions: 1, 2, 3, ... as files written before the fix hold them.
      const integer = (current: number | undefined) => (current ?? 0) + 1
      const own = saver.getNextVersion.bind(saver)
      saver.getNextVersion = integer
      await graph.invoke({ messages: [new HumanMessage("old 1")] }, config)
      const old1 = (await saver.getTuple(config))!.checkpoint.id
      await graph.invoke({ messages: [new HumanMessage("old 2")] }, config)
      const old2 = (await saver.getTuple(config))!
      expect(Object.values(old2.checkpoint.channel_versions).every(Number.isInteger)).toBe(true)
      saver.getNextVersion = own
      // Versions compare numerically with the stored integers: the node still triggers.
      const next = await graph.invoke({ messages: [new HumanMessage("new 3")] }, config)
      expect(text(next.messages)).toBe(
        "old 1 | reply to old 1 | old 2 | reply to old 2 | new 3 | reply to new 3"
      )
      // A fork from an integer-versioned checkpoint does not overwrite the old branch.
      await graph.invoke(
        { messages: [new HumanMessage("fork 2")] },
        { configurable: { thread_id: "legacy", checkpoint_id: old1 } }
      )
      const again = await saver.getTuple({
        configurable: { thread_id: "legacy", checkpoint_id: old2.checkpoint.id }
      })
      expect(text(again?.checkpoint.channel_values.messages)).toBe(
        "old 1 | reply to old 1 | old 2 | reply to old 2"
      )
      await expectEveryCheckpointIntact(saver, written, ["legacy"])
    } finally {
      saver.close()
    }
  })

  it("a put never replaces a value an earlier checkpoint stored under the same version", async () => {
    const saver = sqliteSaver()
    try {
      const put = async (step: number, value: string) => {
        const checkpoint = conversationCheckpoint(step)
        checkpoint.channel_values.note = value
        checkpoint.channel_versions.note = 7
        await saver.put(
          { configurable: { thread_id: "same-version" } },
          checkpoint,
          { source: "loop", step, parents: {} } as CheckpointMetadata,
          { note: 7 }
        )
        return checkpoint.id
      }
      const first = await put(1, "first")
      await put(2, "second")
      const tuple = await saver.getTuple({
        configurable: { thread_id: "same-version", checkpoint_id: first }
      })
      expect(tuple?.checkpoint.channel_values.note).toBe("first")
    } finally {
      saver.close()
    }
  })
})

describe("getNextVersion", () => {
  const saver = sqliteSaver()
  afterAll(() => saver.close())

  it("is a number whose integer part is the step counter, strictly above the current one", () => {
    for (const current of [undefined, 0, 1, 7, 41.123, 99.999999, 2 ** 20 + 0.5, 2 ** 40, 2 ** 52 - 2]) {
      const next = saver.getNextVersion(current)
      expect(typeof next).toBe("number")
      expect(Math.floor(next)).toBe(Math.floor(current ?? 0) + 1)
      expect(next).toBeGreaterThan(current ?? 0)
      expect(Number.isInteger(next)).toBe(false)
      // The blob key is String(version); it must parse back to exactly the same number.
      expect(Number(String(next))).toBe(next)
      expect(JSON.parse(JSON.stringify({ next })).next).toBe(next)
    }
  })

  it("differs between two writers continuing from the same version", () => {
    const minted = new Set(Array.from({ length: 10_000 }, () => saver.getNextVersion(7)))
    expect(minted.size).toBe(10_000)
  })

  it("keeps the fraction inside (0, 1) at the extremes of the random source", () => {
    for (const r of [0, 0.5, 1 - 2 ** -53]) {
      for (const current of [undefined, 3, 2 ** 30 + 0.25]) {
        const next = nextChannelVersion(current, () => r)
        const counter = Math.floor(current ?? 0) + 1
        expect(next).toBeGreaterThan(counter)
        expect(next).toBeLessThan(counter + 1)
        expect(Number(String(next))).toBe(next)
      }
    }
  })

  it("grows along a chain like LangGraph's step counter", () => {
    let v: number | undefined
    for (let i = 1; i <= 1000; i++) {
      const next = saver.getNextVersion(v)
      if (v !== undefined) expect(next).toBeGreaterThan(v)
      expect(Math.floor(next)).toBe(i)
      v = next
    }
  })
})
