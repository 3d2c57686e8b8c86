/**
 * The `RunStore` port on Postgres: `runs` and their numbered `run_frames`, so a run started on
 * one host is rejoined from any other (docs/deployment.md).
 *
 * An append is one statement: it bumps the run's `last_frame_id` under the row lock and inserts
 * the frame with that id, so ids stay dense however many hosts append, and nothing is appended
 * to an ended run. `partial_text` holds the answer as the body of a JSON string (see
 * `encodeText`), which lets `end` build the `done` payload in the same statement.
 *
 * Following: each committed frame is announced, and followers on every host are woken through
 * core's `followLog`, which reads from the cursor after every wake-up, so no frame is skipped or
 * repeated. The announcement goes through the `fanout` option when given (Redis pub/sub, when
 * the host has `REDIS_URL`); otherwise with `pg_notify` (delivered at commit) to one `LISTEN`
 * connection per store. Followers also re-read every `pollMs`, which covers announcements lost
 * while a connection reconnects.
 */
import { createHash } from "node:crypto"
import { Clock, RunStore } from "@plugboard/core"
import { Effect, Layer, Option, type Scope, Stream } from "effect"
import pg from "pg"
import { decodeText, encodeText, int, ownerKey, type PgFailure, query } from "./internal/sql.js"
import { PgDatabase, type PgDatabaseService } from "./PgDatabase.js"

/** Options of the Postgres RunStore. */
export interface PostgresRunStoreOptions {
  /**
   * How often (real milliseconds) a follower re-reads without a notification; default 1000.
   * Notifications normally wake it at once; this bounds the delay when one is lost.
   */
  readonly pollMs?: number | undefined
  /**
   * Cross-host wake-ups to use instead of `pg_notify`/`LISTEN` (e.g. the Redis adapter's
   * `RunFanout`, keyed here by the owner digest). The database then holds no listening
   * connection.
   */
  readonly fanout?: RunStore.FrameFanout | undefined
}

interface RunRow {
  run_id: string
  did: string
  session_id: string
  request_id: string
  status: RunStore.RunStatus
  created_at: string
  updated_at: string
  ended_at: string | null
  last_frame_id: number
  partial_text: string
}

const RUN_COLUMNS =
  "run_id, did, session_id, request_id, status, created_at, updated_at, ended_at, last_frame_id, partial_text"
const ACTIVE = "('queued', 'running')"

const toRun = (row: RunRow): RunStore.Run => {
  const run: RunStore.Run = {
    runId: row.run_id,
    sessionId: row.session_id,
    did: decodeText(row.did),
    requestId: row.request_id,
    status: row.status,
    createdAt: int(row.created_at),
    updatedAt: int(row.updated_at),
    lastFrameId: row.last_frame_id,
    partialText: decodeText(row.partial_text)
  }
  return row.ended_at === null ? run : { ...run, endedAt: int(row.ended_at) }
}

const toFrame = (row: { id: number; event: string; data: string }): RunStore.Frame => ({
  id: row.id,
  event: row.event,
  data: RunStore.decodeFrameData(row.data)
})

const unavailable = (failure: PgFailure) =>
  new RunStore.RunStoreError({
    reason: "unavailable",
    message: `run storage unavailable: ${failure.message}`,
    cause: failure.cause
  })

/** The notification channel of a schema's runs (a channel name is at most 63 bytes). */
export const channelOf = (schemaName: string) =>
  `plugboard_runs_${createHash("sha256").update(schemaName).digest("hex").slice(0, 16)}`

/**
 * One `LISTEN` connection, opened at the first follow and reopened after it drops. Notifications
 * are `<frame id> <owner> <run id>`; each wakes that run's followers in this process.
 */
class Listener {
  private client: pg.Client | undefined
  private connecting: Promise<void> | undefined
  private closed = false

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly onFrame: (owner: string, runId: string, id: number) => void
  ) {}

  /** Resolves once listening; never rejects (followers poll while it cannot listen). */
  ensure(): Promise<void> {
    if (this.closed || this.client !== undefined) return Promise.resolve()
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined
    })
    return this.connecting
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000 })
    const drop = () => {
      if (this.client === client) this.client = undefined
    }
    client.on("error", drop)
    client.on("end", drop)
    client.on("notification", (message) => {
      const [id, owner, ...rest] = (message.payload ?? "").split(" ")
      if (id !== undefined && owner !== undefined) this.onFrame(owner, rest.join(" "), Number(id))
    })
    try {
      await client.connect()
      await client.query(`LISTEN "${this.channel}"`)
      if (this.closed) {
        await client.end()
        return
      }
      this.client = client
    } catch {
      client.end().catch(() => undefined)
    }
  }

  async close(): Promise<void> {
    this.closed = true
    await this.connecting
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => undefined)
  }
}

/**
 * The default fanout: `pg_notify` in the committing statement (so `publish` only wakes this
 * process), and one `LISTEN` connection, opened at the first follow, for the other hosts'.
 * Keyed by (owner, run id): a notification carries the owner digest, not the DID.
 */
const listenerFanout = (
  url: string,
  channel: string
): Effect.Effect<RunStore.FrameFanout, never, Scope.Scope> =>
  Effect.gen(function* () {
    const notifier = RunStore.makeNotifier()
    const listener = yield* Effect.acquireRelease(
      Effect.sync(() => new Listener(url, channel, (owner, runId, id) => notifier.publish(owner, runId, id))),
      (l) => Effect.promise(() => l.close())
    )
    return {
      publish: (owner, runId, id) => Effect.sync(() => notifier.publish(owner, runId, id)),
      // Listening before the follower's first read: a frame committed after that read notifies.
      subscribe: (owner, runId) =>
        Effect.zipRight(
          Effect.promise(() => listener.ensure()),
          notifier.subscribe(owner, runId)
        )
    }
  })

/** Builds the Postgres RunStore on a database; its listening connection closes with the scope. */
export const makeRunStore = (
  db: PgDatabaseService,
  options: PostgresRunStoreOptions = {}
): Effect.Effect<RunStore.RunStoreService, never, Clock.Clock | Scope.Scope> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const s = db.schema
    const channel = channelOf(db.schemaName)
    const pollMs = options.pollMs ?? 1000
    const fanout = options.fanout ?? (yield* listenerFanout(db.url, channel))
    const sql = <A>(effect: Effect.Effect<A, PgFailure | RunStore.RunStoreError>) =>
      Effect.mapError(Effect.zipRight(db.ready, effect), (e) => (e._tag === "PgFailure" ? unavailable(e) : e))
    const ids = (did: string, runId: string) =>
      Effect.all([RunStore.validateDid(did), RunStore.validateId("runId", runId)])

    const selectRun = (owner: string, runId: string) =>
      Effect.map(
        sql(
          query<RunRow>(db, `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE owner = $1 AND run_id = $2`, [
            owner,
            runId
          ])
        ),
        (result) => Option.map(Option.fromNullable(result.rows[0]), toRun)
      )

    /** Why a change matched no active run: the run is unknown, or it has ended. */
    const refusal = (owner: string, runId: string) =>
      Effect.flatMap(selectRun(owner, runId), (run) =>
        Effect.fail(
          Option.match(run, {
            onNone: () => RunStore.notFound(runId),
            onSome: (r) => RunStore.ended(runId, r.status)
          })
        )
      )

    const read = (owner: string, runId: string, after: number) =>
      Effect.flatMap(
        sql(
          query<{
            status: RunStore.RunStatus
            last_frame_id: number
            id: number | null
            event: string
            data: string
          }>(
            db,
            `SELECT r.status, r.last_frame_id, f.id, f.event, f.data
             FROM ${s}.runs r LEFT JOIN ${s}.run_frames f
               ON f.owner = r.owner AND f.run_id = r.run_id AND f.id > $3
             WHERE r.owner = $1 AND r.run_id = $2 ORDER BY f.id`,
            [owner, runId, after]
          )
        ),
        (result): Effect.Effect<RunStore.LogSlice, RunStore.RunStoreError> => {
          const first = result.rows[0]
          if (first === undefined) return Effect.fail(RunStore.notFound(runId))
          return Effect.succeed({
            frames: result.rows.flatMap((r) => (r.id === null ? [] : [toFrame({ ...r, id: r.id })])),
            ended: !RunStore.isActive(first.status),
            lastFrameId: first.last_frame_id
          })
        }
      )

    // With a fanout of its own, the store announces after the commit instead. A follower wants
    // only the newest id, so a statement that writes several frames of a run announces its last.
    const notify = (id: string) =>
      options.fanout === undefined
        ? `, pg_notify('${channel}', ${id} || ' ' || f.owner || ' ' || f.run_id)`
        : ""

    /**
     * Writes the `done` frame of one run (or of every active run) in the same statement; with
     * `frames` (the parameter numbers of their count, text and columns), the run's last frames
     * before it too, their ids taken under the same row lock.
     */
    // The reason is a checked slug (RunStore.validateEndOutcome): no JSON escaping needed.
    const endSql = (
      where: string,
      reasonParam: number,
      frames?: {
        readonly count: number
        readonly text: number
        readonly events: number
        readonly data: number
      }
    ) => `
      WITH r AS (
        UPDATE ${s}.runs SET status = $1, updated_at = $2, ended_at = $2,
          ${
            frames === undefined
              ? "last_frame_id = last_frame_id + 1"
              : `last_frame_id = last_frame_id + 1 + $${frames.count}, partial_text = partial_text || $${frames.text}`
          }
        WHERE status IN ${ACTIVE} ${where}
        RETURNING owner, run_id, last_frame_id, partial_text
      ), ${
        frames === undefined
          ? ""
          : `g AS (
        INSERT INTO ${s}.run_frames (owner, run_id, id, event, data)
        SELECT r.owner, r.run_id, r.last_frame_id - 1 - $${frames.count} + x.ord, x.event, x.data
        FROM r, unnest($${frames.events}::text[], $${frames.data}::text[]) WITH ORDINALITY AS x(event, data, ord)
      ), `
      }f AS (
        INSERT INTO ${s}.run_frames (owner, run_id, id, event, data)
        SELECT owner, run_id, last_frame_id, '${RunStore.DONE_EVENT}',
          CASE WHEN $1 = 'finished' THEN '{"status":"finished"'
               ELSE '{"status":"' || $1 || '","partialText":"' || partial_text || '"' END
          || COALESCE(',"reason":"' || $${reasonParam}::text || '"', '') || '}'
        FROM r RETURNING owner, run_id, id, data
      )
      SELECT f.owner, f.run_id, f.id, f.data${notify("f.id")} FROM f`

    /** Appends the frames in one statement: the run's row takes their ids, then they are inserted. */
    const appendFrames = (did: string, runId: string, inputs: ReadonlyArray<RunStore.FrameInput>) =>
      Effect.gen(function* () {
        const { did: d, runId: id, frames } = yield* RunStore.validateAppend(did, runId, inputs)
        if (frames.length === 0) return []
        const now = yield* clock.now()
        const owner = ownerKey(d)
        const result = yield* sql(
          query<{ id: number }>(
            db,
            `WITH r AS (
               UPDATE ${s}.runs SET last_frame_id = last_frame_id + $7,
                 partial_text = partial_text || $3, updated_at = $4
               WHERE owner = $1 AND run_id = $2 AND status IN ${ACTIVE}
               RETURNING owner, run_id, last_frame_id
             ), f AS (
               INSERT INTO ${s}.run_frames (owner, run_id, id, event, data)
               SELECT r.owner, r.run_id, r.last_frame_id - $7 + x.ord, x.event, x.data
               FROM r, unnest($5::text[], $6::text[]) WITH ORDINALITY AS x(event, data, ord)
               RETURNING owner, run_id, id
             )
             SELECT max(f.id) AS id${notify("max(f.id)")} FROM f GROUP BY f.owner, f.run_id`,
            [
              owner,
              id,
              encodeText(frames.map((f) => f.text).join("")),
              now,
              frames.map((f) => f.event),
              frames.map((f) => f.json),
              frames.length
            ]
          )
        )
        const last = result.rows[0]
        if (last === undefined) return yield* refusal(owner, id)
        yield* fanout.publish(owner, id, last.id)
        const first = last.id - frames.length + 1
        return frames.map(
          (frame, i): RunStore.Frame => ({ id: first + i, event: frame.event, data: frame.data })
        )
      })

    const service: RunStore.RunStoreService = {
      create: (input) =>
        Effect.gen(function* () {
          const now = yield* clock.now()
          const { did, sessionId, requestId, runId, status } = yield* RunStore.validateNewRun(input, now)
          const inserted = yield* sql(
            query<RunRow>(
              db,
              `INSERT INTO ${s}.runs (owner, run_id, did, session_id, request_id, status, created_at, updated_at)
               VALUES ($1, $2, $3, $4, $5, $7, $6, $6)
               ON CONFLICT (owner, run_id) DO NOTHING RETURNING ${RUN_COLUMNS}`,
              [ownerKey(did), runId, encodeText(did), sessionId, requestId, now, status]
            )
          )
          const row = inserted.rows[0]
          if (row === undefined) {
            return yield* Effect.fail(
              new RunStore.RunStoreError({ reason: "invalid", message: `Run '${runId}' already exists` })
            )
          }
          return toRun(row)
        }),
      start: (did, runId) =>
        Effect.gen(function* () {
          const [d, id] = yield* ids(did, runId)
          const now = yield* clock.now()
          const owner = ownerKey(d)
          const updated = yield* sql(
            query<RunRow>(
              db,
              `UPDATE ${s}.runs SET status = 'running', updated_at = $3
               WHERE owner = $1 AND run_id = $2 AND status = 'queued' RETURNING ${RUN_COLUMNS}`,
              [owner, id, now]
            )
          )
          const row = updated.rows[0]
          if (row !== undefined) return toRun(row)
          const run = yield* selectRun(owner, id)
          if (Option.isNone(run)) return yield* Effect.fail(RunStore.notFound(id))
          return yield* Effect.fail(
            run.value.status === "running"
              ? new RunStore.RunStoreError({ reason: "invalid", message: `Run '${id}' is already running` })
              : RunStore.ended(id, run.value.status)
          )
        }),
      append: RunStore.appendOne(appendFrames),
      appendAll: appendFrames,
      end: (did, runId, outcome, frames) =>
        Effect.gen(function* () {
          const checked = yield* RunStore.validateEnd(did, runId, outcome, frames)
          const id = checked.runId
          const now = yield* clock.now()
          const owner = ownerKey(checked.did)
          const last = checked.frames
          const result = yield* sql(
            query<{ id: number; data: string }>(
              db,
              last.length === 0
                ? endSql("AND owner = $3 AND run_id = $4", 5)
                : endSql("AND owner = $3 AND run_id = $4", 5, { count: 6, text: 7, events: 8, data: 9 }),
              [
                checked.outcome.status,
                now,
                owner,
                id,
                checked.outcome.reason ?? null,
                ...(last.length === 0
                  ? []
                  : [
                      last.length,
                      encodeText(last.map((f) => f.text).join("")),
                      last.map((f) => f.event),
                      last.map((f) => f.json)
                    ])
              ]
            )
          )
          const row = result.rows[0]
          if (row === undefined) return yield* refusal(owner, id)
          yield* fanout.publish(owner, id, row.id)
          return toFrame({ id: row.id, event: RunStore.DONE_EVENT, data: row.data })
        }),
      get: (did, runId) => Effect.flatMap(ids(did, runId), ([d, id]) => selectRun(ownerKey(d), id)),
      frames: (did, runId, after) =>
        Effect.flatMap(Effect.all([ids(did, runId), RunStore.validateAfter(after)]), ([[d, id], a]) =>
          Effect.map(read(ownerKey(d), id, a), (slice) => slice.frames)
        ),
      follow: (did, runId, after) =>
        Stream.unwrap(
          Effect.map(Effect.all([ids(did, runId), RunStore.validateAfter(after)]), ([[d, id], a]) => {
            const owner = ownerKey(d)
            return RunStore.followLog(a, {
              read: (cursor) => read(owner, id, cursor),
              // Subscribed before the first read: a frame committed after that read wakes it.
              subscribe: fanout.subscribe(owner, id),
              pollMs
            })
          })
        ),
      activeForSession: (did, sessionId) =>
        Effect.flatMap(
          Effect.all([RunStore.validateDid(did), RunStore.validateId("sessionId", sessionId)]),
          ([d, sid]) =>
            Effect.map(
              sql(
                query<RunRow>(
                  db,
                  `SELECT ${RUN_COLUMNS} FROM ${s}.runs
                   WHERE owner = $1 AND session_id = $2 AND status IN ${ACTIVE}
                   ORDER BY created_at DESC, seq DESC LIMIT 1`,
                  [ownerKey(d), sid]
                )
              ),
              (result) => Option.map(Option.fromNullable(result.rows[0]), toRun)
            )
        ),
      interruptUnfinished: () =>
        Effect.gen(function* () {
          const now = yield* clock.now()
          const result = yield* sql(
            query<{ owner: string; run_id: string; id: number }>(db, endSql("", 3), [
              "interrupted",
              now,
              "restart"
            ])
          )
          yield* Effect.forEach(result.rows, (row) => fanout.publish(row.owner, row.run_id, row.id), {
            discard: true
          })
          return result.rows.map((row) => ({ did: row.owner, runId: row.run_id }))
        }),
      deleteSession: (did, sessionId) =>
        Effect.gen(function* () {
          const [d, sid] = yield* Effect.all([
            RunStore.validateDid(did),
            RunStore.validateId("sessionId", sessionId)
          ])
          const owner = ownerKey(d)
          const result = yield* sql(
            query<{ run_id: string; last_frame_id: number }>(
              db,
              `DELETE FROM ${s}.runs WHERE owner = $1 AND session_id = $2 RETURNING run_id, last_frame_id`,
              [owner, sid]
            )
          )
          // A follower of a deleted run, on any host, reads again, finds nothing and ends.
          yield* Effect.forEach(result.rows, (row) => fanout.publish(owner, row.run_id, row.last_frame_id), {
            discard: true
          })
          return result.rows.length
        }),
      prune: (olderThanMs) =>
        Effect.gen(function* () {
          const retention = yield* RunStore.validateRetention(olderThanMs)
          const now = yield* clock.now()
          const result = yield* sql(
            query(db, `DELETE FROM ${s}.runs WHERE ended_at IS NOT NULL AND ended_at < $1`, [now - retention])
          )
          return result.rowCount ?? 0
        })
    }
    return service
  })

/** The RunStore port on the `PgDatabase`. */
export const layerRunStore = (
  options: PostgresRunStoreOptions = {}
): Layer.Layer<RunStore.RunStore, never, PgDatabase | Clock.Clock> =>
  Layer.scoped(
    RunStore.RunStore,
    Effect.flatMap(PgDatabase, (db) => makeRunStore(db, options))
  )
