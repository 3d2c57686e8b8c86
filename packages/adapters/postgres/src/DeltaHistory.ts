/**
 * A delta channel's history (LangGraph's `DeltaChannel`, the agent's `messages`) read from
 * LangGraph's Postgres tables in one round trip per channel, where the base class's walk reads
 * one whole checkpoint per ancestor, a round trip each (docs/benchmarks.md, conversation).
 *
 * The same answer as the base class's walk over `PostgresSaver.getTuple`: starting at the
 * checkpoint's parent, up to and including the nearest ancestor that stores a value of the
 * channel (a blob at the version its `channel_versions` names, not the "empty" marker; a
 * `DeltaSnapshot`, or a full list written before the channel became a delta channel), the
 * channel's writes of every checkpoint on the way, oldest checkpoint first and, within one, in
 * the order `getTuple` returns pending writes (`task_id`, `idx`); that value is the seed.
 */
import type {
  CheckpointPendingWrite,
  DeltaChannelHistory,
  SerializerProtocol
} from "@langchain/langgraph-checkpoint"
import type pg from "pg"

/** Where the tables are: the pool and the schema, quoted for SQL. */
export interface HistorySource {
  readonly pool: pg.Pool
  readonly schema: string
}

const sql = (schema: string) => ({
  latest: `SELECT checkpoint_id FROM ${schema}.checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2
    ORDER BY checkpoint_id DESC LIMIT 1`,
  // The chain, nearest first, each with its writes of the channel (in getTuple's order) and, on the
  // last, the seed; one statement.
  history: `WITH RECURSIVE chain(id, parent, seed_version, depth) AS (
      SELECT p.checkpoint_id, p.parent_checkpoint_id, s.version, 1
        FROM ${schema}.checkpoints AS t
        JOIN ${schema}.checkpoints AS p
          ON p.thread_id = t.thread_id AND p.checkpoint_ns = t.checkpoint_ns AND p.checkpoint_id = t.parent_checkpoint_id
        LEFT JOIN ${schema}.checkpoint_blobs AS s
          ON s.thread_id = p.thread_id AND s.checkpoint_ns = p.checkpoint_ns AND s.channel = $4
            AND s.version = p.checkpoint -> 'channel_versions' ->> $4 AND s.type <> 'empty'
        WHERE t.thread_id = $1 AND t.checkpoint_ns = $2 AND t.checkpoint_id = $3
      UNION ALL
      SELECT c.checkpoint_id, c.parent_checkpoint_id, s.version, chain.depth + 1
        FROM chain
        JOIN ${schema}.checkpoints AS c
          ON c.thread_id = $1 AND c.checkpoint_ns = $2 AND c.checkpoint_id = chain.parent
        LEFT JOIN ${schema}.checkpoint_blobs AS s
          ON s.thread_id = c.thread_id AND s.checkpoint_ns = c.checkpoint_ns AND s.channel = $4
            AND s.version = c.checkpoint -> 'channel_versions' ->> $4 AND s.type <> 'empty'
        WHERE chain.seed_version IS NULL
    )
    SELECT 'write' AS kind, chain.depth, w.task_id, w.idx, w.type, w.blob
      FROM chain JOIN ${schema}.checkpoint_writes AS w
        ON w.thread_id = $1 AND w.checkpoint_ns = $2 AND w.checkpoint_id = chain.id AND w.channel = $4
    UNION ALL
    SELECT 'seed', chain.depth, NULL, NULL, b.type, b.blob
      FROM chain JOIN ${schema}.checkpoint_blobs AS b
        ON b.thread_id = $1 AND b.checkpoint_ns = $2 AND b.channel = $4 AND b.version = chain.seed_version
    ORDER BY 2 DESC, 1 DESC, 3, 4`
})

interface Row {
  readonly kind: "write" | "seed"
  readonly task_id: string | null
  readonly type: string
  readonly blob: Buffer | null
}

/**
 * The delta history of `channels` at checkpoint `checkpointId` of (`thread`, `ns`), or at the
 * thread's latest checkpoint when `checkpointId` is undefined. `thread` is the stored thread id.
 */
export const readDeltaHistory = async (
  source: HistorySource,
  serde: SerializerProtocol,
  options: {
    readonly thread: string
    readonly ns: string
    readonly checkpointId: string | undefined
    readonly channels: ReadonlyArray<string>
  }
): Promise<Record<string, DeltaChannelHistory>> => {
  const statements = sql(source.schema)
  const result: Record<string, DeltaChannelHistory> = {}
  const { thread, ns, channels } = options
  const id =
    options.checkpointId ??
    (await source.pool.query<{ checkpoint_id: string }>(statements.latest, [thread, ns])).rows[0]
      ?.checkpoint_id
  for (const channel of channels) {
    if (id === undefined) {
      result[channel] = { writes: [] }
      continue
    }
    const rows = (await source.pool.query<Row>(statements.history, [thread, ns, id, channel])).rows
    const entry: DeltaChannelHistory = { writes: [] }
    const writes: Array<Promise<CheckpointPendingWrite>> = []
    for (const row of rows) {
      if (row.kind === "seed") entry.seed = await serde.loadsTyped(row.type, row.blob ?? new Uint8Array())
      else
        writes.push(
          Promise.resolve(serde.loadsTyped(row.type, row.blob ?? new Uint8Array())).then(
            (value): CheckpointPendingWrite => [row.task_id!, channel, value]
          )
        )
    }
    entry.writes = await Promise.all(writes)
    result[channel] = entry
  }
  return result
}
