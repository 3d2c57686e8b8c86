/**
 * Retention: keep the newest N checkpoints of each thread (per namespace) and drop the rest,
 * without ever breaking what the kept checkpoints need:
 *
 * - a kept checkpoint's channel values are blobs keyed by (channel, version) that an older
 *   checkpoint may have written (an unchanged `messages` list is written once and carried);
 *   blobs are deleted only when no remaining checkpoint of the thread points at them, so the
 *   newest checkpoint's `messages` — the history `GET /messages/:sessionId` shows — survive;
 * - a checkpoint whose metadata counts delta-channel writes since the last snapshot
 *   (`counters_since_delta_snapshot`, LangGraph's DeltaChannel) is rebuilt by replaying its
 *   ancestors' writes, so its ancestors are kept back to one that needs none (the snapshot);
 * - the kept checkpoints' own pending writes are never touched.
 *
 * Freed pages go back to the file system with `incremental_vacuum` (the file is created with
 * `auto_vacuum = INCREMENTAL`), a bounded number per prune so a prune stays short.
 *
 * Limitation (documented, not silent): two writers racing on ONE thread, one of them
 * building on a checkpoint the other's prune just dropped, would carry references to blobs
 * that are gone. LangGraph does not support concurrent runs of one thread; the registry's
 * per-user lock serialises turns that opt in (`withTurn`).
 */
import type { Database } from "./Database.js"

/** How many checkpoints to keep. */
export interface RetentionOptions {
  /** Checkpoints kept per thread and namespace (newest first); at least 1. */
  readonly keepCheckpoints: number
  /** Puts to a thread between automatic prunes (default 10): pruning is amortised. */
  readonly pruneEvery?: number | undefined
  /** Most pages returned to the file system per prune (default 2000; 0 disables). */
  readonly vacuumPages?: number | undefined
}

interface Row {
  checkpoint_id: string
  parent_checkpoint_id: string | null
  needs_ancestors: number
  channel_versions: string
}

/** Checks retention options, throwing a `RangeError` for a nonsensical policy. */
export const validateRetention = (retention: RetentionOptions): RetentionOptions => {
  if (!Number.isSafeInteger(retention.keepCheckpoints) || retention.keepCheckpoints < 1) {
    throw new RangeError(`keepCheckpoints must be an integer ≥ 1, got ${retention.keepCheckpoints}`)
  }
  const every = retention.pruneEvery ?? 10
  if (!Number.isSafeInteger(every) || every < 1) throw new RangeError(`pruneEvery must be an integer ≥ 1`)
  return retention
}

/**
 * Prunes one (thread, namespace), one thread's namespaces, or every thread. Must run inside a
 * write transaction. Returns the number of checkpoints removed.
 */
export const prune = (db: Database, retention: RetentionOptions, threadId?: string, ns?: string): number => {
  const keep = retention.keepCheckpoints
  const groups = (
    threadId === undefined
      ? db
          .statement(
            "SELECT thread_id, checkpoint_ns FROM checkpoints GROUP BY thread_id, checkpoint_ns HAVING count(*) > ?"
          )
          .all(keep)
      : ns === undefined
        ? db
            .statement(
              "SELECT thread_id, checkpoint_ns FROM checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns HAVING count(*) > ?"
            )
            .all(threadId, keep)
        : [{ thread_id: threadId, checkpoint_ns: ns }]
  ) as Array<{ thread_id: string; checkpoint_ns: string }>
  let removed = 0
  for (const g of groups) removed += pruneGroup(db, keep, g.thread_id, g.checkpoint_ns)
  const pages = retention.vacuumPages ?? 2000
  if (removed > 0 && pages > 0) {
    const free = db.db.pragma("freelist_count", { simple: true }) as number
    if (free > 0) db.incrementalVacuum(Math.min(free, pages))
  }
  return removed
}

const pruneGroup = (db: Database, keep: number, thread: string, ns: string): number => {
  const rows = db
    .statement(
      `SELECT checkpoint_id, parent_checkpoint_id, needs_ancestors, channel_versions FROM checkpoints
       WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC`
    )
    .all(thread, ns) as Array<Row>
  if (rows.length <= keep) return 0
  const byId = new Map(rows.map((r) => [r.checkpoint_id, r]))
  const kept = new Set<string>()
  for (const row of rows.slice(0, keep)) {
    // Walk up while the checkpoint depends on its ancestors' writes (delta channels).
    let cursor: Row | undefined = row
    while (cursor !== undefined && !kept.has(cursor.checkpoint_id)) {
      kept.add(cursor.checkpoint_id)
      cursor =
        cursor.needs_ancestors === 1 && cursor.parent_checkpoint_id !== null
          ? byId.get(cursor.parent_checkpoint_id)
          : undefined
    }
  }
  const doomed = rows.filter((r) => !kept.has(r.checkpoint_id)).map((r) => r.checkpoint_id)
  if (doomed.length === 0) return 0
  // The blobs the kept checkpoints still use. A kept row whose versions cannot be decoded (a
  // damaged file) says nothing reliable about them: then nothing is pruned, nothing is lost.
  const referenced = new Set<string>()
  for (const r of rows) {
    if (!kept.has(r.checkpoint_id)) continue
    let versions: Record<string, string>
    try {
      versions = JSON.parse(r.channel_versions) as Record<string, string>
    } catch {
      return 0
    }
    for (const [channel, version] of Object.entries(versions)) referenced.add(`${channel}\u0000${version}`)
  }
  const ids = JSON.stringify(doomed)
  db.statement(
    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN (SELECT value FROM json_each(?))"
  ).run(thread, ns, ids)
  db.statement(
    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN (SELECT value FROM json_each(?))"
  ).run(thread, ns, ids)
  const blobs = db
    .statement("SELECT channel, version FROM blobs WHERE thread_id = ? AND checkpoint_ns = ?")
    .all(thread, ns) as Array<{ channel: string; version: string }>
  const del = db.statement(
    "DELETE FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?"
  )
  for (const b of blobs) {
    if (!referenced.has(`${b.channel}\u0000${b.version}`)) del.run(thread, ns, b.channel, b.version)
  }
  return doomed.length
}
