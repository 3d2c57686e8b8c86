/**
 * Which engine holds what a configuration names, decided once for the server and the CLI: with
 * `DATABASE_URL`, PostgreSQL (one pool for every port on it); without, the embedded files. The
 * credit ledger is the case in point: `plugboard credits top-up` must write the ledger the server
 * charges, whichever it is (docs/spec/pipeline.md#the-stages, stage 3).
 */
import type { Clock, CreditLedger } from "@plugboard/core"
import { SqliteCreditLedger } from "@plugboard/ledger"
import * as Postgres from "@plugboard/postgres"
import { Layer } from "effect"
import type { ServerConfig } from "./Config.js"

/** The Postgres database a configuration names (`DATABASE_URL`), or none. */
export const databaseLayer = (
  config: Pick<ServerConfig, "database">
): Layer.Layer<Postgres.PgDatabase, Postgres.PgFailure, never> | undefined =>
  config.database === undefined
    ? undefined
    : Postgres.layerDatabase({
        url: config.database.url,
        schema: config.database.schema,
        maxConnections: config.database.poolMax
      })

/**
 * The credit ledger a configuration selects: Postgres's when `DATABASE_URL` is set (on `pg`, the
 * database layer the caller shares among its ports), else the SQLite file at `CREDITS_DATABASE_PATH`.
 */
export const creditLedgerLayer = (
  config: Pick<ServerConfig, "creditsDatabasePath">,
  pg: Layer.Layer<Postgres.PgDatabase, Postgres.PgFailure, never> | undefined
): Layer.Layer<
  CreditLedger.CreditLedger,
  CreditLedger.CreditLedgerError | Postgres.PgFailure,
  Clock.Clock
> =>
  pg === undefined
    ? SqliteCreditLedger.layer({ filename: config.creditsDatabasePath })
    : Layer.provide(Postgres.layerCreditLedger, pg)
