/**
 * `createMainAgent({ ranking })` (docs/benchmarks.md#routing-quality): each `list_capabilities` call with a
 * query is answered in the ranking's order (an embedder's, in the host); a ranking that fails is
 * logged and that listing ranks lexically; a call without a query never asks the ranking.
 */
import { MemorySaver } from "@langchain/langgraph"
import { CapabilityIndex, Catalog, Embedder, type Ranking } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { createMainAgent, type QueryRanking, runTurn } from "../src/index.js"
import { makeCounters, recordingLogger, testPlugins } from "./fixtures.js"

/** A fused ranking whose answers a test writes. */
const fusedRanking = (
  rank: (query: string) => Effect.Effect<ReadonlyArray<Ranking.Ranked>, Embedder.EmbedderError>
): QueryRanking => ({
  kind: "fused",
  embedder: "scripted",
  label: "fused with scripted",
  rank
})

const turnWith = async (ranking: QueryRanking, args: Record<string, unknown>) => {
  const catalog = Catalog.unsafeMake(testPlugins(makeCounters()))
  const model = ScriptedChatModel.script([[{ tool: "list_capabilities", args }], "done"])
  const { lines, logger } = recordingLogger()
  const agent = await createMainAgent({
    catalog,
    model,
    checkpointer: new MemorySaver(),
    logger,
    request: { did: "did:key:alice", sessionId: "s-ranking", requestId: "r" },
    ranking
  })
  const turn = await runTurn(agent, { message: "what can you do?" })
  const listed = JSON.parse(String(turn.state.messages[2]!.content)) as { plugins: Array<{ name: string }> }
  return { catalog, names: listed.plugins.map((p) => p.name), lines }
}

describe("list_capabilities with a query ranking", () => {
  it("lists in the ranking's order", async () => {
    const asked: Array<string> = []
    const ranking = fusedRanking((query) => {
      asked.push(query)
      return Effect.succeed([
        { name: "helpers", score: 0.9, relevance: 0 },
        { name: "weather", score: 0.5, relevance: 0.4 }
      ])
    })
    const t = await turnWith(ranking, { query: "translate my forecast" })
    expect(asked).toEqual(["translate my forecast"])
    expect(t.names).toEqual(["helpers", "weather"])
  })

  it("a ranking that fails is logged and the listing ranks lexically", async () => {
    const t = await turnWith(
      fusedRanking(() =>
        Effect.fail(new Embedder.EmbedderError({ reason: "inference-failed", message: "model crashed" }))
      ),
      { query: "weather forecast" }
    )
    const lexical = CapabilityIndex.rank(CapabilityIndex.forCatalog(t.catalog), "weather forecast").map(
      (r) => r.name
    )
    expect(lexical).toContain("weather")
    expect(t.names).toEqual(lexical)
    expect(t.lines).toContainEqual(
      expect.objectContaining({ level: "warn", fields: expect.objectContaining({ error: "model crashed" }) })
    )
  })

  it("a call without a query does not ask the ranking", async () => {
    let asked = 0
    const t = await turnWith(
      fusedRanking(() => {
        asked++
        return Effect.succeed([])
      }),
      {}
    )
    expect(asked).toBe(0)
    expect(t.names.length).toBeGreaterThan(0)
  })
})
