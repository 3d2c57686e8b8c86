/**
 * The CreditLedger conformance suite on Postgres (with `reopen`: a second pool on the same
 * schema, as a second host would have), each case on a fresh schema.
 */
import { Clock } from "@plugboard/core"
import { CreditLedgerConformance } from "@plugboard/core/testing"
import { Effect } from "effect"
import { afterAll, describe, it } from "vitest"
import { makeCreditLedger } from "../../src/postgres/index.js"
import { database, dropSchemas, freshSchema, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

if (POSTGRES_URL === undefined) {
  describe.skip(`Postgres CreditLedger: ${SKIP_REASON}`, () => it("skipped", () => {}))
} else {
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
}
