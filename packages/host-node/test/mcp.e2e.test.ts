/**
 * MCP servers mounted on a real oracle, end to end over HTTP + SSE, driven by the scripted model:
 * the real `@modelcontextprotocol/server-everything` (stdio) is listed, loaded and called; a
 * server that crashes mid-call, one that hangs past its `timeoutMs`, and one missing at boot
 * each give the model a clear error, and every turn still ends normally with its answer; a
 * turn's abort cancels the call in flight. Two servers share tool names (`flaky`, `stuck`): both
 * are offered namespaced (`flaky__crash`).
 */

import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { ToolMessage } from "@langchain/core/messages"
import type { EventSink } from "@plugboard/core"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, collect, newSession, type Running, start, stream, user } from "./helpers.js"
import { answerOf, answerTo, everythingEntry, toolText } from "./mcpHelpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const cancelLog = join(mkdtempSync(join(tmpdir(), "plugboard-mcp-cancel-")), "cancelled.txt")

const mcpServers = {
  mcpServers: {
    everything: { command: process.execPath, args: [everythingEntry, "stdio"], timeoutMs: 20_000 },
    flaky: {
      command: process.execPath,
      args: [join(here, "fixtures", "mcp", "flaky-server.mjs")],
      timeoutMs: 4_000
    },
    missing: { command: "plugboard-no-such-mcp-server", args: [] },
    stuck: {
      command: process.execPath,
      args: [join(here, "fixtures", "mcp", "flaky-server.mjs")],
      env: { CANCEL_LOG: cancelLog },
      timeoutMs: 30_000
    }
  }
}

/** Waits (at most 10 s) for `check` to hold. */
const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 50))
}

describe("MCP servers as plugins, end to end", () => {
  let running: Running
  const seen: Record<string, ToolMessage> = {}
  const script: Array<ScriptStep> = [
    // Turn 1: discover, load, call over MCP.
    { tool: "list_capabilities", args: {} },
    (t) => {
      seen.list = answerTo(t, "list_capabilities")
      return { tool: "load_capability", args: { names: ["everything", "missing", "flaky"] } }
    },
    (t) => {
      seen.load = answerTo(t, "load_capability")
      return { tool: "echo", args: { message: "hello over MCP" } }
    },
    (t) => {
      seen.echo = answerTo(t, "echo")
      return { tool: "trigger-long-running-operation", args: { duration: 0.3, steps: 3 } }
    },
    (t) => {
      seen.long = answerTo(t, "trigger-long-running-operation")
      return "The server echoed it."
    },
    // Turn 2: a server that crashes mid-call, then one that hangs past its timeout.
    { tool: "load_capability", args: { names: ["flaky"] } },
    { tool: "flaky__crash", args: {} },
    (t) => {
      seen.crash = answerTo(t, "flaky__crash")
      return { tool: "flaky__hang", args: {} }
    },
    (t) => {
      seen.hang = answerTo(t, "flaky__hang")
      return { tool: "flaky__ping", args: {} }
    },
    (t) => {
      seen.ping = answerTo(t, "flaky__ping")
      return "Two tools failed; the server answers again."
    },
    // Turn 3: a call the user's abort cancels.
    { tool: "load_capability", args: { names: ["stuck"] } },
    // (the aborted turn calls the model no more)
    { tool: "stuck__hang", args: {} },
    // Turns 4 and 5, one session: the server adds a tool, the next turn is offered it, last.
    { tool: "load_capability", args: { names: ["flaky"] } },
    (t) => {
      offers.before = t.offeredTools
      return { tool: "flaky__add_tool", args: {} }
    },
    "Added.",
    (t) => {
      offers.after = t.offeredTools
      return { tool: "grown", args: {} }
    },
    (t) => {
      seen.grown = answerTo(t, "grown")
      return "It answered."
    }
  ]
  const offers: { before?: ReadonlyArray<string>; after?: ReadonlyArray<string> } = {}
  const model = ScriptedChatModel.script(script)

  beforeAll(async () => {
    running = await start({ mcpServers, model, env: { MCP_IDLE_MS: "60000" } })
  }, 60_000)
  afterAll(async () => {
    await running?.stop()
  })

  const turn = async (message: string) => {
    const u = await user(running.app.oracleDid)
    const session = await newSession(running.url, u.headers)
    const { events } = await stream(running.url, session, u.headers, message)
    return { events: await collect(events), session, headers: u.headers }
  }

  it("lists the server, loads it, and runs its tool over MCP; the answer reaches the model", async () => {
    const entry = running.app.catalog.byName.get("everything")!
    expect(entry.source).toEqual({ kind: "mcp", server: "everything", protocolVersion: "2025-11-25" })
    expect(entry.tools.map((t) => t.name)).toContain("echo")
    expect(running.app.catalog.byName.get("missing")?.unavailable).toMatch(
      /could not be started|ENOENT|spawn/
    )

    const { events, session, headers } = await turn("Echo 'hello over MCP'.")
    expect(events.at(-1)?._tag).toBe("done")
    expect(events.filter((e) => e._tag === "error")).toEqual([])
    expect(answerOf(events)).toBe("The server echoed it.")

    const listing = JSON.parse(toolText(seen.list!)) as {
      plugins: Array<{ name: string; unavailable?: string }>
    }
    expect(listing.plugins.map((p) => p.name)).toEqual(
      expect.arrayContaining(["everything", "flaky", "missing"])
    )
    expect(listing.plugins.find((p) => p.name === "missing")?.unavailable).toBeDefined()
    expect(listing.plugins.find((p) => p.name === "everything")?.unavailable).toBeUndefined()

    const load = JSON.parse(toolText(seen.load!)) as {
      newlyLoaded: string[]
      results: Array<{ name: string; status: string; error?: string; message?: string }>
    }
    expect(load.newlyLoaded).toEqual(["everything", "flaky"])
    const missing = load.results.find((r) => r.name === "missing")!
    expect(missing).toMatchObject({ status: "error", error: "unavailable" })
    expect(missing.message).toContain("Plugin 'missing' is unavailable")

    expect(seen.echo!.status).toBe("success")
    expect(toolText(seen.echo!)).toContain("hello over MCP")
    // What the client can read back: the call and its answer are in the thread's history.
    const history = await call(`${running.url}/messages/${session}`, { headers })
    const toolAnswers = (
      history.body.messages as Array<{ type: string; name?: string; content: string }>
    ).filter((m) => m.type === "tool" && m.name === "echo")
    expect(toolAnswers).toHaveLength(1)
    expect(toolAnswers[0]!.content).toContain("hello over MCP")
    // The tool_call events carried the MCP result too.
    const echoDone = events.find(
      (e) => e._tag === "tool_call" && e.toolName === "echo" && e.status === "done"
    )
    expect(echoDone && "output" in echoDone ? String(echoDone.output) : "").toContain("hello over MCP")
  }, 60_000)

  it("a crash mid-call and a hang past timeoutMs each give the model a clear error; the turn ends normally", async () => {
    const started = Date.now()
    const { events } = await turn("Try the flaky tools.")
    expect(events.at(-1)?._tag).toBe("done")
    expect(events.filter((e) => e._tag === "error")).toEqual([])
    expect(answerOf(events)).toBe("Two tools failed; the server answers again.")

    expect(seen.crash!.status).toBe("error")
    expect(toolText(seen.crash!)).toMatch(/^Tool 'flaky__crash' failed: .*flaky/)
    expect(toolText(seen.crash!)).toMatch(/exit|crash|closed/i)
    expect(seen.hang!.status).toBe("error")
    expect(toolText(seen.hang!)).toMatch(/^Tool 'flaky__hang' failed: .*4000 ms/)
    // After the crash, the next call reconnected.
    expect(seen.ping!.status).toBe("success")
    expect(toolText(seen.ping!)).toBe("pong")
    // The hang was bounded by its timeoutMs, not by anything longer.
    expect(Date.now() - started).toBeLessThan(20_000)
  }, 60_000)

  it("the turn's abort cancels the MCP call in flight: the server is sent notifications/cancelled", async () => {
    const u = await user(running.app.oracleDid)
    const session = await newSession(running.url, u.headers)
    const { events } = await stream(running.url, session, u.headers, "Run the stuck tool.")
    const seenEvents: Array<EventSink.AgentEvent> = []
    for await (const e of events) {
      seenEvents.push(e)
      if (e._tag === "tool_call" && e.toolName === "stuck__hang" && e.status === "isRunning") {
        // The call is sent once its server is up (the first call spawns it): abort after that.
        await until(() => existsSync(cancelLog) && readFileSync(cancelLog, "utf8") === "started\n")
        const aborted = await call(`${running.url}/messages/abort`, {
          method: "POST",
          headers: u.headers,
          body: { sessionId: session }
        })
        expect(aborted.body).toEqual({ success: true })
      }
    }
    expect(seenEvents.at(-1)?._tag).toBe("done")
    // The cancellation reaches the server shortly after the abort.
    await until(() => readFileSync(cancelLog, "utf8") === "started\ncancelled\n")
    expect(readFileSync(cancelLog, "utf8")).toBe("started\ncancelled\n")
  }, 60_000)

  it("tools/list_changed: a tool the server adds is offered from the next turn, after every other", async () => {
    const u = await user(running.app.oracleDid)
    const session = await newSession(running.url, u.headers)
    for (const message of ["Grow a tool.", "Use the new tool."]) {
      const { events } = await stream(running.url, session, u.headers, message)
      expect((await collect(events)).at(-1)?._tag).toBe("done")
    }
    expect(offers.before).toBeDefined()
    expect(offers.before).not.toContain("grown")
    // The offer only appends: everything offered before keeps its place, the new tool comes last.
    expect(offers.after).toEqual([...offers.before!, "grown"])
    expect(seen.grown!.status).toBe("success")
    expect(toolText(seen.grown!)).toBe("grown answers")
  }, 60_000)
})
