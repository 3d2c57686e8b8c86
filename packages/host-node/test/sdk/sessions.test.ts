// @vitest-environment jsdom
/**
 * Sessions through the real SDK's `useOracleSessions`: list, create, delete, paging by `total`,
 * and the tokens it sends (one invocation reused across requests, as the SDK caches it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Oracle, quietAct, recordFetch, renderSessions, startOracle, until } from "./harness.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle()
})
afterAll(async () => {
  await server?.stop()
})
const exchanges = recordFetch(() => server?.url)

describe("useOracleSessions against the server", () => {
  it("lists (empty), creates, lists again, deletes", async () => {
    const user = await server.newUser()
    const { result, unmount } = renderSessions(server, user)
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      expect(result.current.error).toBeNull()
      expect(result.current.sessions).toEqual([])
      expect(result.current.total).toBe(0)

      const created = await result.current.createSession()
      expect(created).toMatchObject({ sessionId: expect.any(String), createdAt: expect.any(String) })
      await until(() => expect(result.current.sessions.map((s) => s.sessionId)).toEqual([created.sessionId]))
      expect(result.current.total).toBe(1)

      const second = await result.current.createSession()
      await until(() => expect(result.current.sessions).toHaveLength(2))
      expect(result.current.sessions.map((s) => s.sessionId).sort()).toEqual(
        [created.sessionId, second.sessionId].sort()
      )

      // deleteSession resolves only when the DELETE answers with a JSON body (a 204 would reject).
      await result.current.deleteSession(created.sessionId)
      await until(() => expect(result.current.sessions.map((s) => s.sessionId)).toEqual([second.sessionId]))
      expect(result.current.total).toBe(1)
      expect(result.current.isDeleteSessionError).toBe(false)

      expect(
        exchanges.map(
          (e) => `${e.method} ${e.path.replace(/\/sessions\/[^?]+/, "/sessions/:id")} ${e.status}`
        )
      ).toEqual([
        "GET /sessions?limit=20&offset=0 200",
        "POST /sessions 201",
        "GET /sessions?limit=20&offset=0 200",
        "POST /sessions 201",
        "GET /sessions?limit=20&offset=0 200",
        "DELETE /sessions/:id 200",
        "GET /sessions?limit=20&offset=0 200"
      ])
      // One invocation served all seven requests: the SDK caches it until 30 s before it expires.
      expect(user.minted.invocations).toBe(1)
    } finally {
      unmount()
    }
  })

  it("pages with limit/offset until `total` is reached", async () => {
    const user = await server.newUser()
    const { result, unmount } = renderSessions(server, user, 2)
    try {
      await until(() => expect(result.current.isLoading).toBe(false))
      for (let i = 0; i < 5; i++) await result.current.createSession()
      await until(() => expect(result.current.total).toBe(5))
      expect(result.current.sessions).toHaveLength(2)
      expect(result.current.hasNextPage).toBe(true)
      await result.current.fetchNextPage()
      await until(() => expect(result.current.sessions).toHaveLength(4))
      await result.current.fetchNextPage()
      await until(() => expect(result.current.sessions).toHaveLength(5))
      expect(result.current.hasNextPage).toBe(false)
      expect(new Set(result.current.sessions.map((s) => s.sessionId)).size).toBe(5)
      expect(exchanges.filter((e) => e.path.startsWith("/sessions?")).map((e) => e.path)).toContain(
        "/sessions?limit=2&offset=4"
      )
    } finally {
      unmount()
    }
  })

  it("one user never sees another user's sessions", async () => {
    const alice = await server.newUser()
    const bob = await server.newUser()
    const a = renderSessions(server, alice)
    const b = renderSessions(server, bob)
    try {
      await until(() => expect(a.result.current.isLoading).toBe(false))
      await until(() => expect(b.result.current.isLoading).toBe(false))
      const mine = await a.result.current.createSession()
      await until(() => expect(a.result.current.sessions.map((s) => s.sessionId)).toEqual([mine.sessionId]))
      await b.result.current.refetch()
      expect(b.result.current.sessions).toEqual([])
      // Bob deleting Alice's session is refused (a JSON 404 the SDK turns into a RequestError).
      await expect(b.result.current.deleteSession(mine.sessionId)).rejects.toMatchObject({ status: 404 })
      await a.result.current.refetch()
      expect(a.result.current.sessions.map((s) => s.sessionId)).toEqual([mine.sessionId])
    } finally {
      a.unmount()
      b.unmount()
    }
  })
})
