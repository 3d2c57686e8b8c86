/**
 * `plugboard credits` writes the ledger the server charges (issue 36, item 4): with `DATABASE_URL`
 * set, the real CLI tops up and reads Postgres's ledger, never a SQLite file beside it. Needs a
 * real PostgreSQL (`PLUGBOARD_TEST_POSTGRES_URL`, exported by scripts/ci-services.sh); skipped,
 * saying why, without one.
 */
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Clock, CreditLedger } from "@plugboard/core"
import { layerCreditLedger, layerDatabase, makeDatabase } from "@plugboard/postgres"
import { Effect, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { runCliWith } from "./runCli.js"

const URL = process.env.PLUGBOARD_TEST_POSTGRES_URL || undefined
if (URL === undefined) {
  console.warn(
    "[skip] PLUGBOARD_TEST_POSTGRES_URL is not set (source scripts/ci-services.sh): the credits CLI on Postgres is skipped"
  )
}

describe.skipIf(URL === undefined)("plugboard credits with DATABASE_URL (issue 36, item 4)", () => {
  const schema = `credits_cli_${randomBytes(4).toString("hex")}`
  const cwd = mkdtempSync(join(tmpdir(), "plugboard-credits-cli-"))
  const env = { DATABASE_URL: URL!, DATABASE_SCHEMA: schema }
  const did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
  afterAll(async () => {
    rmSync(cwd, { recursive: true, force: true })
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const db = yield* makeDatabase({ url: URL!, schema })
          yield* Effect.promise(() => db.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
        })
      )
    )
  })

  it("tops up and reads Postgres's ledger, the one the server charges; no SQLite ledger is written", async () => {
    const topUp = await runCliWith(cwd, env, "credits", "top-up", "5", "--did", did)
    expect(topUp.stderr).toBe("")
    expect([topUp.code, topUp.stdout]).toEqual([0, `${did}: 5 credits\n`])
    const balance = await runCliWith(cwd, env, "credits", "balance", "--did", did)
    expect(balance.stdout).toBe(`${did}: 5 credits\n`)
    // What the server reads: the Postgres ledger on that schema.
    const ledger = Layer.provide(layerCreditLedger, layerDatabase({ url: URL!, schema }))
    const stored = await Effect.runPromise(
      Effect.flatMap(CreditLedger.CreditLedger, (l) => l.balance(did)).pipe(
        Effect.provide(ledger),
        Effect.provide(Clock.layer)
      )
    )
    expect(stored).toBe(5)
    expect(existsSync(join(cwd, ".plugboard", "credits.sqlite"))).toBe(false)
  }, 60_000)

  it("an unreachable database is a clear error naming it, and nothing is written anywhere", async () => {
    const down = await runCliWith(
      cwd,
      { DATABASE_URL: "postgres://nobody:secret@127.0.0.1:1/none", DATABASE_SCHEMA: schema },
      "credits",
      "top-up",
      "5",
      "--did",
      did
    )
    expect(down.code).toBe(1)
    expect(down.stderr).toMatch(/^credits: /)
    expect(down.stderr).not.toContain("secret")
    expect(existsSync(join(cwd, ".plugboard", "credits.sqlite"))).toBe(false)
  }, 60_000)
})
