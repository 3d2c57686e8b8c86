/**
 * What the CreditLedger conformance suite runs against; its own module so that the suite and its
 * reservation cases both import it instead of each other.
 */
import type { Clock, CreditLedger } from "@plugboard/core"
import type { Effect, Scope } from "effect"

/** What a factory may return: the ledger alone, or with a way to open the same storage again. */
export interface CreditLedgerHarness {
  readonly ledger: CreditLedger.CreditLedgerService
  /** Another handle on the same storage (a second connection, a restarted process). */
  readonly reopen?: () => Effect.Effect<CreditLedger.CreditLedgerService, unknown, Scope.Scope>
  /** The test clock the ledger (and `reopen`'s) reads, so reservations can be made to expire. */
  readonly clock?: Clock.TestClockService
}
