/**
 * The schema of the Postgres stores, as numbered migrations ("versioned and safe to
 * run twice"). Applied versions are recorded in `schema_migrations`; every run happens under a
 * session advisory lock keyed by the schema, so two hosts booting at once apply each version
 * exactly once, the second waiting for the first.
 */
import type pg from "pg"

/** One migration: its version (1, 2, ...) and the statements that take the schema there. */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly up: (schema: string) => string
}

/** The migrations, in order. Append only: a released migration is never edited. */
export const MIGRATIONS: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "sessions",
    up: (s) => `
      CREATE TABLE ${s}.sessions (
        owner text NOT NULL,
        did text NOT NULL,
        session_id text NOT NULL,
        title text NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        oracle_name text,
        oracle_did text,
        last_processed_count bigint NOT NULL DEFAULT 0,
        user_context text,
        PRIMARY KEY (owner, session_id)
      );
      CREATE INDEX sessions_by_activity
        ON ${s}.sessions (owner, updated_at DESC, created_at DESC, session_id COLLATE "C");`
  },
  {
    version: 2,
    name: "credit ledger",
    up: (s) => `
      CREATE TABLE ${s}.credit_accounts (
        owner text PRIMARY KEY,
        balance bigint NOT NULL CHECK (balance >= 0)
      );
      CREATE TABLE ${s}.credit_entries (
        id bigserial PRIMARY KEY,
        owner text NOT NULL,
        did text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('top-up', 'deduct')),
        requested bigint NOT NULL,
        amount bigint NOT NULL,
        shortfall bigint NOT NULL,
        balance_after bigint NOT NULL CHECK (balance_after >= 0),
        reason text,
        at bigint NOT NULL
      );
      CREATE INDEX credit_entries_by_owner ON ${s}.credit_entries (owner, id DESC);`
  },
  {
    version: 3,
    name: "runs",
    up: (s) => `
      CREATE TABLE ${s}.runs (
        owner text NOT NULL,
        run_id text NOT NULL,
        did text NOT NULL,
        session_id text NOT NULL,
        request_id text NOT NULL,
        status text NOT NULL
          CHECK (status IN ('queued', 'running', 'finished', 'interrupted', 'aborted', 'failed')),
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        ended_at bigint,
        last_frame_id integer NOT NULL DEFAULT 0,
        partial_text text NOT NULL DEFAULT '',
        seq bigserial NOT NULL,
        PRIMARY KEY (owner, run_id)
      );
      CREATE INDEX runs_active ON ${s}.runs (owner, session_id, created_at DESC, seq DESC)
        WHERE status IN ('queued', 'running');
      CREATE INDEX runs_ended ON ${s}.runs (ended_at) WHERE ended_at IS NOT NULL;
      CREATE TABLE ${s}.run_frames (
        owner text NOT NULL,
        run_id text NOT NULL,
        id integer NOT NULL,
        event text NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (owner, run_id, id),
        FOREIGN KEY (owner, run_id) REFERENCES ${s}.runs (owner, run_id) ON DELETE CASCADE
      );`
  },
  {
    // Issue 18, "Credits": a turn's hold on part of a balance, counted until it expires.
    version: 4,
    name: "credit reservations",
    up: (s) => `
      CREATE TABLE ${s}.credit_reservations (
        id bigserial PRIMARY KEY,
        owner text NOT NULL,
        amount bigint NOT NULL CHECK (amount > 0),
        expires_at bigint NOT NULL
      );
      CREATE INDEX credit_reservations_by_owner ON ${s}.credit_reservations (owner, expires_at);`
  },
  {
    // Issue 38, "Connect": each user's sealed OAuth connections (docs/oauth.md#at-rest). Only
    // ciphertext is stored; the owner is the DID's digest, as for every other table.
    version: 5,
    name: "connections",
    up: (s) => `
      CREATE TABLE ${s}.connections (
        owner text NOT NULL,
        server text COLLATE "C" NOT NULL,
        sealed text NOT NULL,
        updated_at bigint NOT NULL,
        PRIMARY KEY (owner, server)
      );`
  },
  {
    // Issue 40, "Turns that wait": the waits of runs that wait for their user, and how each was
    // answered (docs/waiting.md). A wait id is unique across users (the port's `conflict`); every
    // read is still scoped by the owner digest. Request and answer are JSON text (jsonb refuses
    // U+0000, which JSON text escapes).
    version: 6,
    name: "waits",
    up: (s) => `
      CREATE TABLE ${s}.waits (
        wait_id text COLLATE "C" PRIMARY KEY,
        owner text NOT NULL,
        did text NOT NULL,
        run_id text NOT NULL,
        session_id text NOT NULL,
        request text NOT NULL,
        created_at bigint NOT NULL,
        deadline bigint NOT NULL,
        answer text,
        answered_by text,
        answered_at bigint,
        CHECK ((answer IS NULL) = (answered_at IS NULL) AND (answer IS NULL) = (answered_by IS NULL))
      );
      CREATE INDEX waits_by_owner ON ${s}.waits (owner, created_at, wait_id);
      CREATE INDEX waits_open ON ${s}.waits (deadline, wait_id) WHERE answered_at IS NULL;`
  }
]

/** The version a schema has after every migration. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version

/**
 * Applies the missing migrations on `client`, each in its own transaction with its record in
 * `schema_migrations`, then runs `after` (LangGraph's checkpointer setup, which has no lock of
 * its own) — all while holding the schema's advisory lock. Returns the versions it applied.
 */
export const migrate = async (
  client: pg.ClientBase,
  schemaName: string,
  after?: () => Promise<void>
): Promise<ReadonlyArray<number>> => {
  const s = quoteIdent(schemaName)
  // hashtext gives a 32-bit key; the constant first half keeps it apart from other users of
  // advisory locks on the same database.
  await client.query("SELECT pg_advisory_lock(1347571538, hashtext($1))", [schemaName])
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`)
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`
    )
    const done = new Set(
      (await client.query<{ version: number }>(`SELECT version FROM ${s}.schema_migrations`)).rows.map(
        (r) => r.version
      )
    )
    const newer = [...done].filter((v) => v > SCHEMA_VERSION)
    if (newer.length > 0) {
      throw new Error(
        `schema ${schemaName} is at version ${Math.max(...newer)}, newer than this plugboard (${SCHEMA_VERSION})`
      )
    }
    const applied: Array<number> = []
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue
      await client.query("BEGIN")
      try {
        await client.query(migration.up(s))
        await client.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name
        ])
        await client.query("COMMIT")
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined)
        throw error
      }
      applied.push(migration.version)
    }
    if (after !== undefined) await after()
    return applied
  } finally {
    await client
      .query("SELECT pg_advisory_unlock(1347571538, hashtext($1))", [schemaName])
      .catch(() => undefined)
  }
}

/** Quotes an identifier for SQL. */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`
