/**
 * The CreditLedger conformance suite on Postgres (with `reopen`: a second pool on the same
 * schema, as a second host would have), each case on a fresh schema.
 */
import { Clock } from "@plugboard/core"
import { CreditLedgerConformance } from "@plugboard/testing"
import { Effect } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { makeCreditLedger } from "../src/index.js"
import { MIGRATIONS } from "../src/internal/migrations.js"
import { ownerKey } from "../src/internal/sql.js"
import { database, dropSchemas, freshSchema, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(POSTGRES_URL === undefined)(
  POSTGRES_URL === undefined ? `Postgres CreditLedger: ${SKIP_REASON}` : "Postgres CreditLedger",
  () => {
    afterAll(dropSchemas)
    // Both handles read one test clock, so a reservation expires for both hosts at once.
    const open = (schema: string, clock: Clock.TestClockService) =>
      Effect.flatMap(database(schema), makeCreditLedger).pipe(Effect.provideService(Clock.Clock, clock))
    CreditLedgerConformance.run(
      "postgres",
      () => {
        const schema = freshSchema()
        return Effect.flatMap(Clock.makeTest(1_700_000_000_000), (clock) =>
          Effect.map(open(schema, clock), (ledger) => ({ ledger, reopen: () => open(schema, clock), clock }))
        )
      },
      { numRuns: 30 }
    )

    it("a schema at version 3 (before reservations) is migrated to the latest: balances kept, reservations work", async () => {
      const schema = freshSchema()
      const did = "did:key:z6MkAlice"
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 })
      try {
        // The schema as a plugboard of version 3 left it: migrations 1 to 3 and their records.
        await pool.query(`CREATE SCHEMA "${schema}"`)
        await pool.query(
          `CREATE TABLE "${schema}".schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
        )
        for (const m of MIGRATIONS.filter((m) => m.version <= 3)) {
          await pool.query(m.up(`"${schema}"`))
          await pool.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, $2)`, [
            m.version,
            m.name
          ])
        }
        await pool.query(`INSERT INTO "${schema}".credit_accounts (owner, balance) VALUES ($1, 7)`, [
          ownerKey(did)
        ])
        const clock = await Effect.runPromise(Clock.makeTest(1_700_000_000_000))
        const [balance, settled, available] = await Effect.runPromise(
          Effect.scoped(
            Effect.flatMap(open(schema, clock), (ledger) =>
              Effect.gen(function* () {
                const balance = yield* ledger.balance(did)
                const r = yield* ledger.reserve(did, 5, { ttlMs: 1000 })
                const settled = yield* ledger.settle(did, r.id, 2)
                return [balance, settled, yield* ledger.available(did)] as const
              })
            )
          )
        )
        expect(balance).toBe(7)
        expect(settled).toMatchObject({ charged: 2, released: 3, balance: 5 })
        expect(available).toBe(5)
        const versions = await pool.query<{ version: number }>(
          `SELECT version FROM "${schema}".schema_migrations ORDER BY version`
        )
        expect(versions.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version))
      } finally {
        await pool.end()
      }
    })
  }
)
