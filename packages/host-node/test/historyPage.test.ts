/**
 * `GET /sessions/:id/messages?limit&before&after`: the paged history the QiForge client SDK 1.4
 * reads ("load earlier", then what is new after each turn), over a real server's thread.
 */
import { ScriptedChatModel } from "@plugboard/models"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, collect, newSession, type Running, start, stream, user } from "./helpers.js"

describe("paged history", () => {
  let running: Running
  beforeAll(async () => {
    // Every turn: one tool call, then an answer (three messages after the user's).
    running = await start({
      model: ScriptedChatModel.script(
        Array.from({ length: 4 }, (_, i) => [{ tool: "list_capabilities", args: {} }, `answer ${i}`]).flat()
      )
    })
  })
  afterAll(async () => {
    await running?.stop()
  })

  it("pages a thread by whole turns, older with prevCursor and newer with nextCursor", async () => {
    const u = await user(running.app.oracleDid)
    const session = await newSession(running.url, u.headers)
    const page = (query: string) =>
      call(`${running.url}/sessions/${session}/messages${query}`, { headers: u.headers })

    const empty = await page("?limit=2")
    expect(empty.status).toBe(200)
    expect(empty.body).toEqual({
      messages: [],
      prevCursor: null,
      nextCursor: null,
      hasOlder: false,
      hasNewer: false
    })

    for (const text of ["first", "second", "third"]) {
      const { events } = await stream(running.url, session, u.headers, text)
      expect((await collect(events)).at(-1)?._tag).toBe("done")
    }
    const all = (await call(`${running.url}/messages/${session}`, { headers: u.headers })).body.messages
    expect(all).toHaveLength(12)

    const newest = await page("?limit=1")
    expect(newest.status).toBe(200)
    expect(newest.body.messages.map((m: { type: string }) => m.type)).toEqual(["human", "ai", "tool", "ai"])
    expect(newest.body.messages[0].content).toBe("third")
    expect(newest.body).toMatchObject({ hasOlder: true, hasNewer: false })

    // "Load earlier" until the first message, then every message was seen once, in order.
    const pages = [newest.body]
    while (pages.at(-1).hasOlder) {
      pages.push((await page(`?limit=1&before=${encodeURIComponent(pages.at(-1).prevCursor)}`)).body)
    }
    expect(pages).toHaveLength(3)
    expect(pages.at(-1).prevCursor).toBeNull()
    expect(pages.reverse().flatMap((p) => p.messages)).toEqual(all)

    // After a fourth turn, what is new after the newest page's nextCursor is exactly that turn.
    const { events } = await stream(running.url, session, u.headers, "fourth")
    await collect(events)
    const tail = await page(`?limit=20&after=${encodeURIComponent(newest.body.nextCursor)}`)
    expect(tail.body.messages.map((m: { content: string }) => m.content)[0]).toBe("fourth")
    expect(tail.body.messages).toHaveLength(4)
    expect(tail.body.hasNewer).toBe(false)
    const none = await page(`?limit=20&after=${encodeURIComponent(tail.body.nextCursor)}`)
    expect(none.body).toMatchObject({ messages: [], nextCursor: tail.body.nextCursor, hasNewer: false })
  })

  it("answers a bad cursor or limit with a 400 that says what to do, and another user's session with a 404", async () => {
    const u = await user(running.app.oracleDid)
    const session = await newSession(running.url, u.headers)
    const bad = await call(`${running.url}/sessions/${session}/messages?before=abc`, { headers: u.headers })
    expect(bad.status).toBe(400)
    expect(bad.body.message).toMatch(/'before' is not a cursor of this session's history/)
    const limit = await call(`${running.url}/sessions/${session}/messages?limit=0`, { headers: u.headers })
    expect(limit.status).toBe(400)
    const other = await user(running.app.oracleDid)
    const theirs = await call(`${running.url}/sessions/${session}/messages`, { headers: other.headers })
    expect(theirs.status).toBe(404)
  })
})

describe("what the client SDK sends with a message", () => {
  it("model, metadata, timezone and attachments are accepted and kept on the user's message", async () => {
    const server = await start({ model: ScriptedChatModel.script(["Noted."]) })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const attachments = [{ filename: "a.pdf", mimetype: "application/pdf", mxcUri: "mxc://x/y", size: 3 }]
      const response = await fetch(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: JSON.stringify({
          message: "Read this.",
          stream: true,
          model: "scripted",
          metadata: { source: "test" },
          timezone: "Europe/Berlin",
          attachments,
          somethingNew: 1
        })
      })
      expect(response.status).toBe(200)
      await response.text()
      const page = await call(`${server.url}/sessions/${session}/messages`, { headers: u.headers })
      expect(page.body.messages[0]).toMatchObject({
        type: "human",
        content: "Read this.",
        attachments,
        metadata: { source: "test" }
      })
    } finally {
      await server.stop()
    }
  })
})
