/**
 * Shared by the Redis suites: where the server is (`PLUGBOARD_TEST_REDIS_URL`, exported by
 * scripts/ci-services.sh), and a key prefix per store under test, named after the test file's
 * process, so files run in parallel and every conformance case starts with free keys.
 * `deleteKeys` (in `afterAll`) removes what the file wrote.
 */
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { Redis } from "ioredis"
import { makeConnection } from "../src/index.js"

/** The test server's URL, or undefined when the suites should skip. */
export const REDIS_URL: string | undefined = process.env.PLUGBOARD_TEST_REDIS_URL || undefined

/** Why the suites skip when there is no server. */
export const SKIP_REASON =
  "PLUGBOARD_TEST_REDIS_URL is not set (source scripts/ci-services.sh to start Redis)"

const filePrefix = `test:${process.pid}:${randomBytes(4).toString("hex")}:`

/** A key prefix no other test uses. */
export const freshPrefix = (): string => `${filePrefix}${randomBytes(6).toString("hex")}:`

/** A scoped connection under a fresh prefix (or under `prefix`, for a second host on the same keys). */
export const connection = (prefix = freshPrefix()) =>
  Effect.orDie(makeConnection({ url: REDIS_URL!, prefix }))

/** Deletes every key this file wrote. */
export const deleteKeys = async (): Promise<void> => {
  if (REDIS_URL === undefined) return
  const client = new Redis(REDIS_URL)
  try {
    let cursor = "0"
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", `${filePrefix}*`, "COUNT", 1000)
      if (keys.length > 0) await client.del(...keys)
      cursor = next
    } while (cursor !== "0")
  } finally {
    client.disconnect()
  }
}
