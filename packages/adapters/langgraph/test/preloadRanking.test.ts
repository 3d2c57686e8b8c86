/**
 * Predictive preload ranks with the host's ranking (issue 36, item 21): given a fused ranking
 * (core's `Ranking.fused`, here over a scripted embedder whose vectors the test writes), the turn
 * preloads what the fused ranking ranks first, not what the lexical one does.
 */
import { MemorySaver } from "@langchain/langgraph"
import {
  CapabilityIndex,
  Catalog,
  definePlugin,
  defineTool,
  Embedder,
  Preload,
  Ranking
} from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { createMainAgent, type QueryRanking, runTurn } from "../src/index.js"
import { recordingLogger } from "./fixtures.js"

const input = Schema.Struct({})
const alarm = definePlugin({
  name: "alarm",
  manifest: { title: "Alarm", summary: "Wake-up alarms at a set time.", whenToUse: ["Waking up at a time."] },
  tools: [defineTool({ name: "set_alarm", description: "Sets an alarm.", input, handler: () => "ok" })]
})
const calendar = definePlugin({
  name: "calendar",
  manifest: {
    title: "Calendar",
    summary: "Meetings and events at a set time.",
    whenToUse: ["Scheduling a meeting at a time."]
  },
  tools: [defineTool({ name: "add_event", description: "Adds an event.", input, handler: () => "ok" })]
})
const catalog = Catalog.unsafeMake([alarm, calendar])
const MESSAGE = "ring me before the meeting, at a set time"

/** Says the message means the alarm: the alarm's text and the message point one way, the calendar's another. */
const scripted: Embedder.EmbedderService = {
  name: "scripted",
  dimensions: 2,
  embed: (texts) =>
    Effect.succeed(
      texts.map((t) => (t.startsWith("Calendar") ? Float32Array.of(0, 1) : Float32Array.of(1, 0)))
    )
}

const fused = (): Promise<QueryRanking> =>
  Effect.runPromise(Ranking.fusedForCatalog(catalog).pipe(Effect.provideService(Embedder.Embedder, scripted)))

/** The tools the turn's first model call is offered, with preload on and no confidence asked. */
const firstOffer = async (ranking: QueryRanking | undefined) => {
  const model = ScriptedChatModel.script(["Ok."])
  const agent = await createMainAgent({
    catalog,
    model,
    checkpointer: new MemorySaver(),
    logger: recordingLogger().logger,
    request: { did: "did:key:alice", sessionId: "s-preload-ranking", requestId: "r" },
    preload: { mode: "on", threshold: 0 },
    ...(ranking === undefined ? {} : { ranking })
  })
  await runTurn(agent, { message: MESSAGE })
  return model.calls[0]!.offeredTools
}

describe("issue 36 item 21: predictive preload ranks with the host's ranking", () => {
  it("issue 36 item 21: the lexical and the fused ranking disagree on the message", async () => {
    const lexical = CapabilityIndex.rank(CapabilityIndex.forCatalog(catalog), MESSAGE)
    expect(lexical[0]?.name).toBe("calendar")
    const ranked = await Effect.runPromise((await fused()).rank(MESSAGE))
    expect(ranked[0]?.name).toBe("alarm")
    expect(ranked[0]!.relevance).toBeGreaterThan(0)
    // Core's own: the fused ranking's first plugin is the prediction.
    const decision = await Effect.runPromise(
      Preload.decideWith(await fused(), catalog, [], MESSAGE, { mode: "on", threshold: 0 })
    )
    expect(decision.prediction?.plugin).toBe("alarm")
    expect(decision.preloaded).toEqual(["alarm"])
  })

  it("issue 36 item 21: with a fused ranking, the turn preloads what the fused ranking ranks first", async () => {
    const offered = await firstOffer(await fused())
    expect(offered).toContain("set_alarm")
    expect(offered).not.toContain("add_event")
  })

  it("issue 36 item 21: without one, preload stays lexical (the calendar)", async () => {
    const offered = await firstOffer(undefined)
    expect(offered).toContain("add_event")
    expect(offered).not.toContain("set_alarm")
  })

  it("issue 36 item 21: a fused ranking that fails leaves that turn's preload lexical, logged", async () => {
    const failing: QueryRanking = {
      kind: "fused",
      embedder: "broken",
      label: "fused with broken",
      rank: () => Effect.fail(new Embedder.EmbedderError({ reason: "inference-failed", message: "boom" }))
    }
    const offered = await firstOffer(failing)
    expect(offered).toContain("add_event")
  })
})
