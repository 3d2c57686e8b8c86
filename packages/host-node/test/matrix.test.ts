/**
 * Replication across hosts: a turn on host A, graceful close (which flushes the sync), then
 * host B — a fresh data directory sharing only the snapshot store — serves the same user's
 * session and history. The store is the adapters' in-memory twin of the Matrix one.
 */
import { memorySnapshotStore } from "@plugboard/adapters/matrix"
import { generateSigner } from "@plugboard/adapters/ucan"
import { expect, it } from "vitest"
import { call, collect, headersFor, start, stream } from "./helpers.js"

it("a user's state written on one host is served by another after a graceful close", async () => {
  const store = memorySnapshotStore()
  const signer = await generateSigner()
  const a = await start({ matrixStore: store })
  try {
    const headers = await headersFor(signer, a.app.oracleDid)
    const events = await collect(
      (await stream(a.url, "travels", headers, "What's the weather in Berlin?")).events
    )
    expect(events.at(-1)?._tag).toBe("done")
  } finally {
    await a.stop()
  }
  const b = await start({ matrixStore: store })
  try {
    const headers = await headersFor(signer, b.app.oracleDid)
    const sessions = await call(`${b.url}/sessions`, { headers })
    expect(sessions.body).toMatchObject({ total: 1, sessions: [{ sessionId: "travels" }] })
    const history = await call(`${b.url}/messages/travels`, { headers })
    expect(history.body.messages.map((m: { type: string }) => m.type)).toEqual([
      "human",
      "ai",
      "tool",
      "ai",
      "tool",
      "ai"
    ])
    // And the thread continues there: the weather plugin is already loaded in it.
    const next = await collect(
      (await stream(b.url, "travels", headers, "What's the weather in Tokyo?")).events
    )
    const calls = next
      .filter((e) => e._tag === "tool_call" && e.status === "isRunning")
      .map((e) => (e as { toolName: string }).toolName)
    expect(calls).toEqual(["get_current_weather"])
  } finally {
    await b.stop()
  }
})
