/**
 * The shared engines' configuration (docs/deployment.md): `DATABASE_URL` (+ `DATABASE_SCHEMA`,
 * `DATABASE_POOL_MAX`), `REDIS_URL` (+ `REDIS_PREFIX`) and `TURN_LOCK_TTL_MS`. Every bad value is
 * one `[config-error]` line naming its variable, a password never shown; an engine that does not
 * answer at boot is a `[boot-error]` naming its variable; neither set is the embedded default;
 * the options of `createOracleApp` win over the environment. Needs no running engine.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_THREAD_LOCK_TTL_MS } from "@plugboard/langgraph"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import * as ServerConfig from "../src/Config.js"
import { createOracleApp, quietLogger } from "../src/index.js"
import { bootLines, call, weather } from "./helpers.js"

const problems = (env: Record<string, string>) => {
  const read = Effect.runSync(Effect.either(ServerConfig.fromEnv(env, "/tmp")))
  return Either.isLeft(read) ? read.left.lines : []
}

describe("shared engines: configuration", () => {
  it("neither variable set: the embedded default, and the turn lock's default lease", () => {
    const config = Effect.runSync(ServerConfig.fromEnv({}, "/tmp"))
    expect(config.database).toBeUndefined()
    expect(config.redis).toBeUndefined()
    expect(config.turnLockTtlMs).toBe(DEFAULT_THREAD_LOCK_TTL_MS)
    expect(ServerConfig.DEFAULT_TURN_LOCK_TTL_MS).toBe(DEFAULT_THREAD_LOCK_TTL_MS)
  })

  it("reads the URLs with their defaults, and every variable set", () => {
    const url = "postgres://app:pw@db.internal:5432/oracle"
    expect(
      Effect.runSync(ServerConfig.fromEnv({ DATABASE_URL: url, REDIS_URL: "redis://cache:6379" }))
    ).toMatchObject({
      database: { url, schema: "plugboard", poolMax: 10 },
      redis: { url: "redis://cache:6379", prefix: "plugboard:" }
    })
    expect(
      Effect.runSync(
        ServerConfig.fromEnv({
          DATABASE_URL: url.replace("postgres:", "postgresql:"),
          DATABASE_SCHEMA: "tenant_7",
          DATABASE_POOL_MAX: "32",
          REDIS_URL: "rediss://:pw@cache:6380/2",
          REDIS_PREFIX: "oracle-a:",
          TURN_LOCK_TTL_MS: "15000"
        })
      )
    ).toMatchObject({
      database: { schema: "tenant_7", poolMax: 32 },
      redis: { url: "rediss://:pw@cache:6380/2", prefix: "oracle-a:" },
      turnLockTtlMs: 15000
    })
  })

  it("every bad value is one [config-error] naming its variable, its password hidden", () => {
    const lines = problems({
      DATABASE_URL: "mysql://app:hunter2@db/oracle",
      DATABASE_SCHEMA: "Tenant-7",
      DATABASE_POOL_MAX: "1",
      REDIS_URL: "http://:s3cret@cache:6379",
      REDIS_PREFIX: "has space",
      TURN_LOCK_TTL_MS: "5"
    })
    expect(lines).toHaveLength(6)
    for (const name of [
      "DATABASE_URL",
      "DATABASE_SCHEMA",
      "DATABASE_POOL_MAX",
      "REDIS_URL",
      "REDIS_PREFIX",
      "TURN_LOCK_TTL_MS"
    ]) {
      expect(lines.filter((l) => l.startsWith(`[config-error] ${name} `))).toHaveLength(1)
    }
    expect(lines.join("\n")).not.toMatch(/hunter2|s3cret/)
    expect(lines.find((l) => l.includes("DATABASE_URL"))).toContain("mysql://app:***@db/oracle")
    // A URL that does not parse still hides what may be a password.
    const garbled = problems({ DATABASE_URL: "postgres://app:hunter2@[bad" })
    expect(garbled).toHaveLength(1)
    expect(garbled[0]).not.toContain("hunter2")
  })

  it("a schema, pool size or prefix without its URL is a mistake worth a line", () => {
    expect(problems({ DATABASE_SCHEMA: "tenant_7", DATABASE_POOL_MAX: "4" })).toEqual([
      "[config-error] DATABASE_SCHEMA, DATABASE_POOL_MAX set without DATABASE_URL: set DATABASE_URL too (or unset them)."
    ])
    expect(problems({ REDIS_PREFIX: "x:" })).toEqual([
      "[config-error] REDIS_PREFIX set without REDIS_URL: set REDIS_URL too (or unset it)."
    ])
  })
})

describe("shared engines: boot", () => {
  it("a Postgres that does not answer is a [boot-error] naming DATABASE_URL, its password hidden", async () => {
    const lines = await bootLines([weather], { DATABASE_URL: "postgres://app:hunter2@127.0.0.1:1/oracle" })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^\[boot-error\] DATABASE_URL: .*postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/oracle/)
    expect(lines[0]).not.toContain("hunter2")
  }, 20_000)

  it("a Redis that does not answer is a [boot-error] naming REDIS_URL, its password hidden", async () => {
    const lines = await bootLines([weather], { REDIS_URL: "redis://:hunter2@127.0.0.1:1" })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^\[boot-error\] REDIS_URL: .*redis:\/\/:\*\*\*@127\.0\.0\.1:1/)
    expect(lines[0]).not.toContain("hunter2")
  }, 20_000)

  it("both dead: one line each, in one boot", async () => {
    const lines = await bootLines([weather], {
      DATABASE_URL: "postgres://app:hunter2@127.0.0.1:1/oracle",
      REDIS_URL: "redis://:hunter2@127.0.0.1:1"
    })
    expect(lines.map((l) => l.split(":")[0]).sort()).toEqual([
      "[boot-error] DATABASE_URL",
      "[boot-error] REDIS_URL"
    ])
    expect(lines.join("\n")).not.toContain("hunter2")
  }, 20_000)

  it("the options of createOracleApp win over the environment", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-engines-"))
    try {
      const app = await createOracleApp({
        plugins: [weather],
        logger: quietLogger,
        env: {
          PLUGBOARD_DATA_DIR: dir,
          DATABASE_URL: "postgres://app:pw@127.0.0.1:1/x",
          REDIS_URL: "redis://127.0.0.1:1"
        },
        config: { database: undefined, redis: undefined }
      })
      try {
        const { url } = await app.listen(0, "127.0.0.1")
        expect((await call(`${url}/health`)).status).toBe(200)
      } finally {
        await app.close(1_000)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
