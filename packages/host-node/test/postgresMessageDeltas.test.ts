/**
 * The agent's messages stored as deltas on the Postgres checkpointer (docs/benchmarks.md,
 * conversation): its user-scoped saver reads delta history in one round trip, so the agent
 * stores only what each turn wrote; a thread written with full copies (before deltas) loads and
 * goes on as deltas; paged history reads the same pages from both.
 */
import { randomBytes } from "node:crypto"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Catalog, HistoryPage } from "@plugboard/core"
import {
  agentStateFor,
  createMainAgent,
  messagesAt,
  messageView,
  pageAt,
  runTurn,
  threadMessages
} from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeCheckpointer, makeDatabase, type UserScopedSaver } from "@plugboard/postgres"
import { Effect, Either, Exit, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { FullCopies } from "../../adapters/langgraph/test/FullCopies.js"
import { forecastPlugin } from "../../adapters/langgraph/test/forecast.js"

const POSTGRES_URL = process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined

const weather = forecastPlugin
const catalog = Catalog.unsafeMake([weather])

const turn = async (saver: BaseCheckpointSaver, n: number) =>
  runTurn(
    await createMainAgent({
      catalog,
      model: ScriptedChatModel.script([{ tool: "get_forecast", args: { city: `city ${n}` } }, `answer ${n}`]),
      checkpointer: saver,
      request: { did: "did:key:alice", sessionId: "s", requestId: `r${n}` }
    }),
    { message: `question ${n}` }
  )

const schema = `deltas_${process.pid}_${randomBytes(4).toString("hex")}`
const scope = Effect.runSync(Scope.make())
afterAll(async () => {
  if (POSTGRES_URL === undefined) return
  await Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(makeDatabase({ url: POSTGRES_URL, schema }), (db) =>
        Effect.promise(() => db.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
      )
    )
  )
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe.skipIf(POSTGRES_URL === undefined)("messages stored as deltas on Postgres", () => {
  it("a thread written with full copies loads and goes on as deltas; every turn's messages are kept, in order; pages equal", async () => {
    const saver: UserScopedSaver = await Effect.runPromise(
      Effect.flatMap(
        Effect.orDie(Scope.extend(makeDatabase({ url: POSTGRES_URL!, schema, maxConnections: 4 }), scope)),
        (db) => makeCheckpointer(db).forUser("did:key:alice")
      )
    )
    expect(agentStateFor(saver)).not.toBe(agentStateFor(new FullCopies(saver)))
    const storedForm = async () => {
      const value = (await saver.getTuple({ configurable: { thread_id: "s" } }))?.checkpoint.channel_values
        .messages
      return Array.isArray(value) ? "list" : value === undefined ? "none" : "other"
    }
    for (let n = 0; n < 3; n++) await turn(new FullCopies(saver), n)
    expect(await storedForm()).toBe("list")
    for (let n = 3; n < 6; n++) await turn(saver, n)
    expect(await storedForm()).toBe("none")
    const messages = await threadMessages(saver, "s")
    expect(messages.map((m) => `${m.getType()}:${m.getType() === "tool" ? "" : m.content}`)).toEqual(
      Array.from({ length: 6 }, (_, i) => [`human:question ${i}`, "ai:", "tool:", `ai:answer ${i}`]).flat()
    )
    // A turn's checkpoint stores none of the earlier messages: the last turn wrote 4 messages.
    const tuple = await saver.getTuple({ configurable: { thread_id: "s" } })
    const history = await saver.getDeltaChannelHistory({ config: tuple!.config, channels: ["messages"] })
    expect(Array.isArray(history.messages?.seed)).toBe(true)
    expect((history.messages!.seed as ReadonlyArray<unknown>).length).toBe(12)
    expect(history.messages?.writes.length).toBeGreaterThanOrEqual(12)
    for (const limit of [1, 2, 5]) {
      const page = await pageAt(saver, tuple, { limit })
      expect(Either.getOrThrow(page)).toEqual(
        Either.getOrThrow(HistoryPage.page(await messagesAt(saver, tuple), messageView, { limit }))
      )
    }
  })
})
