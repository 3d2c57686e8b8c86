/**
 * One log line per request (method, path, status, time, a short user id, the run id), as text
 * or JSON (`LOG_FORMAT`), from the level `LOG_LEVEL` sets.
 */
import { describe, expect, it } from "vitest"
import { makeConsoleLogger } from "../src/Logger.js"
import { call, collect, start, stream, user } from "./helpers.js"

describe("request log", () => {
  it("logs each request once, a stream's at its end, with the user and the run", async () => {
    const lines: Array<string> = []
    const server = await start({ logger: makeConsoleLogger({ format: "json", write: (l) => lines.push(l) }) })
    try {
      const u = await user(server.app.oracleDid)
      await call(`${server.url}/health`)
      await call(`${server.url}/nowhere`, { headers: u.headers })
      await call(`${server.url}/sessions`, { headers: u.headers })
      const { response, events } = await stream(
        server.url,
        "logged",
        u.headers,
        "What's the weather in Berlin?"
      )
      await collect(events)
      const runId = response.headers.get("x-run-id")
      const requests = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((r) => /^(GET|POST) /.test(String(r.msg)))
      expect(requests.map((r) => String(r.msg).replace(/ [\d.]+ms$/, ""))).toEqual([
        "GET /health 200",
        "GET /nowhere 404",
        "GET /sessions 200",
        "POST /messages/logged 200"
      ])
      for (const r of requests) expect(r).toMatchObject({ level: "info", time: expect.any(String) })
      expect(requests[2]!.user).toBe(`…${u.did.slice(-8)}`)
      expect(requests[3]).toMatchObject({ user: `…${u.did.slice(-8)}`, runId })
      expect(requests[0]!.user).toBeUndefined()
    } finally {
      await server.stop()
    }
  })

  it("LOG_LEVEL drops what is below it; text lines read as `[level] message {fields}`", () => {
    const lines: Array<string> = []
    const logger = makeConsoleLogger({ level: "warn", write: (l) => lines.push(l) })
    logger.info("quiet")
    logger.warn("loud", { n: 1 })
    logger.error("louder")
    expect(lines).toEqual(['[warn] loud {"n":1}', "[error] louder"])
  })
})
