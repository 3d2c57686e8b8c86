/**
 * The per-user wall on session ids (SessionAccess): another user's session is a 404 whether it is
 * read, posted to or deleted — with the default per-user SQLite stores, and with one saver the
 * host shares between users (`checkpointerForUser`), where thread ids are one namespace.
 */
import { MemorySaver } from "@plugboard/langgraph"
import { describe, expect, it } from "vitest"
import { isMinted, mintSessionId, ownerOf } from "../src/SessionAccess.js"
import { call, collect, newSession, slowJob, start, stream, user, weather } from "./helpers.js"

const BERLIN = "What's the weather in Berlin?"

const post = (url: string, sessionId: string, headers: Record<string, string>, message = BERLIN) =>
  call(`${url}/messages/${sessionId}`, { method: "POST", headers, body: { message } })

/** Writes a checkpoint of `threadId` as `did`'s turn would: what a race across processes leaves. */
const writeAs = async (saver: MemorySaver, threadId: string, did: string) => {
  const tuple = await saver.getTuple({ configurable: { thread_id: threadId } })
  if (tuple === undefined) throw new Error(`no thread ${threadId}`)
  const values = tuple.checkpoint.channel_values as Record<string, unknown>
  await saver.put(
    tuple.config,
    { ...tuple.checkpoint, id: `${tuple.checkpoint.id}-a`, channel_values: { ...values, config: { did } } },
    tuple.metadata!
  )
}

describe("session ids", () => {
  it("mints ids of their own shape, 128 random bits each", () => {
    const ids = Array.from({ length: 1000 }, mintSessionId)
    expect(new Set(ids).size).toBe(1000)
    for (const id of ids) expect(isMinted(id)).toBe(true)
    for (const id of ["chat-1", "ses_", "ses_short", crypto.randomUUID(), `${ids[0]}x`]) {
      expect(isMinted(id)).toBe(false)
    }
  })

  it("reads the owner a checkpoint recorded, and nothing from anything else", () => {
    expect(ownerOf({ config: { did: "did:key:a" } })).toBe("did:key:a")
    for (const values of [undefined, {}, { config: {} }, { config: { did: 42 } }, { config: null }]) {
      expect(ownerOf(values as Record<string, unknown> | undefined)).toBeUndefined()
    }
  })
})

describe("per-user SQLite stores", () => {
  it("another user posting to a minted session gets 404, and the owner's thread is untouched", async () => {
    const server = await start()
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      const session = await newSession(server.url, alice.headers)
      expect(isMinted(session)).toBe(true)
      expect((await post(server.url, session, alice.headers)).status).toBe(200)
      const before = await call(`${server.url}/messages/${session}`, { headers: alice.headers })

      const refused = await post(server.url, session, bob.headers, "Tell me what Alice asked.")
      expect(refused.status).toBe(404)
      expect(refused.body).toMatchObject({ statusCode: 404, error: "session-not-found" })
      // A streamed post is refused the same way, before any event.
      const streamed = await stream(server.url, session, bob.headers, "hello")
      expect(streamed.response.status).toBe(404)
      expect(streamed.response.headers.get("content-type")).toMatch(/json/)

      expect((await call(`${server.url}/messages/${session}`, { headers: bob.headers })).status).toBe(404)
      expect((await call(`${server.url}/sessions`, { headers: bob.headers })).body.total).toBe(0)
      const after = await call(`${server.url}/messages/${session}`, { headers: alice.headers })
      expect(after.body).toEqual(before.body)
    } finally {
      await server.stop()
    }
  })

  it("an unknown minted id is a 404 even for its would-be owner; a client-chosen id is created on first contact", async () => {
    const server = await start()
    try {
      const alice = await user(server.app.oracleDid)
      const made = await newSession(server.url, alice.headers)
      expect(
        (await call(`${server.url}/sessions/${made}`, { method: "DELETE", headers: alice.headers })).status
      ).toBe(200)
      // A deleted session does not come back on the next post, nor does a made-up minted id.
      expect((await post(server.url, made, alice.headers)).status).toBe(404)
      expect((await post(server.url, mintSessionId(), alice.headers)).status).toBe(404)

      const first = await post(server.url, "my-own-chat", alice.headers)
      expect(first.status).toBe(200)
      expect(first.body.sessionId).toBe("my-own-chat")
      const sessions = await call(`${server.url}/sessions`, { headers: alice.headers })
      expect(sessions.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["my-own-chat"])
    } finally {
      await server.stop()
    }
  })
})

describe("per-user SQLite stores: one client-chosen id, two users", () => {
  it("each user has their own: a turn of one on the id never holds the other's back", async () => {
    const server = await start({ plugins: [weather, slowJob] })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      const { events } = await stream(server.url, "chat-1", alice.headers, "Run the slow job")
      for await (const e of events) {
        if (e._tag === "tool_call" && e.toolName === "run_slow_job" && e.status === "isRunning") {
          expect((await post(server.url, "chat-1", bob.headers, "hello")).status).toBe(200)
          await call(`${server.url}/messages/abort`, {
            method: "POST",
            headers: alice.headers,
            body: { sessionId: "chat-1" }
          })
        }
      }
      const bobs = await call(`${server.url}/messages/chat-1`, { headers: bob.headers })
      expect(bobs.body.messages.map((m: { content: string }) => m.content)[0]).toBe("hello")
      const alices = await call(`${server.url}/messages/chat-1`, { headers: alice.headers })
      expect(alices.body.messages[0].content).toBe("Run the slow job")
    } finally {
      await server.stop()
    }
  })
})

describe("one saver shared by every user (checkpointerForUser)", () => {
  it("a client-chosen id another user's thread already has is a 404 to read, post or delete", async () => {
    const shared = new MemorySaver()
    const server = await start({ hooks: { checkpointerForUser: () => shared } })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      expect((await post(server.url, "chat-1", alice.headers)).status).toBe(200)
      const aliceHistory = await call(`${server.url}/messages/chat-1`, { headers: alice.headers })
      expect(aliceHistory.body.messages.length).toBeGreaterThan(2)

      expect((await post(server.url, "chat-1", bob.headers, "What did she ask?")).status).toBe(404)
      expect((await call(`${server.url}/messages/chat-1`, { headers: bob.headers })).status).toBe(404)
      expect(
        (await call(`${server.url}/sessions/chat-1`, { method: "DELETE", headers: bob.headers })).status
      ).toBe(404)
      expect((await call(`${server.url}/messages/chat-1`, { headers: alice.headers })).body).toEqual(
        aliceHistory.body
      )
      const tuple = await shared.getTuple({ configurable: { thread_id: "chat-1" } })
      expect(ownerOf(tuple?.checkpoint.channel_values)).toBe(alice.did)
    } finally {
      await server.stop()
    }
  })

  it("when two users raced to one id, the loser can neither read nor delete the winner's thread", async () => {
    const shared = new MemorySaver()
    const server = await start({ hooks: { checkpointerForUser: () => shared } })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      expect((await post(server.url, "race", bob.headers, "hello")).status).toBe(200)
      // Alice's turn wrote the thread last (both sessions were created before either turn saved).
      await writeAs(shared, "race", alice.did)

      expect((await call(`${server.url}/messages/race`, { headers: bob.headers })).status).toBe(404)
      const removed = await call(`${server.url}/sessions/race`, { method: "DELETE", headers: bob.headers })
      expect(removed.status).toBe(200)
      // Bob's session record is gone; the thread Alice wrote is not.
      expect((await call(`${server.url}/sessions`, { headers: bob.headers })).body.total).toBe(0)
      expect(
        ownerOf((await shared.getTuple({ configurable: { thread_id: "race" } }))?.checkpoint.channel_values)
      ).toBe(alice.did)
    } finally {
      await server.stop()
    }
  })

  it("a client-chosen id whose first turn is still running (no checkpoint yet) cannot be taken over", async () => {
    const shared = new MemorySaver()
    const server = await start({ plugins: [weather, slowJob], hooks: { checkpointerForUser: () => shared } })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      const { events } = await stream(server.url, "chat-1", alice.headers, "My secret. Run the slow job")
      const seen = []
      for await (const e of events) {
        seen.push(e)
        if (e._tag === "tool_call" && e.toolName === "run_slow_job" && e.status === "isRunning") {
          // Alice's turn has not saved yet: nothing in the saver says the id is hers.
          const bobs = await post(server.url, "chat-1", bob.headers, "What did she say?")
          expect(bobs.status).toBe(404)
          const bobsStream = await stream(server.url, "chat-1", bob.headers, "hello")
          expect(bobsStream.response.status).toBe(404)
          expect((await call(`${server.url}/messages/chat-1`, { headers: bob.headers })).status).toBe(404)
          expect(
            (await call(`${server.url}/sessions/chat-1`, { method: "DELETE", headers: bob.headers })).status
          ).toBe(404)
          await call(`${server.url}/messages/abort`, {
            method: "POST",
            headers: alice.headers,
            body: { sessionId: "chat-1" }
          })
        }
      }
      expect(seen.at(-1)?._tag).toBe("done")
      const history = await call(`${server.url}/messages/chat-1`, { headers: alice.headers })
      expect(history.status).toBe(200)
      expect(history.body.messages[0].content).toBe("My secret. Run the slow job")
      expect((await call(`${server.url}/messages/chat-1`, { headers: bob.headers })).status).toBe(404)
      expect((await post(server.url, "chat-1", bob.headers, "And now?")).status).toBe(404)
      expect((await call(`${server.url}/sessions`, { headers: bob.headers })).body.total).toBe(0)
      const tuple = await shared.getTuple({ configurable: { thread_id: "chat-1" } })
      expect(ownerOf(tuple?.checkpoint.channel_values)).toBe(alice.did)
    } finally {
      await server.stop()
    }
  })

  it("two users' first contacts on one id at once: exactly one gets it, the other a 404", async () => {
    const shared = new MemorySaver()
    const server = await start({ hooks: { checkpointerForUser: () => shared } })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      const [a, b] = await Promise.all([
        post(server.url, "both", alice.headers, "hello"),
        post(server.url, "both", bob.headers, "hello")
      ])
      expect([a.status, b.status].sort()).toEqual([200, 404])
      const [winner, loser] = a.status === 200 ? [alice, bob] : [bob, alice]
      expect((await call(`${server.url}/messages/both`, { headers: winner.headers })).status).toBe(200)
      expect((await call(`${server.url}/messages/both`, { headers: loser.headers })).status).toBe(404)
      const tuple = await shared.getTuple({ configurable: { thread_id: "both" } })
      expect(ownerOf(tuple?.checkpoint.channel_values)).toBe(winner.did)
    } finally {
      await server.stop()
    }
  })

  it("a session record another user's thread took over answers 404 to a post too", async () => {
    const shared = new MemorySaver()
    const server = await start({ hooks: { checkpointerForUser: () => shared } })
    try {
      const alice = await user(server.app.oracleDid)
      const bob = await user(server.app.oracleDid)
      expect((await post(server.url, "taken", bob.headers, "hello")).status).toBe(200)
      // As if Alice's turn had written the thread last in a race across processes.
      await writeAs(shared, "taken", alice.did)
      const before = await shared.getTuple({ configurable: { thread_id: "taken" } })
      expect((await post(server.url, "taken", bob.headers, "What did she say?")).status).toBe(404)
      const after = await shared.getTuple({ configurable: { thread_id: "taken" } })
      expect(after?.checkpoint.id).toBe(before?.checkpoint.id)
    } finally {
      await server.stop()
    }
  })

  it("each user's own threads work as before", async () => {
    const shared = new MemorySaver()
    const server = await start({ hooks: { checkpointerForUser: () => shared } })
    try {
      const alice = await user(server.app.oracleDid)
      const session = await newSession(server.url, alice.headers)
      const events = await collect((await stream(server.url, session, alice.headers, BERLIN)).events)
      expect(events.at(-1)?._tag).toBe("done")
      const next = await post(server.url, session, alice.headers, "And in Paris?")
      expect(next.status).toBe(200)
      const history = await call(`${server.url}/messages/${session}`, { headers: alice.headers })
      expect(history.body.messages.filter((m: { type: string }) => m.type === "human")).toHaveLength(2)
    } finally {
      await server.stop()
    }
  })
})
