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
 *
 * A host keeps the decoded history it last read of each thread (`DeltaHistoryCache`), as the
 * SQLite saver does: rows never change once written, so the next read walks the chain only up to
 * that checkpoint and decodes only the writes after it. Hosts share the database, so a checkpoint
 * another host wrote is simply not in this host's cache, and the walk goes on to the seed.
 */
import type {
  CheckpointPendingWrite,
  DeltaChannelHistory,
  SerializerProtocol
} from "@langchain/langgraph-checkpoint"
import type pg from "pg"

/** A decoded delta history at checkpoint `id`: the seed (when `hasSeed`) and the writes after it. */
interface CachedHistory {
  readonly id: string
  readonly hasSeed: boolean
  readonly seed: unknown
  readonly writes: Array<CheckpointPendingWrite>
}

/** Threads (per namespace and channel) whose decoded history one host keeps, the latest read first out. */
export const DELTA_CACHE_THREADS = 256

/** The decoded histories a host keeps, by (stored thread, namespace, channel). */
export interface DeltaHistoryCache {
  readonly entries: Map<string, CachedHistory>
  /** Forgets every namespace and channel of a stored thread (its deletion). */
  readonly forget: (thread: string) => void
}

const keyOf = (thread: string, ns: string, channel: string) => `${thread}\u0000${ns}\u0000${channel}`

/** A host's cache of decoded delta histories, `DELTA_CACHE_THREADS` at most. */
export const makeDeltaHistoryCache = (): DeltaHistoryCache => {
  const entries = new Map<string, CachedHistory>()
  return {
    entries,
    forget: (thread) => {
      for (const key of [...entries.keys()]) if (key.startsWith(`${thread}\u0000`)) entries.delete(key)
    }
  }
}

const remember = (cache: DeltaHistoryCache, key: string, history: CachedHistory): void => {
  cache.entries.delete(key)
  cache.entries.set(key, history)
  if (cache.entries.size > DELTA_CACHE_THREADS)
    cache.entries.delete(cache.entries.keys().next().value as string)
}

/** Where the tables are (the pool, the schema quoted for SQL), and the host's decoded histories. */
export interface HistorySource {
  readonly pool: pg.Pool
  readonly schema: string
  readonly cache?: DeltaHistoryCache | undefined
}

const sql = (schema: string) => ({
  latest: `SELECT checkpoint_id FROM ${schema}.checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2
    ORDER BY checkpoint_id DESC LIMIT 1`,
  // The chain, nearest first, each with its writes of the channel (in getTuple's order) and, on the
  // last, the seed; one statement. The walk also stops at $5, the checkpoint this host's cached
  // history is at ('' for none), and then says so with a 'stop' row instead of a seed.
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
        WHERE chain.seed_version IS NULL AND chain.id <> $5
    )
    SELECT 'write' AS kind, chain.depth, w.task_id, w.idx, w.type, w.blob
      FROM chain JOIN ${schema}.checkpoint_writes AS w
        ON w.thread_id = $1 AND w.checkpoint_ns = $2 AND w.checkpoint_id = chain.id AND w.channel = $4
    UNION ALL
    SELECT 'stop', chain.depth, NULL, NULL, NULL, NULL
      FROM chain WHERE chain.id = $5 AND chain.seed_version IS NULL
    UNION ALL
    SELECT 'seed', chain.depth, NULL, NULL, b.type, b.blob
      FROM chain JOIN ${schema}.checkpoint_blobs AS b
        ON b.thread_id = $1 AND b.checkpoint_ns = $2 AND b.channel = $4 AND b.version = chain.seed_version
    ORDER BY 2 DESC, 1 DESC, 3, 4`
})

interface Row {
  readonly kind: "write" | "seed" | "stop"
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
    const key = keyOf(thread, ns, channel)
    const cached = source.cache?.entries.get(key)
    const history =
      cached?.id === id
        ? cached
        : await readChannel(source, serde, statements.history, { thread, ns, id, channel }, cached)
    if (source.cache !== undefined) remember(source.cache, key, history)
    const entry: DeltaChannelHistory = { writes: history.writes.slice() }
    if (history.hasSeed) entry.seed = history.seed
    result[channel] = entry
  }
  return result
}

/** One channel's history at `id`: read up to the seed, or up to `cached` and continued from it. */
const readChannel = async (
  source: HistorySource,
  serde: SerializerProtocol,
  statement: string,
  at: { readonly thread: string; readonly ns: string; readonly id: string; readonly channel: string },
  cached: CachedHistory | undefined
): Promise<CachedHistory> => {
  const { thread, ns, id, channel } = at
  const rows = (await source.pool.query<Row>(statement, [thread, ns, id, channel, cached?.id ?? ""])).rows
  let seed: { readonly value: unknown } | undefined
  let stopped = false
  const writes: Array<Promise<CheckpointPendingWrite>> = []
  for (const row of rows) {
    if (row.kind === "stop") stopped = true
    else if (row.kind === "seed")
      seed = { value: await serde.loadsTyped(row.type, row.blob ?? new Uint8Array()) }
    else
      writes.push(
        Promise.resolve(serde.loadsTyped(row.type, row.blob ?? new Uint8Array())).then(
          (value): CheckpointPendingWrite => [row.task_id!, channel, value]
        )
      )
  }
  const decoded = await Promise.all(writes)
  // Walked up to the cached checkpoint with no stored value on the way: the cached history
  // continues with the writes read here.
  if (stopped && cached !== undefined)
    return { id, hasSeed: cached.hasSeed, seed: cached.seed, writes: cached.writes.concat(decoded) }
  return { id, hasSeed: seed !== undefined, seed: seed?.value, writes: decoded }
}
