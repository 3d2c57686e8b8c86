/**
 * What the console labels, as the server says it (issue 36, item 20): a failed tool call's
 * `done` event and its stored ToolMessage carry `isError`, and a session still titled "New chat"
 * takes its title from the first message posted to it.
 */
import { SessionStore } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { flaky } from "./fixtures/flaky.js"
import { call, collect, newSession, start, stream, user } from "./helpers.js"

type ToolEvent = { _tag: string; toolName?: string; status?: string; isError?: boolean }

describe("issue 36 item 20: a failed tool call is marked failed on the wire and in the history", () => {
  it("the done event and the stored tool message carry isError; a success carries none", async () => {
    const server = await start({
      plugins: [flaky],
      model: ScriptedChatModel.script([
        [{ tool: "reports_failure" }, { tool: "throws" }, { tool: "works" }, { tool: "not_a_tool" }],
        "Done."
      ])
    })
    try {
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const events = (await collect(
        (
          await stream(server.url, session, u.headers, "Try them")
        ).events
      )) as Array<ToolEvent>
      const done = Object.fromEntries(
        events
          .filter((e) => e._tag === "tool_call" && e.status === "done")
          .map((e) => [e.toolName, e.isError] as const)
      )
      expect(done).toEqual({ reports_failure: true, throws: true, works: undefined, not_a_tool: true })
      // isRunning events say nothing about failure.
      expect(events.filter((e) => e.status === "isRunning").every((e) => e.isError === undefined)).toBe(true)
      const history = await call(`${server.url}/messages/${session}`, { headers: u.headers })
      const tools = (history.body.messages as Array<{ type: string; name?: string; isError?: boolean }>)
        .filter((m) => m.type === "tool")
        .map((m) => [m.name, m.isError] as const)
      expect(Object.fromEntries(tools)).toEqual(done)
    } finally {
      await server.stop()
    }
  })
})

describe("issue 36 item 20: a session is titled from its first message", () => {
  it("a session created as New chat, and one created on first contact, take the first message's title", async () => {
    const server = await start({ model: ScriptedChatModel.script(["One.", "Two.", "Three."]) })
    try {
      const u = await user(server.app.oracleDid)
      const created = await newSession(server.url, u.headers)
      const long = "Please convert twenty euros into dollars and then tell me what that buys in Berlin today"
      await collect((await stream(server.url, created, u.headers, long)).events)
      // A second message leaves the title as the first one made it.
      await collect((await stream(server.url, created, u.headers, "And in Paris?")).events)
      await collect(
        (await stream(server.url, "my-own-id", u.headers, "What's the weather in Berlin?")).events
      )
      const list = await call(`${server.url}/sessions`, { headers: u.headers })
      const titles = Object.fromEntries(
        (list.body.sessions as Array<{ sessionId: string; title: string }>).map((s) => [s.sessionId, s.title])
      )
      expect(titles).toEqual({
        [created]: SessionStore.titleFrom(long),
        "my-own-id": "What's the weather in Berlin?"
      })
      expect(titles[created]).toBe("Please convert twenty euros into dollars and then tell me…")
    } finally {
      await server.stop()
    }
  })

  it("a title the client gave is kept", async () => {
    const server = await start({ model: ScriptedChatModel.script(["One."]) })
    try {
      const u = await user(server.app.oracleDid)
      const created = await call(`${server.url}/sessions`, {
        method: "POST",
        headers: u.headers,
        body: { title: "Trip planning" }
      })
      const id = created.body.sessionId as string
      await collect((await stream(server.url, id, u.headers, "Hello")).events)
      const list = await call(`${server.url}/sessions`, { headers: u.headers })
      expect(list.body.sessions.map((s: { title: string }) => s.title)).toEqual(["Trip planning"])
    } finally {
      await server.stop()
    }
  })
})
