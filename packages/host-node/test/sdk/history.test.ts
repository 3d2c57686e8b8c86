// @vitest-environment jsdom
/**
 * Paged history through the real SDK: `useChat({ historyPageSize })` shows the newest turns of a
 * session first (`GET /sessions/:id/messages?limit=N`), `loadEarlier()` brings older pages
 * (`before=<prevCursor>`) until `hasEarlier` is false, and after a new turn the history's tail
 * (`after=<nextCursor>`) brings it. Every turn is shown once, in order.
 */
import type { IMessage } from "@ixo/oracles-client-sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createSession, type Oracle, quietAct, renderChat, startOracle, textOf, until } from "./harness.js"
import { network } from "./network.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather"])
})
afterAll(async () => {
  await server?.stop()
})
const net = network(() => server?.url)

const CITIES = ["Berlin", "Paris", "Tokyo", "Oslo", "Rome"]
const question = (city: string) => `What's the weather in ${city}?`

/** What a page of history answered. */
interface Page {
  readonly messages: Array<IMessage>
  readonly prevCursor: string | null
  readonly nextCursor: string | null
  readonly hasOlder: boolean
  readonly hasNewer: boolean
}

const humans = (messages: ReadonlyArray<IMessage>) => messages.filter((m) => m.type === "human").map(textOf)
/** The cities of the answers shown, in order. */
const answered = (messages: ReadonlyArray<IMessage>) =>
  messages.flatMap((m) => {
    const city =
      m.type === "ai" ? /^Here is what Weather .* returned: city: (\w+),/.exec(textOf(m))?.[1] : undefined
    return city === undefined ? [] : [city]
  })

describe("useChat pages the history", () => {
  it("shows the newest turns, loads earlier pages until the first turn, then appends a new turn from the tail", async () => {
    const user = await server.newUser()
    const sessionId = await createSession(server, user)
    const writer = renderChat(server, user, sessionId)
    try {
      await until(() => expect(writer.result.current.isLoading).toBe(false))
      for (const city of CITIES) {
        await writer.result.current.sendMessage(question(city))
        expect(writer.result.current.run.ended).toBe("done")
      }
      await until(() => expect(humans(writer.result.current.messages)).toEqual(CITIES.map(question)))
    } finally {
      writer.unmount()
    }

    // A fresh page, two turns a page.
    const messagesPath = `/sessions/${sessionId}/messages`
    const pages = () =>
      net.exchanges.filter((e) => e.page === "reader" && e.path.startsWith(`${messagesPath}?`))
    const reader = renderChat(server, user, sessionId, { historyPageSize: 2, baseUrl: net.page("reader") })
    try {
      const chat = () => reader.result.current
      await until(() => expect(humans(chat().messages)).toEqual(["Oslo", "Rome"].map(question)))
      expect(answered(chat().messages)).toEqual(["Oslo", "Rome"])
      expect(chat().hasEarlier).toBe(true)
      expect(pages().map((e) => e.path)).toEqual([`${messagesPath}?limit=2`])

      // Load earlier until there is nothing earlier: Paris and Tokyo, then Berlin alone.
      await chat().loadEarlier()
      await until(() =>
        expect(humans(chat().messages)).toEqual(["Paris", "Tokyo", "Oslo", "Rome"].map(question))
      )
      expect(chat().hasEarlier).toBe(true)
      await chat().loadEarlier()
      await until(() => expect(humans(chat().messages)).toEqual(CITIES.map(question)))
      await until(() => expect(chat().hasEarlier).toBe(false))
      expect(answered(chat().messages)).toEqual(CITIES)
      // Each earlier page was asked before the previous page's prevCursor; the first has none.
      const asked = pages()
      expect(asked.map((e) => e.status)).toEqual([200, 200, 200])
      const bodies = asked.map((e) => e.body as Page)
      expect(asked[1]!.path).toBe(
        `${messagesPath}?limit=2&before=${encodeURIComponent(bodies[0]!.prevCursor!)}`
      )
      expect(asked[2]!.path).toBe(
        `${messagesPath}?limit=2&before=${encodeURIComponent(bodies[1]!.prevCursor!)}`
      )
      expect(bodies.map((b) => humans(b.messages).length)).toEqual([2, 2, 1])
      expect(bodies[2]).toMatchObject({ hasOlder: false, prevCursor: null })
      // The pages together are the whole transcript, each message once, in order.
      const transcript = [...bodies].reverse().flatMap((b) => b.messages)
      expect(new Set(transcript.map((m) => m.id)).size).toBe(transcript.length)
      expect(humans(transcript)).toEqual(CITIES.map(question))
      const shownIds = chat().messages.map((m) => m.id)
      expect(new Set(shownIds).size).toBe(shownIds.length)
      expect(shownIds.filter((id) => transcript.some((m) => m.id === id))).toEqual(
        transcript.map((m) => m.id).filter((id) => shownIds.includes(id))
      )

      // A new turn: when it settles, the tail after the newest page's nextCursor brings it.
      await chat().sendMessage(question("Madrid"))
      expect(chat().run.ended).toBe("done")
      await until(() => expect(humans(chat().messages)).toEqual([...CITIES, "Madrid"].map(question)))
      expect(answered(chat().messages)).toEqual([...CITIES, "Madrid"])
      const tail = pages().slice(3)
      expect(tail[0]?.path).toBe(
        `${messagesPath}?limit=2&after=${encodeURIComponent(bodies[0]!.nextCursor!)}`
      )
      expect(tail[0]?.status).toBe(200)
      expect(humans((tail[0]!.body as Page).messages)).toEqual([question("Madrid")])
      // No full reload of the history happened: only the tail was asked.
      expect(tail.every((e) => e.path.includes("after="))).toBe(true)
      expect(chat().hasEarlier).toBe(false)
      const ids = chat().messages.map((m) => m.id)
      expect(new Set(ids).size).toBe(ids.length)
      // Each question and each answer once: the optimistic question gave way to the server's.
      expect(chat().messages.filter((m) => m.type === "human")).toHaveLength(6)
    } finally {
      reader.unmount()
    }
  })
})
