/**
 * Issue 36, item 5: one large MCP answer must not enter the model's context. A real MCP server
 * (the SDK's, `fixtures/mcp/hostile-server.mjs`) answers with 8 MB of text; the oracle talks to
 * its model over the OpenAI wire (the real `openai-compatible` provider, against the scripted
 * model served locally), so what each model call sent is measured as the bytes of its request.
 * The answer enters the thread as its first page and a handle; `read_result` reads the next page
 * from the whole answer, which the thread keeps (docs/spec/meta-tools.md#read_result).
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { call, collect, newSession, start, stream, user } from "./helpers.js"
import { answerTo, toolText } from "./mcpHelpers.js"
import { measuredWire } from "./modelWire.js"

const here = dirname(fileURLToPath(import.meta.url))
const hostile = join(here, "fixtures", "mcp", "hostile-server.mjs")

describe("a large tool result (issue 36, item 5)", () => {
  it("issue 36 item 5: after an 8 MB MCP result, the next model call's request body is under 64 KB; read_result pages the rest", async () => {
    const seen: { first?: string; page2?: string; offered?: ReadonlyArray<string>; missing?: string } = {}
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["hostile"] } }],
      [{ tool: "dump", args: { megabytes: 8 } }],
      (t) => {
        seen.first = toolText(answerTo(t, "dump"))
        seen.offered = t.offeredTools
        const handle = answerTo(t, "dump").tool_call_id
        return [{ tool: "read_result", args: { handle, page: 2 } }]
      },
      (t) => {
        seen.page2 = toolText(answerTo(t, "read_result"))
        return [{ tool: "read_result", args: { handle: "no-such-handle" } }]
      },
      (t) => {
        seen.missing = toolText(answerTo(t, "read_result"))
        return "The log shows reads only."
      },
      // The next turn of the same session: the 8 MB must not come back.
      "Nothing else in it."
    ])
    const wire = await measuredWire(model)
    const server = await start({
      mcpServers: {
        mcpServers: { hostile: { command: process.execPath, args: [hostile], timeoutMs: 60_000 } }
      },
      env: {
        LLM_PROVIDER: "openai-compatible",
        ...wire.env
      }
    })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const first = await collect(
        (await stream(server.url, session, u.headers, "What is in the audit log?")).events
      )
      expect(first.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const second = await collect((await stream(server.url, session, u.headers, "Anything else?")).events)
      expect(second.at(-1)).toMatchObject({ _tag: "done", status: "finished" })

      // The model got the first page and a handle, and read_result was offered once there was one.
      expect(seen.first).toMatch(/^audit line 0000000:/)
      expect(seen.first).toMatch(
        /This result is 8,388,608 characters, over the bound of 20,000: above is page 1 of \d+/
      )
      expect(seen.first!.length).toBeLessThan(21_000)
      expect(seen.offered?.at(-1)).toBe("read_result")
      // Page 2 starts where page 1 ended: the whole answer was kept.
      const firstPage = seen.first!.slice(0, 20_000)
      expect(seen.page2!.startsWith(firstPage)).toBe(false)
      const line = /audit line (\d{7})/.exec(seen.page2!.slice(0, 200))
      expect(Number(line?.[1])).toBeGreaterThan(200)
      expect(seen.page2).toMatch(/\[Page 2 of \d+ of result/)
      expect(seen.missing).toMatch(/no result with handle "no-such-handle" is kept in this conversation/)

      // Six model calls; every one after the dump sent well under 64 KB.
      expect(wire.sizes).toHaveLength(6)
      for (const size of wire.sizes.slice(2)) expect(size).toBeLessThan(64 * 1024)

      // The history a front end reads is bounded too.
      const history = await call(`${server.url}/messages/${session}`, { headers: u.headers })
      expect(history.status).toBe(200)
      const bodyBytes = JSON.stringify(history.body).length
      expect(bodyBytes).toBeLessThan(256 * 1024)
    } finally {
      await server.stop()
      await wire.close()
    }
  }, 120_000)
})
