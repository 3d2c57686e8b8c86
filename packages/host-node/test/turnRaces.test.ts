/**
 * Turns that meet on one session (the turn service's lock and abort map): a second message while a turn runs, an abort of
 * a turn still waiting for its predecessor, and `DELETE /sessions/:id` while a turn runs. Each
 * ends with a history that keeps every turn that ran (or, after a delete, none of them) and
 * answers every tool call.
 */

import type { EventSink } from "@plugboard/core"
import { CANCELLED_CALL, MemorySaver } from "@plugboard/langgraph"
import { describe, expect, it } from "vitest"
import { RunningTurns } from "../src/RunningTurns.js"
import { call, collect, newSession, slowJob, start, stream, user, weather } from "./helpers.js"

const BERLIN = "What's the weather in Berlin?"

interface WireMessage {
  readonly type: string
  readonly content: string
  readonly toolCalls?: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly toolCallId?: string
}

const historyOf = async (url: string, sessionId: string, headers: Record<string, string>) => {
  const r = await call(`${url}/messages/${sessionId}`, { headers })
  expect(r.status).toBe(200)
  return r.body.messages as ReadonlyArray<WireMessage>
}

/** Every tool call of every AI message has a ToolMessage answering it. */
const allAnswered = (messages: ReadonlyArray<WireMessage>) => {
  const answered = new Set(messages.filter((m) => m.type === "tool").map((m) => m.toolCallId))
  return messages.every((m) => (m.toolCalls ?? []).every((c) => answered.has(c.id)))
}

const isRunning = (e: EventSink.AgentEvent, tool: string) =>
  e._tag === "tool_call" && e.toolName === tool && e.status === "isRunning"

/** A saver whose writes wait while it is held: a turn that is slow to save, for as long as a test says. */
class HeldSaver extends MemorySaver {
  private gate: Promise<void> | undefined
  private open: (() => void) | undefined
  hold() {
    this.gate = new Promise((resolve) => {
      this.open = resolve
    })
  }
  release() {
    this.gate = undefined
    this.open?.()
  }
  override async put(...args: Parameters<MemorySaver["put"]>) {
    if (this.gate !== undefined) await this.gate
    return super.put(...args)
  }
}

describe("a second message while a turn runs", () => {
  it("waits for the aborted turn to save: the history keeps it, its cancelled call, then the new exchange", async () => {
    const server = await start({ plugins: [weather, slowJob] })
    try {
      const u = await user(server.app.oracleDid)
      const hello = await call(`${server.url}/messages/race`, {
        method: "POST",
        headers: u.headers,
        body: { message: "hello" }
      })
      expect(hello.status).toBe(200)
      const { events } = await stream(server.url, "race", u.headers, "Run the slow job")
      const seen: Array<EventSink.AgentEvent> = []
      let second: Awaited<ReturnType<typeof call>> | undefined
      for await (const e of events) {
        seen.push(e)
        if (isRunning(e, "run_slow_job") && second === undefined) {
          second = await call(`${server.url}/messages/race`, {
            method: "POST",
            headers: u.headers,
            body: { message: BERLIN }
          })
        }
      }
      expect(second?.status).toBe(200)
      expect(second?.body.message.content).toContain("Berlin")
      expect(seen.at(-1)?._tag).toBe("done")

      const messages = await historyOf(server.url, "race", u.headers)
      expect(messages.slice(0, 2).map((m) => m.type)).toEqual(["human", "ai"])
      expect(messages[0]?.content).toBe("hello")
      const slow = messages.findIndex((m) => m.type === "human" && m.content === "Run the slow job")
      const weatherAsked = messages.findIndex((m) => m.type === "human" && m.content === BERLIN)
      expect(slow).toBe(2)
      expect(weatherAsked).toBeGreaterThan(slow)
      const call_ = messages[slow + 1]
      expect(call_?.type).toBe("ai")
      expect(call_?.toolCalls?.map((c) => c.name)).toEqual(["run_slow_job"])
      const answer = messages.find((m) => m.type === "tool" && m.toolCallId === call_?.toolCalls?.[0]?.id)
      expect(answer?.content).toBe(CANCELLED_CALL)
      expect(messages.indexOf(answer!)).toBeLessThan(weatherAsked)
      expect(messages.at(-1)?.type).toBe("ai")
      expect(messages.at(-1)?.content).toContain("Berlin")
      expect(allAnswered(messages)).toBe(true)
    } finally {
      await server.stop()
    }
  })

  it("a turn aborted while it waits for its predecessor ends at once with done and leaves no trace", async () => {
    const saver = new HeldSaver()
    const server = await start({ plugins: [weather, slowJob], hooks: { checkpointerForUser: () => saver } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const first = await stream(server.url, session, u.headers, "Run the slow job")
      const seen: Array<EventSink.AgentEvent> = []
      let queued: ReadonlyArray<EventSink.AgentEvent> | undefined
      for await (const e of first.events) {
        seen.push(e)
        if (isRunning(e, "run_slow_job") && queued === undefined) {
          // The second turn aborts the first, which cannot save while the saver is held; the second
          // waits (its response has no byte to send yet, so it is not awaited here).
          saver.hold()
          const second = stream(server.url, session, u.headers, "hello")
          // The abort reaches the second turn once it is registered (the first is aborted already).
          let aborted = false
          for (let i = 0; i < 100 && !aborted; i++) {
            const r = await call(`${server.url}/messages/abort`, {
              method: "POST",
              headers: u.headers,
              body: { sessionId: session }
            })
            aborted = r.body.success === true
            if (!aborted) await new Promise((r) => setTimeout(r, 5))
          }
          expect(aborted).toBe(true)
          expect((await second).response.status).toBe(200)
          // Ends while the first turn is still saving: it did not wait for it.
          queued = await collect((await second).events)
          saver.release()
        }
      }
      expect(queued?.map((e) => e._tag)).toEqual(["run", "done"])
      expect(queued?.at(-1)).toEqual({ _tag: "done", status: "aborted", partialText: "", reason: "user" })
      expect(seen.at(-1)?._tag).toBe("done")

      const messages = await historyOf(server.url, session, u.headers)
      expect(messages.filter((m) => m.type === "human").map((m) => m.content)).toEqual(["Run the slow job"])
      expect(allAnswered(messages)).toBe(true)
      // The session takes the next turn on top of the first one.
      const next = await call(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: { message: BERLIN }
      })
      expect(next.status).toBe(200)
      const after = await historyOf(server.url, session, u.headers)
      expect(after.filter((m) => m.type === "human").map((m) => m.content)).toEqual([
        "Run the slow job",
        BERLIN
      ])
      expect(allAnswered(after)).toBe(true)
    } finally {
      await server.stop()
    }
  })
})

describe("DELETE /sessions/:id while a turn runs", () => {
  it("stops the turn first: the next post to the client-chosen id starts an empty thread", async () => {
    const server = await start({ plugins: [weather, slowJob] })
    try {
      const u = await user(server.app.oracleDid)
      const { events } = await stream(
        server.url,
        "mine",
        u.headers,
        "My password is hunter2. Run the slow job"
      )
      const seen: Array<EventSink.AgentEvent> = []
      for await (const e of events) {
        seen.push(e)
        if (isRunning(e, "run_slow_job")) {
          const removed = await call(`${server.url}/sessions/mine`, { method: "DELETE", headers: u.headers })
          expect(removed).toMatchObject({ status: 200, body: { success: true, sessionId: "mine" } })
          // Nothing is left running to abort: the delete stopped it.
          const aborted = await call(`${server.url}/messages/abort`, {
            method: "POST",
            headers: u.headers,
            body: { sessionId: "mine" }
          })
          expect(aborted.body).toEqual({ success: false })
        }
      }
      expect(seen.at(-1)?._tag).toBe("done")
      const again = await call(`${server.url}/messages/mine`, {
        method: "POST",
        headers: u.headers,
        body: { message: "hello" }
      })
      expect(again.status).toBe(200)
      const messages = await historyOf(server.url, "mine", u.headers)
      expect(messages.map((m) => m.type)).toEqual(["human", "ai"])
      expect(messages[0]?.content).toBe("hello")
      expect(JSON.stringify(messages)).not.toContain("hunter2")
    } finally {
      await server.stop()
    }
  })

  it("a minted id: the next post is a 404 and the thread is gone from the saver", async () => {
    const savers = new Map<string, MemorySaver>()
    const saverOf = (did: string) => {
      let saver = savers.get(did)
      if (saver === undefined) {
        saver = new MemorySaver()
        savers.set(did, saver)
      }
      return saver
    }
    const server = await start({ plugins: [weather, slowJob], hooks: { checkpointerForUser: saverOf } })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const { events } = await stream(
        server.url,
        session,
        u.headers,
        "My password is hunter2. Run the slow job"
      )
      for await (const e of events) {
        if (isRunning(e, "run_slow_job")) {
          const removed = await call(`${server.url}/sessions/${session}`, {
            method: "DELETE",
            headers: u.headers
          })
          expect(removed.status).toBe(200)
        }
      }
      const again = await call(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: u.headers,
        body: { message: "hello" }
      })
      expect(again.status).toBe(404)
      expect(await saverOf(u.did).getTuple({ configurable: { thread_id: session } })).toBeUndefined()
      expect((await call(`${server.url}/messages/${session}`, { headers: u.headers })).status).toBe(404)
    } finally {
      await server.stop()
    }
  })
})

describe("RunningTurns (the abort map)", () => {
  const key = (did: string, sessionId: string) => `${did}\u0000${sessionId}`

  it("a newer turn aborts the session's running one as replaced, and no other session's", () => {
    const map = new RunningTurns(key)
    const a = map.enter("did:a", "s")!
    const other = map.enter("did:a", "t")!
    const b = map.enter("did:a", "s")!
    expect(map.abort("did:a", "s", "replaced", b)).toBe(true)
    expect(a.controller.signal.reason).toBe("replaced")
    expect(b.controller.signal.aborted).toBe(false)
    expect(other.controller.signal.aborted).toBe(false)
    for (const t of [a, b, other]) t.leave()
    expect(map.size).toBe(0)
  })

  it("stop aborts the session's turns and answers whether they ended within the bound", async () => {
    const map = new RunningTurns(key)
    const deaf = map.enter("did:a", "s")!
    expect(await map.stop("did:a", "s", "deleted", 20)).toBe(false)
    expect(deaf.controller.signal.reason).toBe("deleted")
    setImmediate(deaf.leave)
    expect(await map.stop("did:a", "s", "deleted", 2_000)).toBe(true)
    // Nothing running: nothing to wait for.
    expect(await map.stop("did:a", "nothing", "deleted", 1)).toBe(true)
  })

  it("on one key for a thread users share, another user's turn is refused while the first is in", () => {
    const map = new RunningTurns((_did, sessionId) => `thread\u0000${sessionId}`)
    const alice = map.enter("did:alice", "chat")!
    expect(map.enter("did:bob", "chat")).toBeUndefined()
    expect(map.heldByOther("did:bob", "chat")).toBe(true)
    // Bob's abort reaches nothing of Alice's.
    expect(map.abort("did:bob", "chat", "user")).toBe(false)
    expect(alice.controller.signal.aborted).toBe(false)
    alice.leave()
    expect(map.enter("did:bob", "chat")).toBeDefined()
  })
})
