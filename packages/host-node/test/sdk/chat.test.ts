// @vitest-environment jsdom
/**
 * A streamed turn through the real SDK's `useChat().sendMessage`: the scripted router loads the
 * weather plugin and calls it (two tool calls), then answers. What the hook shows while the turn
 * streams, and after it settles (when it replaces its view with the server's history).
 */
import type { IMessage } from "@ixo/oracles-client-sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type Oracle,
  quietAct,
  recordFetch,
  renderChat,
  renderSessions,
  type SdkUser,
  startOracle,
  textOf,
  toolCallParts,
  until
} from "./harness.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather"])
})
afterAll(async () => {
  await server?.stop()
})
const exchanges = recordFetch(() => server?.url)

const QUESTION = "What's the weather in Berlin?"
/** The scripted router's answer to QUESTION, from the weather plugin's offline fixture. */
const ANSWER = /^Here is what Weather \(get_current_weather\) returned: city: Berlin, .+\.$/

/** A session of `user`, created through `useOracleSessions`. */
const sessionOf = async (user: SdkUser): Promise<string> => {
  const { result, unmount } = renderSessions(server, user)
  try {
    await until(() => expect(result.current.isLoading).toBe(false))
    return (await result.current.createSession()).sessionId
  } finally {
    unmount()
  }
}

/** The AI messages whose text is the answer. */
const answers = (messages: ReadonlyArray<IMessage>) =>
  messages.filter((m) => m.type === "ai" && ANSWER.test(textOf(m)))

describe("useChat against the server", () => {
  it("streams a turn with two tool calls: the answer, one bubble per call with its output, run ended 'done'", async () => {
    const user = await server.newUser()
    const sessionId = await sessionOf(user)
    const { result, views, unmount } = renderChat(server, user, sessionId, { withUiComponents: true })
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      expect(result.current.messages).toEqual([])

      await result.current.sendMessage(QUESTION)
      expect(result.current.error).toBeNull()
      expect(result.current.sendMessageError).toBeFalsy()
      expect(result.current.run).toMatchObject({ ended: "done", reconnecting: false, resumed: 0 })
      const requestId = result.current.run.requestId
      expect(requestId).toEqual(expect.any(String))

      // While it streamed: the answer went into the AI message keyed by the request id...
      const streamed = views.find((view) => view.some((m) => m.id === requestId && ANSWER.test(textOf(m))))
      expect(streamed).toBeDefined()
      expect(answers(streamed!)).toHaveLength(1)
      // ...after one bubble per tool call, each updated in place from isRunning to done.
      const bubbles = toolCallParts(streamed!)
      expect(bubbles.map((b) => [b.name, b.status])).toEqual([
        ["load_capability", "done"],
        ["get_current_weather", "done"]
      ])
      expect(bubbles[1]!.args).toEqual({ city: "Berlin" })
      expect(JSON.parse(bubbles[1]!.output!)).toMatchObject({ city: "Berlin" })
      expect(new Set(bubbles.map((b) => b.messageId)).size).toBe(2)
      const running = views.flatMap((view) => toolCallParts(view)).filter((b) => b.status === "isRunning")
      expect(running.map((b) => b.name)).toEqual(
        expect.arrayContaining(["load_capability", "get_current_weather"])
      )

      // Once settled, the hook reloads the transcript from the server (whichever history route it
      // answers) and shows it: the question and the answer, once each, the answer last.
      const posted = exchanges.findIndex((e) => e.method === "POST" && e.path === `/messages/${sessionId}`)
      expect(exchanges[posted]?.status).toBe(200)
      await until(() =>
        expect(
          exchanges
            .slice(posted + 1)
            .some((e) => e.method === "GET" && e.path.includes("messages") && e.status === 200)
        ).toBe(true)
      )
      await until(() => {
        const settled = result.current.messages
        expect(settled.filter((m) => m.type === "human").map(textOf)).toEqual([QUESTION])
        expect(answers(settled)).toHaveLength(1)
        expect(ANSWER.test(textOf(settled.at(-1)!))).toBe(true)
        // The tool calls stay visible as bubbles, in order.
        expect(toolCallParts(settled).map((b) => b.toolName ?? b.name)).toEqual([
          "load_capability",
          "get_current_weather"
        ])
      })
      expect(result.current.isRealTimeConnected).toBe(true)
    } finally {
      unmount()
    }
  })

  it("without uiComponents the tool calls are not shown, the answer is", async () => {
    const user = await server.newUser()
    const sessionId = await sessionOf(user)
    const { result, views, unmount } = renderChat(server, user, sessionId)
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      await result.current.sendMessage(QUESTION)
      expect(result.current.run.ended).toBe("done")
      const requestId = result.current.run.requestId
      expect(views.some((view) => view.some((m) => m.id === requestId && ANSWER.test(textOf(m))))).toBe(true)
      expect(views.flatMap((view) => toolCallParts(view))).toEqual([])
      expect(views.flat().some((m) => m.id.includes("-ToolCall-"))).toBe(false)
    } finally {
      unmount()
    }
  })

  it("a second turn follows the first in the same session; a new hook on the session loads both", async () => {
    const user = await server.newUser()
    const sessionId = await sessionOf(user)
    const first = renderChat(server, user, sessionId, { withUiComponents: true })
    try {
      await until(() => expect(first.result.current.isLoading).toBe(false))
      await first.result.current.sendMessage(QUESTION)
      await first.result.current.sendMessage("And the weather in Paris?")
      expect(first.result.current.run.ended).toBe("done")
      await until(() =>
        expect(first.result.current.messages.filter((m) => m.type === "human").map(textOf)).toEqual([
          QUESTION,
          "And the weather in Paris?"
        ])
      )
    } finally {
      first.unmount()
    }
    // A page reload: a fresh provider and hook read the same transcript back.
    const reloaded = renderChat(server, user, sessionId, { withUiComponents: true })
    try {
      await until(() => expect(reloaded.result.current.messages.length).toBeGreaterThan(0))
      const messages = reloaded.result.current.messages
      expect(messages.filter((m) => m.type === "human").map(textOf)).toEqual([
        QUESTION,
        "And the weather in Paris?"
      ])
      expect(textOf(messages.at(-1)!)).toMatch(/city: Paris/)
      expect(reloaded.result.current.hasEarlier).toBe(false)
    } finally {
      reloaded.unmount()
    }
  })

  it("another user's session is refused: sendMessage rejects with the server's 404", async () => {
    const owner = await server.newUser()
    const sessionId = await sessionOf(owner)
    const intruder = await server.newUser()
    const { result, payments, unmount } = renderChat(server, intruder, sessionId)
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      await expect(result.current.sendMessage(QUESTION)).rejects.toMatchObject({ statusCode: 404 })
      await until(() => expect(result.current.status).toBe("error"))
      expect(payments).toEqual([])
    } finally {
      unmount()
    }
  })
})
