/**
 * The server bounds each turn (`TURN_*`, core's TurnBounds): a model that keeps calling tools is
 * stopped at `TURN_MAX_TOOL_CALLS`, the stream says why, and the thread keeps what the turn did.
 */
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { call, collect, slowJob, start, stream, user } from "./helpers.js"

describe("turn bounds on the server", () => {
  it("a turn past TURN_MAX_TOOL_CALLS ends failed, naming the bound; the thread stays valid", async () => {
    const weatherCall = (city: string) => [{ tool: "get_current_weather", args: { city } }]
    const server = await start({
      env: { TURN_MAX_TOOL_CALLS: "2" },
      model: ScriptedChatModel.script([
        [{ tool: "load_capability", args: { names: ["weather"] } }],
        weatherCall("Berlin"),
        weatherCall("Paris"),
        "never reached"
      ])
    })
    try {
      const u = await user(server.app.oracleDid)
      const events = await collect(
        (await stream(server.url, "bounded", u.headers, "weather, again and again")).events
      )
      const error = events.find((e) => e._tag === "error") as { error: string; code: string } | undefined
      expect(error?.code).toBe("max-tool-calls")
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "failed", reason: "max-tool-calls" })
      const history = await call(`${server.url}/messages/bounded`, { headers: u.headers })
      expect(history.status).toBe(200)
      expect(history.body.messages[0]).toMatchObject({ content: "weather, again and again" })
      // The hit is counted: /health shows how turns ended, cut ones by reason.
      const health = await call(`${server.url}/health`)
      expect(health.body.turns).toEqual({ finished: 0, failed: { "max-tool-calls": 1 } })
    } finally {
      await server.stop()
    }
  })

  it("a model that reports zero usage is still bound by TURN_MAX_TOKENS: what each call sends is counted, tool schemas included (issue 36, item 6)", async () => {
    // Its usage reports say every call cost 0 tokens.
    const zero = { name: "zero", count: () => 0 }
    const server = await start({
      // The messages alone of these five calls come to about 1,100 tokens; with the offered tools'
      // schemas the first three pass 1,300.
      env: { TURN_MAX_TOKENS: "1300" },
      model: ScriptedChatModel.script(
        [
          [{ tool: "load_capability", args: { names: ["weather"] } }],
          [{ tool: "get_current_weather", args: { city: "Berlin" } }],
          [{ tool: "get_current_weather", args: { city: "Paris" } }],
          [{ tool: "get_current_weather", args: { city: "Rome" } }],
          "never reached"
        ],
        { tokenCounter: zero }
      )
    })
    try {
      const u = await user(server.app.oracleDid)
      const events = await collect(
        (await stream(server.url, "zero-usage", u.headers, "weather everywhere")).events
      )
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "failed", reason: "max-tokens" })
      const history = await call(`${server.url}/messages/zero-usage`, { headers: u.headers })
      expect(history.body.messages.some((m: { content: string }) => m.content === "never reached")).toBe(
        false
      )
    } finally {
      await server.stop()
    }
  })

  it("a tool that hangs is cut at TURN_TIMEOUT_MS: done says failed, wall-clock; the thread stays valid", async () => {
    const server = await start({
      plugins: [slowJob],
      env: { TURN_TIMEOUT_MS: "400" },
      model: ScriptedChatModel.script([[{ tool: "run_slow_job", args: {} }], "never reached"])
    })
    try {
      const u = await user(server.app.oracleDid)
      const events = await collect((await stream(server.url, "hung", u.headers, "Run the slow job")).events)
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "failed", reason: "wall-clock" })
      const history = await call(`${server.url}/messages/hung`, { headers: u.headers })
      expect(history.status).toBe(200)
      const health = await call(`${server.url}/health`)
      expect(health.body.turns).toMatchObject({ failed: { "wall-clock": 1 } })
    } finally {
      await server.stop()
    }
  })
})
