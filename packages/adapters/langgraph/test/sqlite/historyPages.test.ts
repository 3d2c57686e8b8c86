/**
 * Paged history over messages stored as deltas (docs/benchmarks.md, history pages): on the
 * SQLite saver a page is found over the thread's outline and only its messages are decoded
 * (`pageAt`). These tests hold it to the page cut from the whole list (`messagesAt`), on threads
 * of random shape: writes of one message or of several, replacements by id, full copies
 * (`DeltaSnapshot`s) along the way, a first checkpoint written before deltas, reads between
 * writes (the saver's cached outline) and on a fresh saver.
 */
import { join } from "node:path"
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointTuple,
  DeltaSnapshot,
  emptyCheckpoint,
  uuid6
} from "@langchain/langgraph-checkpoint"
import { Catalog, GraphState, HistoryPage } from "@plugboard/core"
import { createMainAgent, messagesAt, messageView, pageAt, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeSqliteSaver, type OwnedSqliteSaver } from "@plugboard/sqlite"
import { Either } from "effect"
import * as fc from "fast-check"
import { afterEach, describe, expect, it } from "vitest"
import { tempDir } from "../../../sqlite/test/helpers.js"
import { forecastPlugin } from "../forecast.js"

let cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.reverse()) c()
  cleanups = []
})

const newFile = () => {
  const { dir, cleanup } = tempDir()
  cleanups.push(cleanup)
  return join(dir, "user.sqlite")
}

const open = (file: string) => {
  const saver = makeSqliteSaver({ filename: file })
  cleanups.push(() => saver.close())
  return saver
}

/** One message a step writes: a new one (a user's, the model's or a tool's), or a new version of an earlier one. */
type Op =
  | { readonly op: "new"; readonly type: "human" | "ai" | "tool" }
  | { readonly op: "anonymous"; readonly type: "human" | "ai" | "tool" }
  | { readonly op: "replace"; readonly pick: number; readonly type: "human" | "ai" }

/** A step: its tasks' writes (each one message, or a list of them), and whether its checkpoint stores a full copy. */
interface Step {
  readonly tasks: ReadonlyArray<{ readonly ops: ReadonlyArray<Op>; readonly asList: boolean }>
  readonly snapshot: boolean
}

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant("new" as const), type: fc.constantFrom("human", "ai", "tool") })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("replace" as const),
      pick: fc.nat(),
      type: fc.constantFrom("human", "ai")
    })
  }
)
/** A message without an id, as a node may write one (the reducer gives it an id each time it replays it). */
const anonymousArb: fc.Arbitrary<Op> = fc.record({
  op: fc.constant("anonymous" as const),
  type: fc.constantFrom("human", "ai", "tool")
})
const stepArbOf = (op: fc.Arbitrary<Op>): fc.Arbitrary<Step> =>
  fc.record({
    tasks: fc.array(fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 4 }), asList: fc.boolean() }), {
      minLength: 1,
      maxLength: 2
    }),
    snapshot: fc.integer({ min: 0, max: 9 }).map((n) => n < 2)
  })
const stepArb = stepArbOf(opArb)

let serial = 0
const messageOf = (type: "human" | "ai" | "tool", id: string | undefined, text: string): BaseMessage =>
  type === "human"
    ? new HumanMessage({ content: text, id })
    : type === "ai"
      ? new AIMessage({ content: text, id })
      : new ToolMessage({ content: text, id, tool_call_id: `call-${id}` })

/**
 * Writes a thread as LangGraph's DeltaChannel stores it: a step's writes on the checkpoint it ran
 * from, then its checkpoint, holding no messages, or a `DeltaSnapshot` of them all. With
 * `legacy`, the first checkpoint holds the messages as a plain list, as before deltas.
 */
class ThreadWriter {
  private parent: RunnableConfig
  private messages: ReadonlyArray<BaseMessage> = []
  private version = 0
  constructor(
    private readonly saver: BaseCheckpointSaver,
    readonly thread: string
  ) {
    this.parent = { configurable: { thread_id: thread, checkpoint_ns: "" } }
  }

  private async checkpoint(value: unknown, step: number): Promise<void> {
    this.version += 1
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(step),
      channel_values: value === undefined ? {} : { messages: value },
      channel_versions: { messages: this.version }
    }
    this.parent = await this.saver.put(
      this.parent,
      checkpoint,
      { source: "loop", step, parents: {} },
      {
        messages: this.version
      }
    )
  }

  async start(legacy: ReadonlyArray<Op>): Promise<void> {
    this.messages = GraphState.appendMessages(this.messages as never, this.build(legacy) as never) as never
    await this.checkpoint(legacy.length > 0 ? [...this.messages] : undefined, -1)
  }

  private build(ops: ReadonlyArray<Op>): Array<BaseMessage> {
    return ops.map((o) => {
      serial += 1
      if (o.op === "anonymous") return messageOf(o.type, undefined, `text ${serial}`)
      if (o.op === "new") return messageOf(o.type, `m${serial}`, `text ${serial}`)
      if (this.messages.length === 0) return messageOf(o.type, `m${serial}`, `text ${serial}`)
      const target = this.messages[o.pick % this.messages.length]!
      return messageOf(o.type, target.id ?? `m${serial}`, `replaced ${serial}`)
    })
  }

  async step(step: Step, n: number): Promise<void> {
    for (const [t, task] of step.tasks.entries()) {
      const built = this.build(task.ops)
      const value = task.asList ? built : built[0]!
      const written = task.asList ? built : built.slice(0, 1)
      this.messages = GraphState.appendMessages(this.messages as never, written as never) as never
      await this.saver.putWrites(this.parent, [["messages", value]], `task-${n}-${t}`)
    }
    await this.checkpoint(step.snapshot ? new DeltaSnapshot([...this.messages]) : undefined, n)
  }
}

const latest = (saver: BaseCheckpointSaver, thread: string) =>
  saver.getTuple({ configurable: { thread_id: thread } })

/** A message as a page shows it. */
const shown = (m: BaseMessage) => ({ type: m.getType(), id: m.id, content: m.content })

const wholePage = async (
  saver: BaseCheckpointSaver,
  tuple: CheckpointTuple | undefined,
  request: HistoryPage.PageRequest
) => HistoryPage.page(await messagesAt(saver, tuple), messageView, request)

const same = (
  windowed: Either.Either<HistoryPage.Page<BaseMessage>, HistoryPage.HistoryPageError>,
  whole: Either.Either<HistoryPage.Page<BaseMessage>, HistoryPage.HistoryPageError>
) => {
  const view = (p: typeof windowed) =>
    Either.match(p, {
      onLeft: (e) => ({ error: e.reason }),
      onRight: (page) => ({ ...page, messages: page.messages.map(shown) })
    })
  expect(view(windowed)).toEqual(view(whole))
}

/** Every message once, oldest first, by walking back from the newest page. */
const walkBack = async (saver: BaseCheckpointSaver, tuple: CheckpointTuple | undefined, limit: number) => {
  const pages: Array<HistoryPage.Page<BaseMessage>> = [
    Either.getOrThrow(await pageAt(saver, tuple, { limit }))
  ]
  while (pages.at(-1)!.hasOlder) {
    pages.push(Either.getOrThrow(await pageAt(saver, tuple, { limit, before: pages.at(-1)!.prevCursor! })))
  }
  return pages.reverse().flatMap((p) => p.messages)
}

describe("paged history over messages stored as deltas", () => {
  it("a page read item by item equals the page cut from the whole list, for random threads and requests (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { maxLength: 4 }),
        fc.array(stepArb, { minLength: 1, maxLength: 14 }),
        fc.array(
          fc.record({
            limit: fc.integer({ min: 1, max: 5 }),
            at: fc.nat(),
            kind: fc.constantFrom("newest", "before", "after")
          }),
          {
            minLength: 1,
            maxLength: 6
          }
        ),
        fc.nat(13),
        async (legacy, steps, requests, readAt) => {
          const file = newFile()
          const saver = open(file)
          const writer = new ThreadWriter(saver, "t")
          await writer.start(legacy)
          const check = async (s: BaseCheckpointSaver) => {
            const tuple = await latest(s, "t")
            const whole = await messagesAt(s, tuple)
            // The page is read item by item unless the checkpoint holds the list itself.
            if (tuple?.checkpoint.channel_values.messages === undefined) {
              expect(await (s as OwnedSqliteSaver).deltaItems(tuple!.config, "messages")).toBeDefined()
            }
            for (const r of requests) {
              const at = whole.length === 0 ? 0 : r.at % whole.length
              // A cursor at position `at`: the newest page of the thread cut after it ends there.
              const cursor = Either.getOrThrow(
                HistoryPage.page(whole.slice(0, at + 1), messageView, { limit: 1 })
              ).nextCursor
              const request: HistoryPage.PageRequest =
                r.kind === "newest" || cursor === null
                  ? { limit: r.limit }
                  : r.kind === "before"
                    ? { limit: r.limit, before: cursor }
                    : { limit: r.limit, after: cursor }
              same(await pageAt(s, tuple, request), await wholePage(s, tuple, request))
            }
            const limit = requests[0]!.limit
            const back = await walkBack(s, tuple, limit)
            expect(back.map(shown)).toEqual(whole.map(shown))
            // Forward from the oldest page: every message once too.
            if (whole.length === 0) return
            const pages = [Either.getOrThrow(await pageAt(s, tuple, { limit }))]
            while (pages[0]!.hasOlder)
              pages.unshift(
                Either.getOrThrow(await pageAt(s, tuple, { limit, before: pages[0]!.prevCursor! }))
              )
            const forward = [...pages[0]!.messages]
            let page = pages[0]!
            while (page.hasNewer) {
              page = Either.getOrThrow(await pageAt(s, tuple, { limit, after: page.nextCursor! }))
              forward.push(...page.messages)
            }
            expect(forward.map(shown)).toEqual(whole.map(shown))
          }
          for (const [n, step] of steps.entries()) {
            await writer.step(step, n)
            // A read part-way through: the saver's cached outline is then extended, not rebuilt.
            if (n === readAt) await check(saver)
          }
          await check(saver)
          await check(open(file))
        }
      ),
      { numRuns: 60 }
    )
  })

  it("an agent's thread on the SQLite saver: each page read item by item, equal to the whole list's, its messages stored with their ids", async () => {
    const weather = forecastPlugin
    const catalog = Catalog.unsafeMake([weather])
    const file = newFile()
    const saver = open(file)
    for (let n = 0; n < 12; n++) {
      await runTurn(
        await createMainAgent({
          catalog,
          model: ScriptedChatModel.script([
            { tool: "get_forecast", args: { city: `city ${n}` } },
            `answer ${n}`
          ]),
          checkpointer: saver,
          request: { did: "did:key:alice", sessionId: "s", requestId: `r${n}` }
        }),
        { message: `question ${n}` }
      )
    }
    // Every stored message has its id: a page shows the same ids on every read.
    const ids = saver.database.db
      .prepare(
        `SELECT count(*) AS n, count(e.value ->> '$.kwargs.id') AS named FROM writes AS w, json_each(CASE json_type(CAST(w.value AS TEXT))
           WHEN 'array' THEN CAST(w.value AS TEXT) ELSE json_array(json(CAST(w.value AS TEXT))) END) AS e WHERE w.channel = 'messages'`
      )
      .get() as { n: number; named: number }
    expect(ids.n).toBeGreaterThan(0)
    expect(ids.named).toBe(ids.n)
    const tuple = await latest(saver, "s")
    expect(tuple?.checkpoint.channel_values.messages).toBeUndefined()
    expect(await saver.deltaItems(tuple!.config, "messages")).toBeDefined()
    const whole = await messagesAt(saver, tuple)
    expect(whole).toHaveLength(48)
    for (const limit of [1, 3, 20]) {
      const newest = await pageAt(saver, tuple, { limit })
      same(newest, await wholePage(saver, tuple, { limit }))
      const older = { limit, before: Either.getOrThrow(newest).prevCursor ?? undefined }
      same(await pageAt(saver, tuple, older), await wholePage(saver, tuple, older))
      expect((await walkBack(open(file), tuple, limit)).map(shown)).toEqual(whole.map(shown))
    }
    expect(
      Either.getOrThrow(await pageAt(saver, tuple, { limit: 2 })).messages.map((m) => m.content)
    ).toEqual([
      "question 10",
      "",
      JSON.stringify({ city: "city 10", summary: "light rain" }),
      "answer 10",
      "question 11",
      "",
      JSON.stringify({ city: "city 11", summary: "light rain" }),
      "answer 11"
    ])
  })

  it("threads with messages without an id: paging back and forth still shows every message once, in order (property)", async () => {
    // Their cursors differ from the whole list's, where the reducer gives such a message a new id
    // on every read; a page's content does not.
    const content = (m: BaseMessage) => ({ type: m.getType(), content: m.content })
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArbOf(fc.oneof(opArb, anonymousArb)), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 4 }),
        async (steps, limit) => {
          const file = newFile()
          const saver = open(file)
          const writer = new ThreadWriter(saver, "t")
          await writer.start([])
          for (const [n, step] of steps.entries()) await writer.step(step, n)
          const tuple = await latest(saver, "t")
          expect(await saver.deltaItems(tuple!.config, "messages")).toBeDefined()
          const whole = (await messagesAt(saver, tuple)).map(content)
          expect((await walkBack(saver, tuple, limit)).map(content)).toEqual(whole)
          const first = await walkBack(open(file), tuple, limit)
          expect(first.map(content)).toEqual(whole)
        }
      ),
      { numRuns: 40 }
    )
  })

  it("a stored message SQLite cannot read as JSON: the page falls back to the whole list, which reports it as before", async () => {
    const file = newFile()
    const saver = open(file)
    const writer = new ThreadWriter(saver, "t")
    await writer.start([])
    for (let n = 0; n < 4; n++) {
      await writer.step(
        {
          tasks: [
            {
              ops: [
                { op: "new", type: "human" },
                { op: "new", type: "ai" }
              ],
              asList: true
            }
          ],
          snapshot: false
        },
        n
      )
    }
    saver.database.db
      .prepare(
        "UPDATE writes SET value = CAST('{not json' AS BLOB) WHERE (checkpoint_id, task_id, idx) = (SELECT checkpoint_id, task_id, idx FROM writes WHERE channel = 'messages' ORDER BY checkpoint_id LIMIT 1)"
      )
      .run()
    const tuple = await latest(saver, "t")
    expect(await saver.deltaItems(tuple!.config, "messages")).toBeUndefined()
    await expect(messagesAt(saver, tuple)).rejects.toThrow()
    await expect(pageAt(saver, tuple, { limit: 1 })).rejects.toThrow()
  })
})
