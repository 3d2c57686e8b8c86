/**
 * Issue 36, item 6: a server with 10,000 tools booted with no warning, its load returned 1.4 M
 * characters, and the next calls offered 10,007 tools in 3.9 MB requests. Now a real MCP server
 * (the SDK's, `fixtures/mcp/hostile-server.mjs` with TOOL_COUNT=10000) is over the load budget
 * (`LOAD_BUDGET_TOKENS`, docs/spec/token-budget.md#the-load-budget): the boot log warns, the boot
 * report says it is unavailable and what it would cost, the load is refused saying why, and every
 * model call stays small. Measured over the OpenAI wire (the real `openai-compatible` provider).
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { call, collect, newSession, recordingLogger, start, stream, user } from "./helpers.js"
import { answerTo, toolText } from "./mcpHelpers.js"
import { measuredWire } from "./modelWire.js"

const here = dirname(fileURLToPath(import.meta.url))
const hostile = join(here, "fixtures", "mcp", "hostile-server.mjs")

describe("a 10,000-tool MCP server (issue 36, item 6)", () => {
  it("issue 36 item 6: a 10,000-tool server costs no more than the load budget, and says so at boot, in the boot report and to the model", async () => {
    const seen: { load?: string; offered?: ReadonlyArray<string> } = {}
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["hostile"] } }],
      (t) => {
        seen.load = toolText(answerTo(t, "load_capability"))
        seen.offered = t.offeredTools
        return "That server cannot be loaded."
      }
    ])
    const wire = await measuredWire(model)
    const { records, logger } = recordingLogger()
    const server = await start({
      logger,
      mcpServers: {
        mcpServers: {
          hostile: {
            command: process.execPath,
            args: [hostile],
            env: { TOOL_COUNT: "10000" },
            timeoutMs: 120_000
          }
        }
      },
      env: { ...wire.env, LOAD_BUDGET_TOKENS: "20000", HEALTH_PLUGINS_PUBLIC: "true" }
    })
    try {
      const warning = records.find(
        (r) => r.level === "warn" && r.message.includes("'hostile' cannot be loaded")
      )
      expect(warning?.message).toMatch(
        /Plugin 'hostile' cannot be loaded: loading its 10,001 tools would add about [\d,]+ tokens to every later model call, over the load budget of 20,000 \(LOAD_BUDGET_TOKENS\)\. To use it, narrow it with tools\.allow in its MCP config, or raise LOAD_BUDGET_TOKENS\./
      )
      const report = await call(`${server.url}/health/plugins`)
      const row = (report.body.plugins as Array<{ name: string; unavailable?: string }>).find(
        (p) => p.name === "hostile"
      )
      expect(row?.unavailable).toMatch(/over the load budget of 20,000/)

      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const events = await collect(
        (await stream(server.url, session, u.headers, "Load the API server.")).events
      )
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(seen.load).toMatch(/Plugin 'hostile' is unavailable: loading its 10,001 tools/)
      expect(seen.load!.length).toBeLessThan(2_000)
      expect(seen.offered).toEqual(["list_capabilities", "load_capability"])
      expect(wire.sizes).toHaveLength(2)
      for (const size of wire.sizes) expect(size).toBeLessThan(16 * 1024)
    } finally {
      await server.stop()
      await wire.close()
    }
  }, 180_000)
})
