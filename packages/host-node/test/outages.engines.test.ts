/**
 * Storage and coordination outages, on a PostgreSQL cluster and a Redis server of the test's own,
 * stopped and started again mid-test:
 * - what a 503 tells the user (issue 36, item 11): what could not be done and which service is
 *   missing, never the driver's message (hosts, ports, users, database names); the detail goes to
 *   the server's log;
 * - Redis down (issue 36, item 12): the API stays up, each host limiting on its own, and the
 *   outage is logged; a turn, which needs the shared turn lock, is refused plainly
 *   (docs/spec/pipeline.md#when-redis-is-down).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, newSession, type Running, recordingLogger, start, user } from "./helpers.js"
import { installed, type OwnEngine, ownPostgres, ownRedis } from "./ownEngines.js"

const ready = installed.postgres && installed.redis
if (!ready) console.warn("[skip] PostgreSQL or Redis is not installed: the outage tests are skipped")

describe.skipIf(!ready)("engine outages", () => {
  let pg: OwnEngine
  let redis: OwnEngine
  let server: Running
  const log = recordingLogger()
  /** Everything a client must never read in an answer: the engines' hosts, ports, users, names. */
  let secrets: ReadonlyArray<string>

  beforeAll(async () => {
    ;[pg, redis] = await Promise.all([ownPostgres(), ownRedis()])
    const parts = (url: string) => {
      const u = new URL(url)
      return [
        u.host,
        u.port,
        decodeURIComponent(u.username),
        decodeURIComponent(u.password),
        u.pathname.slice(1)
      ]
    }
    secrets = [...parts(pg.url), ...parts(redis.url), "ECONNREFUSED"].filter((s) => s.length >= 4)
    server = await start({
      logger: log.logger,
      env: { DATABASE_URL: pg.url, DATABASE_SCHEMA: "outages", DATABASE_POOL_MAX: "4", REDIS_URL: redis.url }
    })
  }, 180_000)
  afterAll(async () => {
    await server?.stop()
    await Promise.all([pg?.remove(), redis?.remove()])
  }, 60_000)

  const leaks = (text: string) => secrets.filter((s) => text.includes(s))

  it("PostgreSQL down: the 503s name what could not be done, never a host, port, user or database (issue 36, item 11)", async () => {
    const alice = await user(server.app.oracleDid)
    const session = await newSession(server.url, alice.headers)
    await pg.stop()
    try {
      const answers = [
        await call(`${server.url}/sessions`, { headers: alice.headers }),
        await call(`${server.url}/sessions`, { method: "POST", headers: alice.headers, body: {} }),
        await call(`${server.url}/messages/${session}`, { headers: alice.headers }),
        await call(`${server.url}/messages/${session}`, {
          method: "POST",
          headers: alice.headers,
          body: { message: "hello" }
        })
      ]
      for (const answer of answers) {
        expect(answer.status, JSON.stringify(answer.body)).toBe(503)
        expect(answer.body.message).toMatch(/is unavailable right now\. Try again shortly\.$/)
        expect(leaks(JSON.stringify(answer.body)), JSON.stringify(answer.body)).toEqual([])
      }
      // The operator still learns why, from the log.
      const logged = log.records.filter((r) => r.fields?.detail !== undefined)
      expect(logged.length).toBeGreaterThanOrEqual(answers.length)
    } finally {
      await pg.start()
    }
    expect((await call(`${server.url}/sessions`, { headers: alice.headers })).status).toBe(200)
  }, 120_000)

  it("Redis down: reads and writes go on (each host limiting on its own, logged once), a turn is refused plainly (issue 36, item 12)", async () => {
    const alice = await user(server.app.oracleDid)
    const session = await newSession(server.url, alice.headers)
    const before = log.records.length
    await redis.stop()
    try {
      const listed = await call(`${server.url}/sessions`, { headers: alice.headers })
      expect(listed.status).toBe(200)
      expect(listed.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toContain(session)
      expect((await call(`${server.url}/messages/${session}`, { headers: alice.headers })).status).toBe(200)
      expect(
        (await call(`${server.url}/sessions`, { method: "POST", headers: alice.headers, body: {} })).status
      ).toBe(201)
      const outage = log.records
        .slice(before)
        .filter((r) => /rate limiter's Redis is unavailable/.test(r.message))
      expect(outage).toHaveLength(1)
      // A turn needs the session's lock, which lives on Redis: no turn runs without it.
      const turn = await call(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: alice.headers,
        body: { message: "What's the weather in Berlin?" }
      })
      expect(turn.status, JSON.stringify(turn.body)).toBe(503)
      expect(leaks(JSON.stringify(turn.body)), JSON.stringify(turn.body)).toEqual([])
    } finally {
      await redis.start()
    }
  }, 120_000)
})
