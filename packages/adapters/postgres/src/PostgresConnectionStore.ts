/**
 * The `ConnectionStore` port on Postgres: one `connections` table keyed by (owner, server), where
 * owner is the digest of the user's DID, so every query is scoped to one user. It stores only
 * what `TokenVault` sealed (docs/oauth.md#at-rest): a dump of the table reveals which servers a
 * user connected, never a token.
 */
import { ConnectionStore } from "@plugboard/core"
import { Effect, Layer } from "effect"
import { int, ownerKey, type PgFailure, query } from "./internal/sql.js"
import { PgDatabase, type PgDatabaseService } from "./PgDatabase.js"

interface Row {
  server: string
  sealed: string
  updated_at: string
}

const toRecord = (row: Row): ConnectionStore.StoredConnection => ({
  server: row.server,
  // The sealed text is the vault's (base64 and dots): stored as given, but decoded defensively
  // the way every text column is, so a NUL in a test's text survives too.
  sealed: JSON.parse(`"${row.sealed}"`) as string,
  updatedAtMs: int(row.updated_at)
})

// How a sealed text is written to its column (and compared there): JSON-escaped, see `toRecord`.
const encode = (sealed: string): string => JSON.stringify(sealed).slice(1, -1)

const unavailable = (failure: PgFailure) =>
  new ConnectionStore.ConnectionStoreError({
    reason: "unavailable",
    message: `connection storage unavailable: ${failure.message}`,
    cause: failure.cause
  })

/** Builds the Postgres ConnectionStore on a database. */
export const makeConnectionStore = (db: PgDatabaseService): ConnectionStore.ConnectionStoreService => {
  const s = db.schema
  const sql = <A>(effect: Effect.Effect<A, PgFailure>) =>
    Effect.mapError(Effect.zipRight(db.ready, effect), unavailable)
  return {
    get: (user, server) =>
      Effect.flatMap(ConnectionStore.validateKey(user, server), ([u, srv]) =>
        Effect.map(
          sql(
            query<Row>(
              db,
              `SELECT server, sealed, updated_at FROM ${s}.connections WHERE owner = $1 AND server = $2`,
              [ownerKey(u), srv]
            )
          ),
          (result) => (result.rows[0] === undefined ? undefined : toRecord(result.rows[0]))
        )
      ),
    put: (user, server, sealed, updatedAtMs) =>
      Effect.flatMap(ConnectionStore.validateKey(user, server), ([u, srv]) =>
        Effect.flatMap(ConnectionStore.validateRecord(sealed, updatedAtMs), () =>
          Effect.asVoid(
            sql(
              query(
                db,
                `INSERT INTO ${s}.connections (owner, server, sealed, updated_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (owner, server) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
                [ownerKey(u), srv, encode(sealed), updatedAtMs]
              )
            )
          )
        )
      ),
    compareAndSet: (user, server, expected, next) =>
      Effect.flatMap(ConnectionStore.validateSwap(user, server, expected, next), ([u, srv]) => {
        // One statement each way: under READ COMMITTED a concurrent writer's UPDATE or DELETE
        // waits for the row and tests `sealed` again on the version it then finds.
        const owner = ownerKey(u)
        const [text, params] =
          expected === undefined
            ? next === undefined
              ? [`SELECT 1 FROM ${s}.connections WHERE owner = $1 AND server = $2`, [owner, srv]]
              : [
                  `INSERT INTO ${s}.connections (owner, server, sealed, updated_at) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (owner, server) DO NOTHING`,
                  [owner, srv, encode(next.sealed), next.updatedAtMs]
                ]
            : next === undefined
              ? [
                  `DELETE FROM ${s}.connections WHERE owner = $1 AND server = $2 AND sealed = $3`,
                  [owner, srv, encode(expected)]
                ]
              : [
                  `UPDATE ${s}.connections SET sealed = $3, updated_at = $4
                   WHERE owner = $1 AND server = $2 AND sealed = $5`,
                  [owner, srv, encode(next.sealed), next.updatedAtMs, encode(expected)]
                ]
        return Effect.map(sql(query(db, text, params)), (result) =>
          expected === undefined && next === undefined ? result.rows.length === 0 : (result.rowCount ?? 0) > 0
        )
      }),
    remove: (user, server) =>
      Effect.flatMap(ConnectionStore.validateKey(user, server), ([u, srv]) =>
        Effect.map(
          sql(query(db, `DELETE FROM ${s}.connections WHERE owner = $1 AND server = $2`, [ownerKey(u), srv])),
          (result) => (result.rowCount ?? 0) > 0
        )
      ),
    list: (user) =>
      Effect.flatMap(ConnectionStore.validateUser(user), (u) =>
        Effect.map(
          sql(
            query<Row>(
              db,
              `SELECT server, sealed, updated_at FROM ${s}.connections WHERE owner = $1 ORDER BY server`,
              [ownerKey(u)]
            )
          ),
          (result) => result.rows.map(toRecord)
        )
      )
  }
}

/** The Postgres ConnectionStore as a layer over the `PgDatabase`. */
export const layerConnectionStore: Layer.Layer<ConnectionStore.ConnectionStore, never, PgDatabase> =
  Layer.effect(ConnectionStore.ConnectionStore, Effect.map(PgDatabase, makeConnectionStore))
