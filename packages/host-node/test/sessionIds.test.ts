/** Session ids as long as the session store allows reach the routes, percent-encoded or not. */
import { SessionStore } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { call, start, user } from "./helpers.js"

describe("long session ids", () => {
  it("every route takes an id of up to MAX_SESSION_ID_LENGTH characters; a longer one is a JSON 400", async () => {
    const server = await start()
    try {
      const alice = await user(server.app.oracleDid)
      const max = SessionStore.MAX_SESSION_ID_LENGTH
      // ASCII, and 4-byte UTF-8 characters (12 characters each once percent-encoded in the path).
      for (const id of ["a".repeat(max), "🌍".repeat(max / 2), `chat-${"x".repeat(150)}`]) {
        const path = `${server.url}/messages/${encodeURIComponent(id)}`
        const posted = await call(path, {
          method: "POST",
          headers: alice.headers,
          body: { message: "hello" }
        })
        expect(posted.status, id.slice(0, 20)).toBe(200)
        expect(posted.body.sessionId).toBe(id)
        const history = await call(path, { headers: alice.headers })
        expect(history.status).toBe(200)
        expect(history.body.messages.length).toBeGreaterThan(0)
        const removed = await call(`${server.url}/sessions/${encodeURIComponent(id)}`, {
          method: "DELETE",
          headers: alice.headers
        })
        expect(removed.status).toBe(200)
      }
      const tooLong = await call(`${server.url}/messages/${"a".repeat(max + 1)}`, {
        method: "POST",
        headers: alice.headers,
        body: { message: "hello" }
      })
      expect(tooLong.status).toBe(400)
      expect(tooLong.body).toMatchObject({ statusCode: 400 })
      expect(tooLong.body.message).toMatch(/sessionId must be 1\.\.256 characters/)
    } finally {
      await server.stop()
    }
  })
})
