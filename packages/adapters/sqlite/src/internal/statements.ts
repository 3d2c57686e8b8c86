/**
 * The SQL the SQLite saver runs (`SqliteSaver.ts`), in one place: each statement is prepared once
 * per connection by the database's statement cache.
 */
import { TASKS } from "@langchain/langgraph-checkpoint"

/** Whether checkpoint `alias` stores its own value of `@channel` (a blob that is not the "empty" marker). */
const seeded = (alias: string) =>
  `EXISTS (SELECT 1 FROM blobs AS b WHERE b.thread_id = @thread AND b.checkpoint_ns = @ns AND b.channel = @channel
    AND b.version = json_extract(${alias}.channel_versions, @path) AND b.type <> 'empty')`

/** The columns of a checkpoint row, in the order the saver reads and writes them. */
export const COLUMNS =
  "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, channel_versions, metadata_type, metadata"
/** Every statement of the saver. */
export const SQL = {
  byId: `SELECT ${COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`,
  latest: `SELECT ${COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`,
  // CROSS JOIN pins json_each as the outer loop, so each blob is a primary-key lookup instead
  // of a scan of every blob of the thread (the planner has no statistics for json_each).
  blobs: `SELECT b.channel, b.type, b.value FROM json_each(?) AS j
    CROSS JOIN blobs AS b ON b.thread_id = ? AND b.checkpoint_ns = ? AND b.channel = j.key AND b.version = j.value`,
  writes: `SELECT task_id, channel, type, value FROM writes
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx`,
  sends: `SELECT task_id, channel, type, value FROM writes
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND channel = '${TASKS}'
    ORDER BY task_path, task_id, idx`,
  insertCheckpoint: `INSERT OR REPLACE INTO checkpoints (${COLUMNS}, needs_ancestors) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // IGNORE, never REPLACE: a stored checkpoint points at this blob; replacing it would change
  // what that checkpoint returns (as Postgres's `ON CONFLICT ... DO NOTHING`).
  insertBlob: `INSERT OR IGNORE INTO blobs (thread_id, checkpoint_ns, channel, version, type, value) VALUES (?, ?, ?, ?, ?, ?)`,
  insertWrite: `INSERT OR IGNORE INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  replaceWrite: `INSERT OR REPLACE INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  latestId:
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1",
  // The ancestors of checkpoint `@id`, nearest first (`depth` 1 = its parent), up to and including
  // `@stop` (a checkpoint whose history is cached) or the first whose own value of `@channel` is stored (a blob, at the version its
  // `channel_versions` names, that is not the "empty" marker): the delta channel's seed.
  deltaChain: `WITH RECURSIVE chain(id, parent, seeded, depth) AS (
      SELECT p.checkpoint_id, p.parent_checkpoint_id, ${seeded("p")}, 1
        FROM checkpoints AS t JOIN checkpoints AS p
          ON p.thread_id = t.thread_id AND p.checkpoint_ns = t.checkpoint_ns AND p.checkpoint_id = t.parent_checkpoint_id
        WHERE t.thread_id = @thread AND t.checkpoint_ns = @ns AND t.checkpoint_id = @id
      UNION ALL
      SELECT c.checkpoint_id, c.parent_checkpoint_id, ${seeded("c")}, chain.depth + 1
        FROM chain JOIN checkpoints AS c
          ON c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = chain.parent
        WHERE chain.seeded = 0 AND chain.id <> @stop
    )
    SELECT id, seeded, depth FROM chain`,
  // The writes of `@channel` stored on the chain's checkpoints (`@ids`, nearest first), oldest checkpoint first and, within
  // one, in LangGraph's replay order (task_path, task_id, idx; SQLite's BINARY collation compares
  // UTF-8 bytes, which is code-point order, as `compareWritesSortKeys` requires).
  deltaWrites: `SELECT w.task_id, w.channel, w.type, w.value
    FROM json_each(@ids) AS j CROSS JOIN writes AS w
      ON w.thread_id = @thread AND w.checkpoint_ns = @ns AND w.checkpoint_id = j.value AND w.channel = @channel
    ORDER BY j.key DESC, w.task_path, w.task_id, w.idx`,
  deltaSeed: `SELECT b.type, b.value FROM checkpoints AS c JOIN blobs AS b
      ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = @channel
        AND b.version = json_extract(c.channel_versions, @path)
    WHERE c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = @id`,
  // Whether checkpoint `@id` stores its own value of `@channel`.
  ownSeed: `SELECT ${seeded("c")} AS seeded FROM checkpoints AS c
    WHERE c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = @id`,
  deleteCheckpoints: "DELETE FROM checkpoints WHERE thread_id = ?",
  deleteBlobs: "DELETE FROM blobs WHERE thread_id = ?",
  deleteWrites: "DELETE FROM writes WHERE thread_id = ?"
} as const
