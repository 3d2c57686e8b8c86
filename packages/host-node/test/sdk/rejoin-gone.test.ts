// @vitest-environment jsdom
/**
 * A rejoin answered 404, through the real SDK: the stream of `POST /messages/:id` is cut in the
 * middle of the answer, and the network stays down (the SDK's first rejoin is kept from the
 * server) until the run has ended and been pruned: the server keeps ended runs for
 * `RUN_RETENTION_MS`, here 20 ms. The rejoin then reaches a server that no longer knows the run,
 * which answers 404, and the SDK stops there (dist/index.js:1549: `if (response.status === 404)
 * break`): the turn ends `disconnected`, with no second rejoin (the SDK's retry delay is jumped over
 * on fake timers). The answer the server kept comes
 * with the history the hook reloads after the turn.
 */
import type { IMessage } from "@ixo/oracles-client-sdk"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { createSession, type Oracle, quietAct, renderChat, startOracle, textOf, until } from "./harness.js"
import { afterFrame, network } from "./network.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather"], {
    pace: { chunks: 8, delayMs: 40, holdAfter: 2 },
    env: { RUN_RETENTION_MS: "20" }
  })
})
afterAll(async () => {
  await server?.stop()
})
const net = network(() => server?.url)

const QUESTION = "What's the weather in Berlin?"
const ANSWER = /^Here is what Weather \(get_current_weather\) returned: city: Berlin, .+\.$/

/** How many times the answer's opening shows in a message list's AI messages. */
const openings = (messages: ReadonlyArray<IMessage>) =>
  messages
    .filter((m) => m.type === "ai")
    .reduce((n, m) => n + (textOf(m).match(/Here is what Weather/g)?.length ?? 0), 0)

// The SDK logs the dropped stream with console.error: kept off the output.
beforeEach(() => {
  vi.spyOn(console, "error").mockImplementation(() => undefined)
})
afterEach(() => {
  vi.restoreAllMocks()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("useChat and a run that is gone", () => {
  it("a rejoin answered 404 (the run pruned while the network was down) ends the turn 'disconnected', with one rejoin and no retry", async () => {
    const user = await server.newUser()
    const sessionId = await createSession(server, user)
    net.cut("POST", new RegExp(`^/messages/${sessionId}$`), afterFrame("message", 2))
    const rejoin = net.hold("GET", /^\/runs\//)
    const { result, statuses, unmount } = renderChat(server, user, sessionId)
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      const sent = result.current.sendMessage(QUESTION)

      // The cut: the SDK reconnects, and sends its first rejoin (kept from the server).
      await until(() => expect(result.current.run.reconnecting).toBe(true))
      const posted = net.exchanges.find((e) => e.method === "POST" && e.path === `/messages/${sessionId}`)!
      const runId = posted.runId!
      expect(runId).toMatch(/^run_/)
      await rejoin.arrived

      // Meanwhile the run goes on without its client, ends, and is pruned: the server answers 404.
      await server.release()
      const runPath = `/runs/${encodeURIComponent(runId)}?after=0`
      for (let tries = 0; (await server.statusOf(user.did, runPath)) !== 404; tries++) {
        expect(tries).toBeLessThan(200)
        await sleep(25)
      }

      // The client's timers go fake from here (still moving with real time), so the SDK's retry
      // delay can be jumped over below; a second rejoin would be seen arriving.
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true })
      let again = false
      void net.hold("GET", /^\/runs\//).arrived.then(() => {
        again = true
      })
      // The network is back: the rejoin reaches the server, which no longer knows the run.
      rejoin.letGo()
      await expect(sent).resolves.toBeUndefined()
      expect(result.current.run).toMatchObject({ ended: "disconnected", reconnecting: false, runId })
      expect(result.current.status).toBe("ready")
      expect(result.current.error).toBeNull()
      expect(result.current.sendMessageError).toBeFalsy()
      expect(statuses).not.toContain("error")

      // One rejoin, answered 404; none after it (the next would come 1 s after the first).
      const rejoins = () => net.exchanges.filter((e) => e.path.startsWith("/runs/"))
      expect(rejoins()).toEqual([
        expect.objectContaining({
          method: "GET",
          path: expect.stringMatching(new RegExp(`^/runs/${encodeURIComponent(runId)}\\?after=\\d+$`)),
          status: 404,
          body: expect.objectContaining({ statusCode: 404 })
        })
      ])
      // Past the SDK's retry (1 s after the first): every client timer due by then runs now, and a
      // rejoin it started would have reached the network (no I/O before fetch is called).
      await vi.advanceTimersByTimeAsync(1_500)
      await new Promise((resolve) => setImmediate(resolve))
      expect(again).toBe(false)
      expect(rejoins()).toHaveLength(1)
      expect(net.exchanges.some((e) => e.path === "/messages/abort")).toBe(false)

      // The run finished on the server: the history reloaded after the turn has the whole answer once.
      await until(() => {
        const settled = result.current.messages
        expect(settled.filter((m) => m.type === "human").map(textOf)).toEqual([QUESTION])
        expect(openings(settled)).toBe(1)
        expect(textOf(settled.at(-1)!)).toMatch(ANSWER)
      })
    } finally {
      vi.useRealTimers()
      unmount()
    }
  })
})
