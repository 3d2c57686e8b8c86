/**
 * Shared by the Postgres suites: where the server is (`PLUGBOARD_TEST_POSTGRES_URL`, exported by
 * scripts/ci-services.sh), and a fresh schema per store under test, named after the test file's
 * process, so files run in parallel and every conformance case starts empty. `dropSchemas`
 * (in `afterAll`) removes what the file created.
 */
import { randomBytes } from "node:crypto"
import { Effect, Layer } from "effect"
import pg from "pg"
import { layerDatabase, makeDatabase, type PgDatabase } from "../src/index.js"

/** The test server's URL, or undefined when the suites should skip. */
export const POSTGRES_URL: string | undefined = process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined

/** Why the suites skip when there is no server. */
export const SKIP_REASON =
  "PLUGBOARD_TEST_POSTGRES_URL is not set (source scripts/ci-services.sh to start PostgreSQL)"

/** A fresh lower-case identifier (a schema name): `prefix_<pid>_<random>`. */
export const uniqueName = (prefix: string): string =>
  `${prefix}_${process.pid}_${randomBytes(6).toString("hex")}`

const created: Array<string> = []

/** A schema name no other test uses, remembered for `dropSchemas`. */
export const freshSchema = (prefix = "t"): string => {
  const name = uniqueName(prefix)
  created.push(name)
  return name
}

/** A database layer on a fresh schema (or on `schema`, for a second handle on the same one). */
export const databaseLayer = (schema = freshSchema()): Layer.Layer<PgDatabase> =>
  Layer.orDie(layerDatabase({ url: POSTGRES_URL!, schema, maxConnections: 8 }))

/** A scoped database handle on a fresh schema (or on `schema`). */
export const database = (schema = freshSchema()) =>
  Effect.orDie(makeDatabase({ url: POSTGRES_URL!, schema, maxConnections: 8 }))

/** Drops every schema this file created. */
export const dropSchemas = async (): Promise<void> => {
  if (POSTGRES_URL === undefined || created.length === 0) return
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    for (const name of created.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`)
  } finally {
    await client.end()
  }
}
