/**
 * Shared by the many-hosts suites (docs/deployment.md): where the shared engines are
 * (`PLUGBOARD_TEST_POSTGRES_URL`, `PLUGBOARD_TEST_REDIS_URL`, exported by scripts/ci-services.sh),
 * the environment of hosts sharing them under a schema and a key prefix of their own (one per
 * test file, so files run in parallel), and the cleanup that drops both.
 */
import { randomBytes } from "node:crypto"
import { makeDatabase } from "@plugboard/postgres"
import { makeConnection } from "@plugboard/redis"
import { Effect } from "effect"

/** The engines' URLs, or undefined when the suites should skip. */
export const POSTGRES_URL: string | undefined = process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined
export const REDIS_URL: string | undefined = process.env.PLUGBOARD_TEST_REDIS_URL || undefined

/** Why the suites skip without them. */
export const SKIP_REASON =
  "PLUGBOARD_TEST_POSTGRES_URL or PLUGBOARD_TEST_REDIS_URL is not set (source scripts/ci-services.sh to start PostgreSQL and Redis)"

/** Whether both engines are there. */
export const ENGINES = POSTGRES_URL !== undefined && REDIS_URL !== undefined

/** A schema and a key prefix no other file uses, and the environment that points a host at them. */
export const sharedEngines = (name: string) => {
  const tag = `${name}_${process.pid}_${randomBytes(4).toString("hex")}`
  const schema = tag.toLowerCase()
  const prefix = `test:${tag}:`
  return {
    schema,
    prefix,
    env: {
      DATABASE_URL: POSTGRES_URL!,
      DATABASE_SCHEMA: schema,
      DATABASE_POOL_MAX: "4",
      REDIS_URL: REDIS_URL!,
      REDIS_PREFIX: prefix
    },
    /** Drops the schema and deletes the keys. */
    drop: async () => {
      if (!ENGINES) return
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const db = yield* makeDatabase({ url: POSTGRES_URL!, schema })
            yield* Effect.promise(() => db.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
            const redis = yield* makeConnection({ url: REDIS_URL!, prefix })
            const keys = yield* redis.run("keys", (c) => c.keys(`${prefix}*`))
            if (keys.length > 0) yield* redis.run("del", (c) => c.del(...keys))
          })
        )
      )
    }
  }
}
