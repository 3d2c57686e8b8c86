// @vitest-environment jsdom
/**
 * A stream dropped mid-turn, through the real SDK: the connection of `POST /messages/:id` is cut
 * while the answer streams (between two frames, or inside one), the run goes on on the server,
 * and `useChat` rejoins it with `GET /runs/:runId?after=<last frame it applied>`, following the
 * rest live. The answer ends up whole, once.
 *
 * The answer is paced and held after its second chunk (model.ts), so the cut always falls in the
 * middle of a running turn; the test lets it go on once the SDK has rejoined.
 */
import type { IMessage } from "@ixo/oracles-client-sdk"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { createSession, type Oracle, quietAct, renderChat, startOracle, textOf, until } from "./harness.js"
import { afterFrame, type CutAt, insideFrame, network } from "./network.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather"], { pace: { chunks: 8, delayMs: 40, holdAfter: 2 } })
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

/** The numbered frames an SSE text holds whole (up to their blank line). */
const wholeFrames = (bytes: Buffer) =>
  Array.from(bytes.toString("utf8").matchAll(/^id: (\d+)\nevent: (\S+)\ndata: (.*)\n\n/gm), (m) => ({
    id: Number(m[1]),
    event: m[2],
    data: JSON.parse(m[3]!) as { readonly content?: string }
  }))

/** What the SDK logged with `console.error` (it logs the dropped stream), kept off the output. */
let sdkErrors: Array<Array<unknown>> = []
beforeEach(() => {
  sdkErrors = []
  vi.spyOn(console, "error").mockImplementation((...args: Array<unknown>) => void sdkErrors.push(args))
})
afterEach(() => {
  vi.restoreAllMocks()
})

const dropAndRejoin = async (cutAt: CutAt) => {
  const user = await server.newUser()
  const sessionId = await createSession(server, user)
  // What the SDK received of the POST before the cut, to know the last frame it could apply.
  let kept: Buffer = Buffer.alloc(0)
  net.cut("POST", new RegExp(`^/messages/${sessionId}$`), (bytes) => {
    const offset = cutAt(bytes)
    if (offset !== undefined) kept = bytes.subarray(0, offset)
    return offset
  })
  const { result, views, unmount } = renderChat(server, user, sessionId)
  try {
    await until(() => expect(result.current.isLoading).toBe(false))
    const sent = result.current.sendMessage(QUESTION)

    // The cut: the SDK reconnects, and asks the run for what came after the last frame it saw.
    await until(() => expect(result.current.run.reconnecting).toBe(true))
    const posted = net.exchanges.find((e) => e.method === "POST" && e.path === `/messages/${sessionId}`)!
    // Read at once: the first rejoin comes 500 ms after the drop.
    const shownWhileDropped = textOf(result.current.messages.find((m) => m.id === posted.requestId)!)
    expect(posted.status).toBe(200)
    const runId = posted.runId!
    expect(runId).toMatch(/^run_/)
    // What the SDK applied: the frames that came whole (a frame cut in half never counts).
    const applied = wholeFrames(kept)
    const textBefore = applied
      .filter((f) => f.event === "message")
      .map((f) => f.data.content)
      .join("")
    expect(textBefore.length).toBeGreaterThan(0)
    const lastApplied = applied.at(-1)!.id
    expect(lastApplied).toBeGreaterThan(0)
    await until(() =>
      expect(net.exchanges.filter((e) => e.path.startsWith("/runs/"))).toEqual([
        expect.objectContaining({
          method: "GET",
          path: `/runs/${encodeURIComponent(runId)}?after=${lastApplied}`,
          status: 200,
          runId
        })
      ])
    )
    // While dropped, it showed the text of the frames that came whole, no more.
    expect(shownWhileDropped).toBe(textBefore)
    expect(result.current.status).toBe("streaming")
    expect(sdkErrors.some((args) => String(args[1]).includes("terminated"))).toBe(true)

    // The run went on without its client: let the held answer go on, the rejoin follows it live.
    await server.release()
    await sent
    expect(result.current.error).toBeNull()
    expect(result.current.run).toMatchObject({ ended: "done", reconnecting: false, runId })

    // The streamed answer: one AI message, keyed by the request id, the whole answer once.
    const streamed = views
      .flatMap((view) => view.filter((m) => m.id === posted.requestId))
      .map(textOf)
      .at(-1)!
    expect(streamed).toMatch(ANSWER)
    expect(streamed.startsWith(textBefore)).toBe(true)
    expect(streamed.length).toBeGreaterThan(textBefore.length)
    // No view ever showed the answer twice.
    expect(Math.max(...views.map(openings))).toBe(1)

    // It is the answer the server kept, and the history shown after the turn has it once.
    await until(() => {
      const settled = result.current.messages
      expect(settled.filter((m) => m.type === "human").map(textOf)).toEqual([QUESTION])
      expect(openings(settled)).toBe(1)
      expect(textOf(settled.at(-1)!)).toBe(streamed)
    })
    // Nothing asked the server to stop the run.
    expect(net.exchanges.some((e) => e.path === "/messages/abort")).toBe(false)
  } finally {
    unmount()
  }
}

describe("useChat rejoins a dropped stream", () => {
  it("cut between two frames (after the second answer chunk): rejoined after that frame, the answer whole and once", async () => {
    await dropAndRejoin(afterFrame("message", 2))
  })

  it("cut inside a frame (the second answer chunk half sent): the half frame is dropped, replayed, and shown once", async () => {
    await dropAndRejoin(insideFrame("message", 2, 8))
  })
})
