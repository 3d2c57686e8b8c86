/**
 * Postgres without Redis (docs/deployment.md): `DATABASE_URL` alone serves, on the
 * shared database, and warns at boot that it is for one host at a time. What two hosts on both
 * engines do is `manyHosts.serve.test.ts` (two `plugboard serve` processes). Skipped, with the
 * reason, when the engines are not running.
 */

import { Clock } from "@plugboard/core"
import { makeDatabase, makeSessionStore } from "@plugboard/postgres"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { collect, newSession, recordingLogger, start, stream, user, weather } from "./helpers.js"
import { ENGINES, POSTGRES_URL, SKIP_REASON, sharedEngines } from "./manyHostsHelpers.js"

describe.skipIf(!ENGINES)(`one host on Postgres${ENGINES ? "" : `: ${SKIP_REASON}`}`, () => {
  const engines = sharedEngines("many_hosts")
  afterAll(() => engines.drop())

  it("DATABASE_URL without REDIS_URL serves, and warns that it is for one host at a time", async () => {
    const { records, logger } = recordingLogger()
    const single = await start({
      plugins: [weather],
      logger,
      env: { ...engines.env, REDIS_URL: undefined, REDIS_PREFIX: undefined }
    })
    try {
      expect(records.filter((r) => r.level === "warn").map((r) => r.message)).toContainEqual(
        expect.stringContaining("DATABASE_URL without REDIS_URL serves from one host")
      )
      const u = await user(single.app.oracleDid)
      const session = await newSession(single.url, u.headers)
      const turn = await collect(
        (await stream(single.url, session, u.headers, "What's the weather in Oslo?")).events
      )
      expect(turn.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      // The session is in the shared database.
      const listed = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const db = yield* makeDatabase({ url: POSTGRES_URL!, schema: engines.schema })
            return yield* (yield* makeSessionStore(db)).list(u.did)
          })
        ).pipe(Effect.provide(Clock.layer))
      )
      expect(listed.sessions.map((s) => s.sessionId)).toEqual([session])
    } finally {
      await single.stop()
    }
  }, 60_000)
})
