/**
 * Predictive preload through the agent (docs/spec/tiers.md#predictive-preload), with the scripted
 * model, in each mode: `on` offers the predicted plugin's tools on every call of the turn, after the
 * stable prefix and without loading it; `shadow` leaves the offer as it is and logs whether the
 * model then loaded the predicted plugin; `off` ranks nothing.
 */
import { MemorySaver } from "@langchain/langgraph"
import {
  type Access,
  Catalog,
  definePlugin,
  defineTool,
  MetaTools,
  Offer,
  type Plugin,
  type Preload
} from "@plugboard/core"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { createMainAgent, type PreloadOption, runTurn, streamTurn } from "../src/index.js"
import { makeCounters, recordingLogger, testPlugins } from "./fixtures.js"

const WEATHER = "What's the current weather and temperature in Berlin?"

/** A second on-demand plugin, for a model that loads something other than the prediction. */
const timerPlugin = definePlugin({
  name: "timer",
  manifest: { title: "Timer", summary: "Countdown timers.", whenToUse: ["Setting a countdown."] },
  tools: [
    defineTool({
      name: "start_timer",
      description: "Starts a timer.",
      input: Schema.Struct({}),
      handler: () => "ok"
    })
  ]
})

const setup = async (
  mode: Preload.Mode,
  script: ReadonlyArray<ScriptStep>,
  extra: Partial<PreloadOption> = {},
  more: {
    readonly plugins?: ReadonlyArray<Plugin>
    readonly capabilities?: ReadonlyArray<Access.Capability>
  } = {}
) => {
  const counters = makeCounters()
  const catalog = Catalog.unsafeMake(testPlugins(counters, [timerPlugin, ...(more.plugins ?? [])]))
  const model = ScriptedChatModel.script(script)
  const { lines, logger } = recordingLogger()
  const agreements: Array<Preload.Agreement> = []
  const saver = new MemorySaver()
  const agent = () =>
    createMainAgent({
      catalog,
      model,
      checkpointer: saver,
      logger,
      request: {
        did: "did:key:alice",
        sessionId: "s-preload",
        requestId: "r",
        ...(more.capabilities === undefined ? {} : { capabilities: more.capabilities })
      },
      preload: { mode, onAgreement: (a) => agreements.push(a), ...extra }
    })
  return { counters, catalog, model, lines, agreements, agent }
}

/** What a turn with preload off is offered on its first call: the stable offer. */
const baseline = async (): Promise<ReadonlyArray<string>> => {
  const t = await setup("off", ["Ok."])
  await runTurn(await t.agent(), { message: WEATHER })
  return t.model.calls[0]!.offeredTools
}

const preloadLines = (lines: ReturnType<typeof recordingLogger>["lines"]) =>
  lines.filter((l) => l.message === "preload")

describe("predictive preload through the agent", () => {
  it("on: the predicted plugin's tools come last on every call of the turn; the model calls one without loading", async () => {
    const t = await setup("on", [[{ tool: "get_current_weather", args: { city: "Berlin" } }], "Sunny."])
    const turn = await runTurn(await t.agent(), { message: WEATHER })
    expect(turn.answer).toBe("Sunny.")
    expect(t.counters.calls.get_current_weather).toBe(1)
    // One model call saved: no load_capability round trip.
    expect(t.model.calls).toHaveLength(2)
    const stable = await baseline()
    expect(stable).not.toContain("get_current_weather")
    for (const call of t.model.calls) {
      expect(call.offeredTools.slice(0, stable.length)).toEqual(stable)
      expect(call.offeredTools.slice(stable.length)).toEqual(["get_current_weather", "get_weather_forecast"])
    }
    // For this turn only: the plugin did not join loadedPlugins.
    expect(turn.state.loadedPlugins).toEqual([])
    expect(t.agreements).toEqual([
      expect.objectContaining({
        kind: "agreed",
        mode: "on",
        reason: "preloaded",
        predicted: "weather",
        used: ["weather"]
      })
    ])
    expect(preloadLines(t.lines)).toEqual([
      expect.objectContaining({
        level: "info",
        fields: expect.objectContaining({ kind: "agreed", used: "weather" })
      })
    ])
  })

  it("on: the next turn decides afresh; a message about nothing offers the stable prefix only", async () => {
    const t = await setup("on", [
      [{ tool: "get_current_weather", args: { city: "Berlin" } }],
      "Sunny.",
      "Hello!"
    ])
    await runTurn(await t.agent(), { message: WEATHER })
    const second = await runTurn(await t.agent(), { message: "zzz qqq" })
    expect(second.answer).toBe("Hello!")
    expect(t.model.calls[2]!.offeredTools).toEqual(await baseline())
    expect(t.agreements.map((a) => [a.kind, a.reason])).toEqual([
      ["agreed", "preloaded"],
      ["no-prediction", "no-match"]
    ])
    // A turn that predicted and loaded nothing logs at debug only.
    expect(preloadLines(t.lines).map((l) => l.level)).toEqual(["info", "debug"])
  })

  it("on: a preloaded plugin the model loads anyway is offered once, in the loaded section", async () => {
    const t = await setup("on", [
      [{ tool: MetaTools.LOAD_CAPABILITY, args: { names: ["weather"] } }],
      [{ tool: "get_current_weather", args: { city: "Berlin" } }],
      "Sunny."
    ])
    const turn = await runTurn(await t.agent(), { message: WEATHER })
    expect(turn.state.loadedPlugins).toEqual(["weather"])
    const last = t.model.calls[2]!.offeredTools
    expect(new Set(last).size).toBe(last.length)
    // The preloaded tools moved into the loaded section, right after the catalog's prefix.
    const prefix = Offer.offer(t.catalog, ["weather"]).map((x) => x.name)
    expect(last.slice(0, prefix.length)).toEqual(prefix)
    expect(last.filter((n) => n.startsWith("get_weather") || n === "get_current_weather")).toHaveLength(2)
    expect(t.agreements[0]).toMatchObject({ kind: "agreed", used: ["weather"] })
  })

  it("on, streamed: the same offer and the same agreement", async () => {
    const t = await setup("on", [[{ tool: "get_current_weather", args: { city: "Berlin" } }], "Sunny."])
    const stream = streamTurn(await t.agent(), { message: WEATHER })
    let step = await stream.next()
    while (step.done !== true) step = await stream.next()
    expect(step.value.answer).toBe("Sunny.")
    expect(t.model.calls[0]!.offeredTools.at(-1)).toBe("get_weather_forecast")
    expect(t.agreements[0]?.kind).toBe("agreed")
  })

  it("on: a plugin the user may not use is not preloaded", async () => {
    const t = await setup("on", ["No."], { available: (p) => p !== "weather" })
    await runTurn(await t.agent(), { message: WEATHER })
    expect(t.model.calls[0]!.offeredTools).not.toContain("get_current_weather")
    expect(t.agreements[0]).toMatchObject({
      kind: "no-prediction",
      reason: "unavailable",
      predicted: "weather"
    })
  })

  it("on: a tool the user's grants deny is not preloaded with its plugin; granted, it is", async () => {
    const ADMIN = { can: "admin/restart", with: "ixo:oracle" }
    const ops = definePlugin({
      name: "ops",
      manifest: {
        title: "Ops",
        summary: "Oracle operations status.",
        whenToUse: ["Checking the oracle status."]
      },
      tools: [
        defineTool({
          name: "ops_status",
          description: "Status.",
          input: Schema.Struct({}),
          handler: () => "up"
        }),
        defineTool({
          name: "ops_restart",
          description: "Restarts.",
          input: Schema.Struct({}),
          requires: [ADMIN],
          handler: () => "restarted"
        })
      ]
    })
    const message = "What is the oracle operations status?"
    const user = await setup("on", ["Up."], {}, { plugins: [ops] })
    await runTurn(await user.agent(), { message })
    expect(user.model.calls[0]!.offeredTools.slice(-1)).toEqual(["ops_status"])
    expect(user.model.calls[0]!.offeredTools).not.toContain("ops_restart")
    const admin = await setup("on", ["Up."], {}, { plugins: [ops], capabilities: [ADMIN] })
    await runTurn(await admin.agent(), { message })
    expect(admin.model.calls[0]!.offeredTools.slice(-2)).toEqual(["ops_status", "ops_restart"])
  })

  it("shadow: the offer is unchanged, and the log says the model agreed when it loads the predicted plugin", async () => {
    const t = await setup("shadow", [
      [{ tool: MetaTools.LOAD_CAPABILITY, args: { names: ["weather"] } }],
      [{ tool: "get_current_weather", args: { city: "Berlin" } }],
      "Sunny."
    ])
    const turn = await runTurn(await t.agent(), { message: WEATHER })
    expect(t.model.calls[0]!.offeredTools).toEqual(await baseline())
    expect(turn.state.loadedPlugins).toEqual(["weather"])
    expect(t.agreements).toEqual([
      expect.objectContaining({ kind: "agreed", mode: "shadow", reason: "shadow", predicted: "weather" })
    ])
    expect(preloadLines(t.lines)[0]).toMatchObject({
      level: "info",
      fields: { kind: "agreed", mode: "shadow", predicted: "weather", used: "weather" }
    })
  })

  it("shadow: loading another plugin is a disagreement; loading none is no-load", async () => {
    const t = await setup("shadow", [
      [{ tool: MetaTools.LOAD_CAPABILITY, args: { names: ["timer"] } }],
      "Done.",
      "Hi."
    ])
    const first = await runTurn(await t.agent(), { message: WEATHER })
    expect(first.state.loadedPlugins).toEqual(["timer"])
    await runTurn(await t.agent(), { message: WEATHER })
    expect(t.agreements.map((a) => a.kind)).toEqual(["disagreed", "no-load"])
    expect(t.agreements[0]?.used).toEqual(["timer"])
    // timer was loaded by the first turn: the second does not count it.
    expect(t.agreements[1]?.used).toEqual([])
  })

  it("off: nothing is ranked, reported or offered", async () => {
    const t = await setup("off", [[{ tool: "get_current_weather", args: { city: "Berlin" } }], "Ok."])
    const turn = await runTurn(await t.agent(), { message: WEATHER })
    expect(t.model.calls[0]!.offeredTools).toEqual(await baseline())
    // The gate refused the call to a tool that was not offered.
    expect(t.counters.calls.get_current_weather).toBeUndefined()
    expect(String(turn.state.messages[2]!.content)).toContain("load_capability")
    expect(t.agreements).toEqual([])
    expect(preloadLines(t.lines)).toEqual([])
  })
})
