/**
 * What every Postgres store shares: the failure of a query (worded without the connection
 * string's secrets), queries and transactions as Effects, and the encodings of keys and text.
 */
import { createHash } from "node:crypto"
import { Data, Effect } from "effect"
import type pg from "pg"

/**
 * A query or connection failed. Internal: each store turns it into its port's `unavailable`
 * error. `message` never holds the password (see `redact`).
 */
export class PgFailure extends Data.TaggedError("PgFailure")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** The URL with its password replaced by `***`, for messages and logs. */
export const redactUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "<unparsable connection string>"
  }
}

/** Removes the URL and its password from a message, whatever the driver put in it. */
export const redact = (message: string, url: string): string => {
  let out = message.split(url).join(redactUrl(url))
  try {
    const password = new URL(url).password
    for (const form of new Set([password, decodeURIComponent(password)])) {
      if (form.length > 0) out = out.split(form).join("***")
    }
  } catch {
    // An unparsable URL has no password to find; the whole string was replaced above.
  }
  return out
}

// The driver's network errors carry a `code` such as ECONNREFUSED; the server's carry SQLSTATE.
const describeCause = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code
    return typeof code === "string" && !cause.message.includes(code)
      ? `${cause.message} (${code})`
      : cause.message
  }
  return String(cause)
}

/** Wraps a driver error as a `PgFailure` naming the server (password hidden). */
export const toFailure =
  (url: string, doing: string) =>
  (cause: unknown): PgFailure =>
    cause instanceof PgFailure
      ? cause
      : new PgFailure({
          message: redact(`${doing} on ${redactUrl(url)} failed: ${describeCause(cause)}`, url),
          cause: cause instanceof Error ? new Error(redact(cause.message, url)) : undefined
        })

/** What a store needs of a database: its pool, its schema, and how to word failures. */
export interface Connection {
  readonly pool: pg.Pool
  /** The schema, already quoted for SQL (`"plugboard"`). */
  readonly schema: string
  readonly url: string
}

/** Runs one statement. */
export const query = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Connection,
  text: string,
  values?: ReadonlyArray<unknown>
): Effect.Effect<pg.QueryResult<R>, PgFailure> =>
  Effect.tryPromise({
    try: () => db.pool.query<R>(text, values as Array<unknown>),
    catch: toFailure(db.url, "query")
  })

/**
 * Thrown inside `transaction` to roll back and fail with a typed error of the caller's port
 * (NotFound, Ended, ...), which passes through unchanged.
 */
export class Abort<E> {
  constructor(readonly error: E) {}
}

/** Runs `body` in one transaction on one pooled client; any throw rolls back. */
export const transaction = <A, E = never>(
  db: Connection,
  body: (client: pg.PoolClient) => Promise<A>
): Effect.Effect<A, PgFailure | E> =>
  Effect.tryPromise({
    try: async () => {
      const client = await db.pool.connect()
      let broken = false
      try {
        await client.query("BEGIN")
        const result = await body(client)
        await client.query("COMMIT")
        return result
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {
          broken = true
        })
        throw error
      } finally {
        // A client whose rollback failed is in an unknown state: destroy it, never reuse it.
        client.release(broken)
      }
    },
    catch: (error) => (error instanceof Abort ? (error.error as E) : toFailure(db.url, "transaction")(error))
  })

/**
 * A user's key in every table: the SHA-256 of the DID. The ports accept any non-empty DID
 * (SessionStore and RunStore) and a valid DID can be long, while a B-tree entry is limited
 * (about 2.7 kB), so keys are fixed-size digests and the DID itself is kept beside them.
 */
export const ownerKey = (did: string): string => createHash("sha256").update(did, "utf8").digest("hex")

/**
 * Text as stored: the body of its JSON string. Postgres text cannot hold U+0000, which the
 * ports accept in DIDs, titles and answers; JSON escapes it, is injective, and leaves ordinary
 * text as it is. Keys and ids that the ports already keep free of control characters are stored
 * as given, so they sort by code point (`COLLATE "C"`).
 */
export const encodeText = (text: string): string => JSON.stringify(text).slice(1, -1)

/** The inverse of `encodeText`. */
export const decodeText = (stored: string): string => JSON.parse(`"${stored}"`) as string

/** `encodeText` for optional fields: `undefined` is SQL NULL. */
export const encodeOptional = (text: string | undefined): string | null =>
  text === undefined ? null : encodeText(text)

/** `decodeText` for optional fields. */
export const decodeOptional = (stored: string | null): string | undefined =>
  stored === null ? undefined : decodeText(stored)

/** A BIGINT column (which the driver reads as a string) as a number; stores keep them safe. */
export const int = (value: string | number): number => (typeof value === "number" ? value : Number(value))
