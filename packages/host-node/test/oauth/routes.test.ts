/**
 * The connection routes' refusals (docs/http-api.md#connections), through the whole server and
 * with no browser: a host without OAuth servers, an OAuth server that cannot be reached, a
 * disconnect with nothing to forget, start links and callbacks this host did not make.
 */
import { randomBytes } from "node:crypto"
import { createServer } from "node:net"
import { describe, expect, it } from "vitest"
import { call, start, user } from "../helpers.js"

/** A port nothing listens on (taken, then released). */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

describe("connection routes", () => {
  it("a host without OAuth servers lists no connections and has nothing to connect", async () => {
    const running = await start()
    try {
      const u = await user(running.app.oracleDid)
      expect((await call(`${running.url}/connections`, { headers: u.headers })).body).toEqual({
        connections: []
      })
      const post = await call(`${running.url}/connections/notes`, { method: "POST", headers: u.headers })
      expect(post.status).toBe(404)
      expect(post.body.error).toBe("no-oauth-servers")
      expect((await call(`${running.url}/oauth/callback?code=x&state=y`)).status).toBe(404)
      expect((await call(`${running.url}/oauth/start?ticket=x`)).status).toBe(404)
    } finally {
      await running.stop()
    }
  })

  it("an unreachable server is a 502 saying so; a disconnect with nothing stored forgets nothing; foreign links and callbacks are refused", async () => {
    const port = await closedPort()
    const running = await start({
      plugins: [],
      mcpServers: { mcpServers: { down: { url: `http://127.0.0.1:${port}/mcp`, auth: "oauth" } } },
      env: { CONNECTIONS_KEY: randomBytes(32).toString("hex") }
    })
    try {
      const u = await user(running.app.oracleDid)
      const post = await call(`${running.url}/connections/down`, { method: "POST", headers: u.headers })
      expect(post.status).toBe(502)
      expect(post.body.error).toBe("oauth-unreachable")
      expect(post.body.message).toContain("'down'")
      expect((await call(`${running.url}/connections`, { headers: u.headers })).body).toEqual({
        connections: [{ server: "down", plugin: "down", connected: false }]
      })
      const removed = await call(`${running.url}/connections/down`, { method: "DELETE", headers: u.headers })
      expect(removed.status).toBe(200)
      expect(removed.body).toMatchObject({ server: "down", removed: false })
      const link = await call(`${running.url}/oauth/start?ticket=pbc1.not-ours`)
      expect(link.status).toBe(400)
      expect(link.body).toContain("This link cannot start a connection: this link was not made by this host")
      const denied = await call(`${running.url}/oauth/callback?error=access_denied&state=pbc1.not-ours`)
      expect(denied.status).toBe(400)
      expect(denied.headers.get("content-type")).toContain("text/html")
      expect(denied.body).toContain("Not connected")
    } finally {
      await running.stop()
    }
  })
})
