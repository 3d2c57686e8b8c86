/**
 * MCP's `destructiveHint` as a reason to wait (issue 40, docs/waiting.md): a real SDK server's
 * tool annotated `destructiveHint: true` stops the run with an approval wait, and runs only once
 * approved; its read-only tool runs at once; with `APPROVAL_MCP_DESTRUCTIVE=off` the hint is
 * ignored, and `APPROVAL_TOOLS` still makes the tool wait.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { EventSink } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { afterEach, describe, expect, it } from "vitest"
import { readSse } from "../src/cli/Sse.js"
import { collect, newSession, type Running, start, stream, user } from "./helpers.js"

const here = dirname(fileURLToPath(import.meta.url))

let server: Running | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
})

const boot = async (env: Record<string, string> = {}) => {
  const log = join(mkdtempSync(join(tmpdir(), "plugboard-destructive-")), "removed.txt")
  server = await start({
    plugins: [],
    mcpServers: {
      mcpServers: {
        asking: {
          command: process.execPath,
          args: [join(here, "fixtures", "mcp", "asking-server.mjs")],
          env: { REMOVED_LOG: log },
          timeoutMs: 20_000
        }
      }
    },
    model: ScriptedChatModel.script([
      { tool: "load_capability", args: { names: ["asking"] } },
      { tool: "peek", args: { path: "a.txt" } },
      { tool: "remove", args: { path: "a.txt" } },
      "Done."
    ]),
    env
  })
  return { s: server, removed: () => (existsSync(log) ? readFileSync(log, "utf8") : "") }
}

type Waiting = Extract<EventSink.AgentEvent, { _tag: "waiting" }>

const turn = async (s: Running) => {
  const u = await user(s.app.oracleDid)
  const session = await newSession(s.url, u.headers)
  const { response, events } = await stream(s.url, session, u.headers, "Remove a.txt")
  return { u, runId: response.headers.get("x-run-id")!, all: await collect(events) }
}

describe("an MCP tool marked destructiveHint", () => {
  it("waits for approval (the read-only tool ran at once); approved, it runs once", async () => {
    const { s, removed } = await boot()
    expect(s.app.catalog.byName.get("asking")?.tools.find((t) => t.name === "remove")?.destructiveHint).toBe(
      true
    )
    const { u, runId, all } = await turn(s)
    const peek = all.find((e) => e._tag === "tool_call" && e.status === "done" && e.toolName === "peek")
    expect(peek).toMatchObject({ toolName: "peek", output: "contents of a.txt" })
    const waiting = all.find((e): e is Waiting => e._tag === "waiting")
    expect(waiting).toMatchObject({
      kind: "approval",
      plugin: "asking",
      tool: "remove",
      args: { path: "a.txt" }
    })
    expect(waiting?.reason).toContain("destructive")
    expect(all.at(-1)).toMatchObject({ status: "interrupted", reason: "waiting" })
    expect(removed()).toBe("")

    const answered = await fetch(`${s.url}/runs/${runId}/resume`, {
      method: "POST",
      headers: u.headers,
      body: JSON.stringify({ decision: "approve" })
    })
    expect(answered.status).toBe(200)
    const resumed = await collect(readSse(answered.body!))
    expect(resumed.find((e) => e._tag === "tool_call" && e.status === "done")).toMatchObject({
      toolName: "remove",
      output: "removed a.txt"
    })
    expect(resumed.at(-1)).toMatchObject({ status: "finished" })
    expect(removed()).toBe("a.txt\n")
  }, 60_000)

  it("runs at once with APPROVAL_MCP_DESTRUCTIVE=off", async () => {
    const { s, removed } = await boot({ APPROVAL_MCP_DESTRUCTIVE: "off" })
    const { all } = await turn(s)
    expect(all.filter((e) => e._tag === "waiting")).toEqual([])
    expect(all.at(-1)).toMatchObject({ status: "finished" })
    expect(removed()).toBe("a.txt\n")
  }, 60_000)

  it("with the hint off, the operator's APPROVAL_TOOLS still makes it wait (its reason says so)", async () => {
    const { s, removed } = await boot({ APPROVAL_MCP_DESTRUCTIVE: "off", APPROVAL_TOOLS: "asking/remove" })
    const { all } = await turn(s)
    const waiting = all.find((e): e is Waiting => e._tag === "waiting")
    expect(waiting?.reason).toBe("the operator requires approval for 'asking/remove'")
    expect(removed()).toBe("")
  }, 60_000)

  it("a bad APPROVAL_MCP_DESTRUCTIVE is a config error naming it", async () => {
    await expect(boot({ APPROVAL_MCP_DESTRUCTIVE: "maybe" })).rejects.toThrow(
      /APPROVAL_MCP_DESTRUCTIVE must be true or false, got "maybe"/
    )
  }, 60_000)
})
