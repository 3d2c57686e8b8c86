/** `@plugboard/ledger`: the CreditLedger port on SQLite. */
export * as SqliteCreditLedger from "./SqliteCreditLedger.js"
