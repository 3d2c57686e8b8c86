/**
 * Retention keeps the newest N checkpoints per thread and never loses what they need: the
 * conversation (the newest checkpoint's `messages`, whose blob an older checkpoint may have
 * written), their pending writes, and — for LangGraph's DeltaChannel — the ancestors a
 * replay walks. Real graphs are run through the registry's saver to prove it end to end.
 */
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages"
import {
  DeltaValue,
  MessagesAnnotation,
  MessagesDeltaValue,
  StateGraph,
  StateSchema
} from "@langchain/langgraph"
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint"
import { afterEach, describe, expect, it } from "vitest"
import { makeSqliteSaver, UserDatabaseRegistry } from "../src/index.js"
import { tempDir } from "./helpers.js"

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups) c()
  cleanups = []
})

const count = (saver: ReturnType<typeof makeSqliteSaver>, table: string) =>
  (saver.database.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n

const echo = (state: { messages: Array<BaseMessage> }) => {
  const last = state.messages[state.messages.length - 1]
  return { messages: [new AIMessage({ content: `echo: ${String(last?.content)}`, id: `ai-${last?.id}` })] }
}

// Method syntax: parameters are checked bivariantly, so graphs of any state schema fit.
const runTurns = async (
  graph: { invoke(input: unknown, config: unknown): Promise<unknown> },
  thread: string,
  turns: number
) => {
  for (let i = 0; i < turns; i++) {
    await graph.invoke(
      { messages: [new HumanMessage({ content: `message ${i}`, id: `h-${i}` })] },
      {
        configurable: { thread_id: thread }
      }
    )
  }
}

const expectConversation = (messages: Array<BaseMessage>, turns: number) => {
  expect(messages.map((m) => m.content)).toEqual(
    Array.from({ length: turns }, (_, i) => [`message ${i}`, `echo: message ${i}`]).flat()
  )
}

describe("retention", () => {
  it("a messages graph: old checkpoints go, the whole conversation stays", async () => {
    const t = tempDir()
    const registry = new UserDatabaseRegistry({
      directory: t.dir,
      retention: { keepCheckpoints: 3, pruneEvery: 1 }
    })
    cleanups.push(() => {
      void registry.close()
      t.cleanup()
    })
    const saver = registry.checkpointerForUser("did:key:r")
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", echo)
      .addEdge("__start__", "agent")
      .compile({ checkpointer: saver })
    await runTurns(graph, "s1", 25)
    await runTurns(graph, "s2", 2)

    const state = await graph.getState({ configurable: { thread_id: "s1" } })
    expectConversation(state.values.messages, 25)
    const history = []
    for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: "s1" } }))
      history.push(snapshot)
    expect(history).toHaveLength(3)
    // Every kept checkpoint still resolves its whole state.
    for (const snapshot of history) expect(snapshot.values.messages.length).toBeGreaterThanOrEqual(48)
    // Another thread is pruned independently and was never touched by s1's pruning.
    expectConversation((await graph.getState({ configurable: { thread_id: "s2" } })).values.messages, 2)
    // The conversation continues normally after pruning.
    await graph.invoke(
      { messages: [new HumanMessage({ content: "message 25", id: "h-25" })] },
      {
        configurable: { thread_id: "s1" }
      }
    )
    expectConversation((await graph.getState({ configurable: { thread_id: "s1" } })).values.messages, 26)
  })

  it("a DeltaChannel graph: ancestors a replay needs are kept, the conversation is whole", async () => {
    const t = tempDir()
    const registry = new UserDatabaseRegistry({
      directory: t.dir,
      retention: { keepCheckpoints: 2, pruneEvery: 1 }
    })
    cleanups.push(() => {
      void registry.close()
      t.cleanup()
    })
    const saver = registry.checkpointerForUser("did:key:delta")
    // A DeltaChannel stores only writes between snapshots (every 5 updates here): a
    // checkpoint after a snapshot is rebuilt by replaying its ancestors back to that snapshot.
    const messages = new DeltaValue(MessagesDeltaValue.valueSchema, {
      inputSchema: MessagesDeltaValue.inputSchema,
      reducer: MessagesDeltaValue.reducer,
      snapshotFrequency: 5
    })
    const graph = new StateGraph(new StateSchema({ messages }))
      .addNode("agent", (s) => echo(s as never))
      .addEdge("__start__", "agent")
      .compile({ checkpointer: saver })
    await runTurns(graph, "d1", 12)
    const checkpoints = async () => {
      let n = 0
      for await (const _ of saver.list({ configurable: { thread_id: "d1" } })) n++
      return n
    }
    // 12 turns × 3 checkpoints; pruning to 2 kept only what replay needs, which is more than 2
    // and less than everything.
    const kept = await checkpoints()
    expect(kept).toBeGreaterThan(2)
    expect(kept).toBeLessThan(36)
    const state = await graph.getState({ configurable: { thread_id: "d1" } })
    expectConversation(state.values.messages as Array<BaseMessage>, 12)
    await runTurns(graph, "d2", 1)
    await saver.prune()
    const reloaded = await graph.getState({ configurable: { thread_id: "d1" } })
    expectConversation(reloaded.values.messages as Array<BaseMessage>, 12)
  })

  it("deletes unreferenced blobs and the pruned checkpoints' writes, keeps the rest, vacuums", async () => {
    const t = tempDir()
    cleanups.push(t.cleanup)
    const saver = makeSqliteSaver({
      filename: `${t.dir}/r.sqlite`,
      retention: { keepCheckpoints: 2, pruneEvery: 1_000 } // prune by hand below
    })
    cleanups.unshift(() => saver.close())
    const big = "x".repeat(50_000)
    // `carried` is written once, at step 0, and carried by every later checkpoint.
    let config = { configurable: { thread_id: "t", checkpoint_ns: "" } }
    const ids: Array<string> = []
    for (let step = 0; step < 10; step++) {
      const id = uuid6(step)
      ids.push(id)
      config = (await saver.put(
        config,
        {
          v: 4,
          id,
          ts: new Date().toISOString(),
          channel_values: { carried: "from step 0", churn: `${big}${step}` },
          channel_versions: { carried: 1, churn: step + 1 },
          versions_seen: {}
        },
        { source: "loop", step, parents: {} } as CheckpointMetadata,
        step === 0 ? { carried: 1, churn: 1 } : { churn: step + 1 }
      )) as typeof config
      await saver.putWrites(config, [["churn", step]], `task-${step}`)
    }
    const pagesBefore = saver.database.db.pragma("page_count", { simple: true }) as number
    expect(await saver.prune()).toBe(8)
    expect(count(saver, "checkpoints")).toBe(2)
    expect(count(saver, "writes")).toBe(2)
    expect(count(saver, "blobs")).toBe(3) // carried@1, churn@9, churn@10
    const latest = await saver.getTuple({ configurable: { thread_id: "t" } })
    expect(latest?.checkpoint.channel_values).toEqual({ carried: "from step 0", churn: `${big}9` })
    expect(latest?.pendingWrites).toEqual([["task-9", "churn", 9]])
    const previous = await saver.getTuple({ configurable: { thread_id: "t", checkpoint_id: ids[8] } })
    expect(previous?.checkpoint.channel_values).toEqual({ carried: "from step 0", churn: `${big}8` })
    expect(await saver.getTuple({ configurable: { thread_id: "t", checkpoint_id: ids[7] } })).toBeUndefined()
    const pagesAfter = saver.database.db.pragma("page_count", { simple: true }) as number
    expect(pagesAfter).toBeLessThan(pagesBefore - 50) // ~8 × 50 kB returned to the file system
    expect(saver.database.db.pragma("freelist_count", { simple: true })).toBe(0)
    expect(saver.database.integrityCheck()).toEqual(["ok"])
    expect(await saver.prune()).toBe(0)
  })

  it("a kept checkpoint whose versions cannot be decoded: nothing is pruned, nothing lost", async () => {
    const t = tempDir()
    cleanups.push(t.cleanup)
    const saver = makeSqliteSaver({
      filename: `${t.dir}/d.sqlite`,
      retention: { keepCheckpoints: 1, pruneEvery: 1_000 }
    })
    cleanups.unshift(() => saver.close())
    let config = { configurable: { thread_id: "t", checkpoint_ns: "" } }
    const ids = [uuid6(0), uuid6(1), uuid6(2)]
    for (let step = 0; step < 3; step++) {
      config = (await saver.put(
        config,
        {
          v: 4,
          id: ids[step]!,
          ts: new Date().toISOString(),
          channel_values: { churn: `step ${step}` },
          channel_versions: { churn: step + 1 },
          versions_seen: {}
        },
        { source: "loop", step, parents: {} } as CheckpointMetadata,
        { churn: step + 1 }
      )) as typeof config
    }
    saver.database.db
      .prepare("UPDATE checkpoints SET channel_versions = '{damaged' WHERE checkpoint_id = ?")
      .run(ids[2])
    expect(await saver.prune()).toBe(0)
    expect(count(saver, "checkpoints")).toBe(3)
    expect(count(saver, "blobs")).toBe(3)
  })

  it("refuses a nonsensical policy", () => {
    const t = tempDir()
    cleanups.push(t.cleanup)
    expect(() =>
      makeSqliteSaver({ filename: `${t.dir}/x.sqlite`, retention: { keepCheckpoints: 0 } })
    ).toThrow(RangeError)
  })
})
