/**
 * Per-user auth for an HTTP MCP server (`forwardUcan`), end to end: a real Streamable HTTP MCP
 * server that verifies, on every request, an invocation signed by the oracle and reads the user
 * from it. The oracle lists it at boot with its own invocation, and two users' turns each reach it
 * as themselves: the server's `whoami` answers each user's own DID.
 */
import type { ToolMessage } from "@langchain/core/messages"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import { generateSigner } from "@plugboard/ucan"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  startWhoamiServer,
  type WhoamiServer
} from "../../adapters/mcp/test/fixtures-config/whoami-server.js"
import { collect, newSession, type Running, start, stream, user } from "./helpers.js"
import { answerTo } from "./mcpHelpers.js"

describe("forwardUcan: the MCP server sees who calls", () => {
  let whoami: WhoamiServer
  let running: Running
  const answers: Array<ToolMessage> = []
  const turn: Array<ScriptStep> = [
    { tool: "load_capability", args: { names: ["crm"] } },
    { tool: "whoami", args: {} },
    (t) => {
      answers.push(answerTo(t, "whoami"))
      return "Done."
    }
  ]

  beforeAll(async () => {
    const oracle = await generateSigner()
    whoami = await startWhoamiServer({ oracleDid: oracle.did(), serverName: "crm" })
    running = await start({
      identity: { signer: oracle },
      mcpServers: { mcpServers: { crm: { url: whoami.url, forwardUcan: true, timeoutMs: 10_000 } } },
      model: ScriptedChatModel.script([...turn, ...turn])
    })
  }, 60_000)
  afterAll(async () => {
    await running?.stop()
    await whoami?.close()
  })

  it("each user's call carries an invocation for that user", async () => {
    // Listed at boot, with the oracle's own invocation: the plugin is available.
    expect(running.app.catalog.byName.get("crm")?.unavailable).toBeUndefined()
    expect(running.app.catalog.toolsByName.has("whoami")).toBe(true)
    const alice = await user(running.app.oracleDid)
    const bob = await user(running.app.oracleDid)
    for (const u of [alice, bob]) {
      const session = await newSession(running.url, u.headers)
      const { events } = await stream(running.url, session, u.headers, "Who am I to the CRM?")
      expect((await collect(events)).at(-1)?._tag).toBe("done")
    }
    expect(answers.map((m) => m.status)).toEqual(["success", "success"])
    expect(String(answers[0]!.content)).toContain(alice.did)
    expect(String(answers[1]!.content)).toContain(bob.did)
    expect(String(answers[1]!.content)).not.toContain(alice.did)
    // Every request the server got was verified; none went through without an invocation.
    expect(whoami.requests.every((r) => r.status < 400)).toBe(true)
    expect(new Set(whoami.requests.map((r) => r.user))).toEqual(
      new Set([running.app.oracleDid, alice.did, bob.did])
    )
  }, 60_000)
})
