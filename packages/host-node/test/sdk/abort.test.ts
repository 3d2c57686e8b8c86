// @vitest-environment jsdom
/**
 * Abort through the real SDK: `useChat().abortStream()` while a tool of the turn is running (the
 * slow job waits on its abort signal). The SDK asks `POST /messages/abort {sessionId}`, then drops
 * its own stream; the server stops the turn, and the session takes the next one at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type Oracle,
  quietAct,
  recordFetch,
  renderChat,
  renderSessions,
  startOracle,
  textOf,
  toolCallParts,
  until
} from "./harness.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather", "slow-job"])
})
afterAll(async () => {
  await server?.stop()
})
const exchanges = recordFetch(() => server?.url)

describe("useChat().abortStream against the server", () => {
  it("stops a running turn: run ended 'aborted', the job is cancelled, the next turn runs at once", async () => {
    const user = await server.newUser()
    const sessions = renderSessions(server, user)
    await until(() => expect(sessions.result.current.isLoading).toBe(false))
    const { sessionId } = await sessions.result.current.createSession()
    sessions.unmount()

    const { result, views, unmount } = renderChat(server, user, sessionId, { withUiComponents: true })
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      const sent = result.current.sendMessage("Run the slow job")
      // The job is running (its isRunning frame reached the hook): the stream is open mid-turn.
      await until(() =>
        expect(toolCallParts(result.current.messages)).toEqual([
          expect.objectContaining({ name: "run_slow_job", status: "isRunning" })
        ])
      )
      expect(result.current.status).toBe("streaming")

      const abortedAt = Date.now()
      await result.current.abortStream()
      await sent
      expect(result.current.run.ended).toBe("aborted")
      expect(result.current.status).toBe("ready")
      expect(result.current.error).toBeNull()
      // The SDK drops its stream only once the server answered: `success` says the server found the
      // session's running turn and aborted it (not the stream going away).
      expect(exchanges.filter((e) => e.path === "/messages/abort")).toEqual([
        { method: "POST", path: "/messages/abort", status: 200, body: { success: true } }
      ])
      // The bubble never saw the job finish.
      expect(views.flatMap((view) => toolCallParts(view)).some((b) => b.status === "done")).toBe(false)

      // The session is free: the next turn is not queued behind the 30 s job.
      await result.current.sendMessage("What's the weather in Berlin?")
      expect(result.current.run.ended).toBe("done")
      expect(Date.now() - abortedAt).toBeLessThan(10_000)
      await until(() =>
        expect(result.current.messages.filter((m) => m.type === "human").map(textOf)).toEqual([
          "Run the slow job",
          "What's the weather in Berlin?"
        ])
      )
      expect(textOf(result.current.messages.at(-1)!)).toMatch(/city: Berlin/)
    } finally {
      unmount()
    }
  })

  it("abortStream with no turn running sends nothing", async () => {
    const user = await server.newUser()
    const sessions = renderSessions(server, user)
    await until(() => expect(sessions.result.current.isLoading).toBe(false))
    const { sessionId } = await sessions.result.current.createSession()
    sessions.unmount()
    const { result, unmount } = renderChat(server, user, sessionId)
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      await result.current.abortStream()
      expect(exchanges.some((e) => e.path === "/messages/abort")).toBe(false)
      expect(result.current.run.ended).toBeNull()
    } finally {
      unmount()
    }
  })
})
