/**
 * The Postgres saver's per-host cache of decoded delta histories (packages/adapters/postgres,
 * DeltaHistory.ts): a conversation whose turns run on two hosts in a random order (two
 * checkpointers on one database, so two caches), with some turns written as full copies, reads
 * at every turn the same history on each host as a saver with no cache does.
 */
import { randomBytes } from "node:crypto"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Catalog } from "@plugboard/core"
import { createMainAgent, prepareCatalog, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeCheckpointer, makeDatabase, UserScopedSaver } from "@plugboard/postgres"
import { Effect } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { FullCopies } from "../../adapters/langgraph/test/FullCopies.js"
import { longForecastPlugin } from "../../adapters/langgraph/test/forecast.js"

const URL_ = process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined
const DID = "did:key:z6MkDeltaCache"

const history = async (saver: BaseCheckpointSaver, session: string) => {
  const read = await saver.getDeltaChannelHistory({
    config: { configurable: { thread_id: session, checkpoint_ns: "" } },
    channels: ["messages"]
  })
  const h = read.messages!
  return { seed: JSON.stringify(h.seed ?? null), writes: JSON.stringify(h.writes) }
}

describe.skipIf(URL_ === undefined)(
  URL_ === undefined
    ? "Postgres delta cache: PLUGBOARD_TEST_POSTGRES_URL is not set"
    : "Postgres delta cache",
  () => {
    it("two hosts in any order, deltas and full copies, read what an uncached saver reads", async () => {
      const catalog = Catalog.unsafeMake([longForecastPlugin])
      prepareCatalog(catalog)
      const schema = `delta_cache_${randomBytes(4).toString("hex")}`
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const db = yield* Effect.orDie(makeDatabase({ url: URL_!, schema, maxConnections: 4 }))
            const hosts = [yield* makeCheckpointer(db).forUser(DID), yield* makeCheckpointer(db).forUser(DID)]
            const uncached = new UserScopedSaver(db.saver, DID, URL_!, { pool: db.pool, schema: db.schema })
            let run = 0
            yield* Effect.promise(() =>
              fc.assert(
                fc.asyncProperty(
                  fc.array(fc.record({ host: fc.integer({ min: 0, max: 1 }), fullCopy: fc.boolean() }), {
                    minLength: 2,
                    maxLength: 7
                  }),
                  async (turns) => {
                    const session = `s${run++}`
                    for (const [i, turn] of turns.entries()) {
                      const host = hosts[turn.host]!
                      const agent = await createMainAgent({
                        catalog,
                        model: ScriptedChatModel.script([
                          { tool: "get_forecast", args: { city: `Lisbon ${i}` } },
                          `Answer ${i}`
                        ]),
                        checkpointer: turn.fullCopy ? new FullCopies(host) : host,
                        request: { did: DID, sessionId: session, requestId: `${session}-${i}` }
                      })
                      const result = await runTurn(agent, { message: `Question ${i}` })
                      expect(result.state.messages.length).toBe((i + 1) * 4)
                      const reference = await history(uncached, session)
                      for (const h of hosts) expect(await history(h, session)).toEqual(reference)
                    }
                  }
                ),
                { numRuns: 6 }
              )
            )
          })
        )
      )
    }, 120_000)
  }
)
