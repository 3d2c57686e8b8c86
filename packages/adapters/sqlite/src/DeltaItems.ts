/**
 * A delta channel's history read item by item, for readers that show a few of its items (paged
 * history, docs/benchmarks.md, history pages): first what each stored item is — a LangChain
 * record's id and class, read by SQLite's JSON functions from the stored text without decoding
 * anything — then the decoded values of only the items a page shows.
 *
 * The items are those `getDeltaChannelHistory` would replay, in the same order: the elements of
 * the seed (the nearest stored value of the channel, a `DeltaSnapshot` or a list written before
 * the channel became a delta channel), then each write of the channel on the checkpoints after it
 * (a write is one record or a list of them), oldest checkpoint first and, within one, in
 * LangGraph's replay order. Which of them a thread shows, and where, is the reducer's business
 * (core's `GraphState.appendMessages`); this module only says where each is stored.
 *
 * Anything else in the history (another serializer's bytes, an `Overwrite`, a value that is not
 * a LangChain record) makes `itemsOf` answer `undefined`: the caller then reads the whole history.
 */
import type { Database } from "./Database.js"

/** Where one item's value is stored: an element of the seed, or a write (an element of it, when the write is a list). */
export type DeltaItemSource =
  | { readonly at: "seed"; readonly checkpoint: string; readonly index: number }
  | {
      readonly at: "write"
      readonly checkpoint: string
      readonly task: string
      readonly idx: number
      /** The element of a write that is a list; `undefined` when the write is the record itself. */
      readonly index: number | undefined
    }

/** One stored item of a delta channel, not decoded. */
export interface DeltaItem {
  /** The record's `kwargs.id` (a LangChain message's id), when it has one. */
  readonly id: string | undefined
  /** The record's class, the last element of its `id` path (`HumanMessage`, `AIMessage`, ...). */
  readonly kind: string
  readonly source: DeltaItemSource
}

/** What a statement names: the thread, its namespace and the channel. */
export interface ChannelKey {
  readonly thread: string
  readonly ns: string
  readonly channel: string
}

// The id and class of a JSON element `e` when it is a LangChain constructor record of a
// `langchain_core` message class (`load` maps other paths differently: those are not read here).
// What says what a JSON element `e` is, in one parse of it: its `lc`, `type`, `id` and
// `kwargs.id` (a LangChain constructor record's), and the JSON type of `kwargs.id` (NULL when absent).
const ITEM_COLUMNS = `CASE WHEN e.type = 'object' THEN json_extract(e.value, '$.lc', '$.type', '$.id', '$.kwargs.id') END AS head,
  CASE WHEN e.type = 'object' THEN json_type(e.value, '$.kwargs.id') END AS idType`

const TEXT = "CAST(w.value AS TEXT)"
const SQL = {
  // The items of the writes of `@channel` on checkpoints `@ids` (nearest first), in the order
  // `getDeltaChannelHistory` returns those writes; a write that is not JSON yields one item of no kind.
  writeItems: `SELECT w.checkpoint_id AS checkpoint, w.task_id AS task, w.idx AS idx,
      w.type = 'json' AND json_type(${TEXT}) = 'array' AS list, e.key AS item, ${ITEM_COLUMNS}
    FROM json_each(@ids) AS j CROSS JOIN writes AS w
      ON w.thread_id = @thread AND w.checkpoint_ns = @ns AND w.checkpoint_id = j.value AND w.channel = @channel
    CROSS JOIN json_each(CASE WHEN w.type <> 'json' THEN '[null]'
      WHEN json_type(${TEXT}) = 'array' THEN ${TEXT} ELSE json_array(json(${TEXT})) END) AS e
    ORDER BY j.key DESC, w.task_path, w.task_id, w.idx, e.key`,
  // The stored value of `@channel` at checkpoint `@id`: 'list' (a list written before deltas),
  // 'snapshot' (a DeltaSnapshot of a list), or anything else (not read item by item).
  seedShape: `SELECT CASE WHEN b.type <> 'json' THEN 'other'
      WHEN json_type(CAST(b.value AS TEXT)) = 'array' THEN 'list'
      WHEN CAST(b.value AS TEXT) ->> '$.lc' = 2 AND CAST(b.value AS TEXT) ->> '$.type' = 'delta_snapshot'
        AND json_type(CAST(b.value AS TEXT), '$.value') = 'array' THEN 'snapshot'
      ELSE 'other' END AS shape
    FROM checkpoints AS c JOIN blobs AS b
      ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = @channel
        AND b.version = json_extract(c.channel_versions, @path)
    WHERE c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = @id`,
  seedItems: `SELECT e.key AS item, ${ITEM_COLUMNS}
    FROM checkpoints AS c JOIN blobs AS b
      ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = @channel
        AND b.version = json_extract(c.channel_versions, @path)
    CROSS JOIN json_each(CAST(b.value AS TEXT), @list) AS e
    WHERE c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = @id
    ORDER BY e.key`,
  // The JSON text of the seed's elements `@keys`, parsed once for all of them.
  seedValues: `SELECT e.key AS item, e.value AS value
    FROM checkpoints AS c JOIN blobs AS b
      ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = @channel
        AND b.version = json_extract(c.channel_versions, @path)
    CROSS JOIN json_each(CAST(b.value AS TEXT), @list) AS e
    WHERE c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = @id
      AND e.key IN (SELECT value FROM json_each(@keys))`,
  writeValue: `SELECT type, value FROM writes WHERE thread_id = @thread AND checkpoint_ns = @ns
    AND checkpoint_id = @checkpoint AND task_id = @task AND idx = @idx AND channel = @channel`
} as const

interface ItemRow {
  readonly item: number
  /** `[lc, type, id, kwargs.id]` as JSON, for an object. */
  readonly head: string | null
  readonly idType: string | null
}

interface WriteItemRow extends ItemRow {
  readonly checkpoint: string
  readonly task: string
  readonly idx: number
  readonly list: number
}

const isUndefinedRecord = (v: unknown): boolean =>
  typeof v === "object" &&
  v !== null &&
  (v as { lc?: unknown }).lc === 2 &&
  (v as { type?: unknown }).type === "undefined"

/**
 * A row's item: a record of a `langchain_core` message class (`load` maps other paths its own
 * way; those are not read here) whose id is text or absent (no key, or the serializer's record of
 * `undefined`). `undefined` for anything else.
 */
const itemOf = (row: ItemRow, source: DeltaItemSource): DeltaItem | undefined => {
  if (row.head === null) return undefined
  const [lc, type, path, id] = JSON.parse(row.head) as [unknown, unknown, unknown, unknown]
  if (lc !== 1 || type !== "constructor" || !Array.isArray(path) || path.length !== 3) return undefined
  if (path[0] !== "langchain_core" || path[1] !== "messages" || typeof path[2] !== "string") return undefined
  if (row.idType === "text" && typeof id === "string") return { id, kind: path[2], source }
  if (row.idType === null || (row.idType === "object" && isUndefinedRecord(id))) {
    return { id: undefined, kind: path[2], source }
  }
  return undefined
}

/** The JSON path of the list in a seed of shape `shape`, or `undefined` when it is not one. */
const listPath = (shape: string | undefined): string | undefined =>
  shape === "list" ? "$" : shape === "snapshot" ? "$.value" : undefined

/**
 * The items of the seed at checkpoint `id` (whose stored value of the channel is at JSON path
 * `path` of its `channel_versions`); `undefined` when that value is not a list of records.
 */
export const seedItems = (
  db: Database,
  key: ChannelKey & { readonly path: string },
  id: string
): Array<DeltaItem> | undefined => {
  const params = { ...key, id }
  const list = listPath((db.statement(SQL.seedShape).get(params) as { shape: string } | undefined)?.shape)
  if (list === undefined) return undefined
  const items: Array<DeltaItem> = []
  for (const row of db.statement(SQL.seedItems).all({ ...params, list }) as Array<ItemRow>) {
    const item = itemOf(row, { at: "seed", checkpoint: id, index: row.item })
    if (item === undefined) return undefined
    items.push(item)
  }
  return items
}

/** The items of the channel's writes on checkpoints `ids` (nearest first); `undefined` when one is not a record. */
export const writeItems = (
  db: Database,
  key: ChannelKey,
  ids: ReadonlyArray<string>
): Array<DeltaItem> | undefined => {
  if (ids.length === 0) return []
  const rows = db.statement(SQL.writeItems).all({ ...key, ids: JSON.stringify(ids) }) as Array<WriteItemRow>
  const items: Array<DeltaItem> = []
  for (const row of rows) {
    const source: DeltaItemSource = {
      at: "write",
      checkpoint: row.checkpoint,
      task: row.task,
      idx: row.idx,
      index: row.list === 1 ? row.item : undefined
    }
    const item = itemOf(row, source)
    if (item === undefined) return undefined
    items.push(item)
  }
  return items
}

/**
 * The raw stored values `sources` point at, read in one transaction: per source, the type and the
 * text or bytes to decode (a whole write, when the source is an element of a list write).
 * `undefined` when one is gone (its checkpoint was pruned or its thread deleted since the items
 * were read).
 */
export const readSources = (
  db: Database,
  key: ChannelKey & { readonly path: string },
  sources: ReadonlyArray<DeltaItemSource>
): Array<{ readonly type: string; readonly value: string | Uint8Array }> | undefined => {
  const out: Array<{ type: string; value: string | Uint8Array }> = []
  const seeds = new Map<string, Map<number, string>>()
  for (const s of sources) {
    if (s.at !== "seed" || seeds.has(s.checkpoint)) continue
    const params = { ...key, id: s.checkpoint }
    const list = listPath((db.statement(SQL.seedShape).get(params) as { shape: string } | undefined)?.shape)
    if (list === undefined) return undefined
    const keys = sources.filter((t) => t.at === "seed" && t.checkpoint === s.checkpoint).map((t) => t.index)
    const rows = db.statement(SQL.seedValues).all({ ...params, list, keys: JSON.stringify(keys) }) as Array<{
      item: number
      value: string
    }>
    seeds.set(s.checkpoint, new Map(rows.map((r) => [r.item, r.value])))
  }
  for (const s of sources) {
    if (s.at === "seed") {
      const value = seeds.get(s.checkpoint)?.get(s.index)
      if (value === undefined) return undefined
      out.push({ type: "json", value })
    } else {
      const row = db
        .statement(SQL.writeValue)
        .get({ ...key, checkpoint: s.checkpoint, task: s.task, idx: s.idx }) as
        | { type: string; value: string | Uint8Array | null }
        | undefined
      if (row === undefined) return undefined
      out.push({ type: row.type, value: row.value ?? "" })
    }
  }
  return out
}
