// @vitest-environment jsdom
/**
 * A page reload during a run, through the real SDK: the page that sent the turn goes away in the
 * middle of the answer (its hook unmounted, its connections gone, no abort asked), and a fresh
 * `useChat` on the session (the reloaded page) finds the run with `GET /sessions/:id/run`, joins
 * it from its start with `GET /runs/:runId?after=0`, and ends showing the whole answer once.
 *
 * Each page talks through a `baseUrl` of its own (network.ts `page`), so the old page can be taken
 * off the network while the new one talks. The answer is held after its second chunk (model.ts)
 * until the new page has joined.
 */
import type { IMessage } from "@ixo/oracles-client-sdk"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { createSession, type Oracle, quietAct, renderChat, startOracle, textOf, until } from "./harness.js"
import { network } from "./network.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather"], { pace: { chunks: 8, delayMs: 40, holdAfter: 2 } })
})
afterAll(async () => {
  await server?.stop()
})
const net = network(() => server?.url)
// The old page's dropped stream and failed requests are logged by the SDK: kept off the output.
beforeEach(() => {
  vi.spyOn(console, "error").mockImplementation(() => undefined)
  vi.spyOn(console, "warn").mockImplementation(() => undefined)
})
afterEach(() => {
  vi.restoreAllMocks()
})

const EARLIER = "What's the weather in Paris?"
const QUESTION = "What's the weather in Berlin?"
const ANSWER = /^Here is what Weather \(get_current_weather\) returned: city: Berlin, .+\.$/

/** How many times an answer's opening shows in a message list's AI messages. */
const openings = (messages: ReadonlyArray<IMessage>) =>
  messages
    .filter((m) => m.type === "ai")
    .reduce((n, m) => n + (textOf(m).match(/Here is what Weather/g)?.length ?? 0), 0)

const humans = (messages: ReadonlyArray<IMessage>) => messages.filter((m) => m.type === "human").map(textOf)

/** The text of the message `id` in `messages` ("" when absent). */
const textOfId = (messages: ReadonlyArray<IMessage>, id: string | null | undefined) => {
  const message = messages.find((m) => m.id === id)
  return message === undefined ? "" : textOf(message)
}

describe("useChat resumes a run after a page reload", () => {
  it("the reloaded page finds the running turn, joins it from frame 0, and shows the whole answer once", async () => {
    const user = await server.newUser()
    const sessionId = await createSession(server, user)

    // The first page has an earlier turn (its answer let through at once), then sends the turn
    // and shows the answer's first two chunks; then it is reloaded.
    const first = renderChat(server, user, sessionId, { baseUrl: net.page("first") })
    await until(() => expect(first.result.current.isLoading).toBe(false))
    await server.release()
    await first.result.current.sendMessage(EARLIER)
    expect(first.result.current.run.ended).toBe("done")
    const sent = first.result.current.sendMessage(QUESTION).catch(() => undefined)
    const posted = await until(() => {
      const post = net.exchanges.filter(
        (e) => e.page === "first" && e.method === "POST" && e.path === `/messages/${sessionId}`
      )[1]
      expect(post?.runId).toMatch(/^run_/)
      return post!
    })
    const runId = posted.runId!
    await until(() =>
      expect(textOfId(first.result.current.messages, posted.requestId)).toMatch(/^Here is what Weather/)
    )
    const shownBeforeReload = textOfId(first.result.current.messages, posted.requestId)
    first.unmount()
    net.takeAway("first")

    const second = renderChat(server, user, sessionId, { baseUrl: net.page("second") })
    try {
      // It loads the history, asks for the session's run, sees it running and joins it from 0.
      await until(() =>
        expect(net.exchanges.filter((e) => e.page === "second" && e.path.startsWith("/runs/"))).toEqual([
          expect.objectContaining({
            method: "GET",
            path: `/runs/${encodeURIComponent(runId)}?after=0`,
            status: 200,
            runId,
            requestId: posted.requestId
          })
        ])
      )
      const ofSecond = net.exchanges.filter((e) => e.page === "second")
      const lookup = ofSecond.find((e) => e.path === `/sessions/${sessionId}/run`)
      expect(lookup).toMatchObject({
        status: 200,
        body: { run: { runId, status: "running", requestId: posted.requestId } }
      })
      const history = ofSecond.find((e) => e.path.startsWith(`/sessions/${sessionId}/messages`))!
      expect(ofSecond.indexOf(history)).toBeLessThan(ofSecond.indexOf(lookup!))
      // The history served while the run goes on holds the earlier turn, and no part of the
      // running turn's answer (the replay brings it).
      const served = (history.body as { messages: Array<IMessage> }).messages
      expect(humans(served)).toEqual([EARLIER])
      expect(openings(served)).toBe(1)

      // The replay shows what the first page showed, once, in the AI message of the request id.
      await until(() =>
        expect(textOfId(second.result.current.messages, posted.requestId)).toBe(shownBeforeReload)
      )
      expect(second.result.current.status).toBe("streaming")
      expect(second.result.current.run).toMatchObject({ runId, ended: null })

      // The answer goes on: the reloaded page follows it live to its end.
      await server.release()
      await until(() => expect(second.result.current.run.ended).toBe("done"))
      expect(second.result.current.run).toMatchObject({
        runId,
        requestId: posted.requestId,
        reconnecting: false
      })
      const streamed = second.views.map((view) => textOfId(view, posted.requestId)).findLast((t) => t !== "")!
      expect(streamed).toMatch(ANSWER)
      expect(streamed.startsWith(shownBeforeReload)).toBe(true)
      // No view showed a text twice: the streamed answer holds one opening, every view at most the
      // earlier answer's and this one's, and no question twice.
      expect(
        Math.max(...second.views.map((view) => openings(view.filter((m) => m.id === posted.requestId))))
      ).toBe(1)
      expect(Math.max(...second.views.map(openings))).toBe(2)
      for (const view of second.views) expect(new Set(humans(view)).size).toBe(humans(view).length)

      // Settled: the history's tail after the run (`after=`) brings the turn; each text once.
      await until(() => {
        const settled = second.result.current.messages
        expect(second.result.current.status).toBe("ready")
        expect(humans(settled)).toEqual([EARLIER, QUESTION])
        expect(openings(settled)).toBe(2)
        expect(textOf(settled.at(-1)!)).toBe(streamed)
      })
      const tail = net.exchanges.find(
        (e) =>
          e.page === "second" &&
          e.path.startsWith(`/sessions/${sessionId}/messages?`) &&
          e.path.includes("after=")
      )
      expect(tail).toMatchObject({ status: 200 })
      expect(humans((tail!.body as { messages: Array<IMessage> }).messages)).toEqual([QUESTION])
    } finally {
      second.unmount()
    }

    // Nobody asked the server to stop the run; the old page's later requests never reached it.
    await sent
    expect(net.exchanges.some((e) => e.path === "/messages/abort")).toBe(false)
    expect(net.exchanges.filter((e) => e.page === "first" && e.status === 0).length).toBeGreaterThan(0)
  })
})
