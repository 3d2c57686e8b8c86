/**
 * A thread whose stored state cannot be decoded, at the saver: `getTuple` and `list` move it aside
 * (its rows into the file's `quarantined_*` tables, untouched) and go on without it; the report
 * names the failure's kind, never the stored bytes.
 */
import { join } from "node:path"
import BetterSqlite3 from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { type DamagedThread, makeSqliteSaver } from "../src/index.js"
import { conversationCheckpoint, tempDir } from "./helpers.js"

const root = tempDir("plugboard-damaged-")
afterAll(root.cleanup)

const thread = (id: string) => ({ configurable: { thread_id: id, checkpoint_ns: "" } })

describe("a thread that cannot be decoded", () => {
  it.each(["getTuple", "list"] as const)("%s moves it aside and goes on without it", async (read) => {
    const filename = join(root.dir, `${read}.sqlite`)
    const reports: Array<DamagedThread> = []
    const saver = makeSqliteSaver({ filename, onDamagedThread: (r) => reports.push(r) })
    try {
      for (const id of ["healthy", "damaged"]) {
        const checkpoint = conversationCheckpoint(2, id)
        await saver.put(
          thread(id),
          checkpoint,
          { source: "loop", step: 2, parents: {} },
          checkpoint.channel_versions
        )
      }
      const db = new BetterSqlite3(filename)
      db.prepare("UPDATE blobs SET value = ? WHERE thread_id = 'damaged'").run(Buffer.from("SECRET-BYTES{{"))
      db.close()

      if (read === "getTuple") {
        expect(await saver.getTuple(thread("damaged"))).toBeUndefined()
      } else {
        const listed: Array<string> = []
        for await (const t of saver.list({ configurable: {} }))
          listed.push(String(t.config.configurable?.thread_id))
        expect(listed).toEqual(["healthy"])
      }
      expect(reports).toEqual([{ threadId: "damaged", checkpoints: 1, error: expect.any(String) }])
      expect(JSON.stringify(reports)).not.toContain("SECRET")
      expect(await saver.getTuple(thread("healthy"))).toBeDefined()
      const check = new BetterSqlite3(filename, { readonly: true })
      const kept = check
        .prepare("SELECT count(*) AS n FROM quarantined_checkpoints WHERE thread_id = 'damaged'")
        .get() as {
        n: number
      }
      check.close()
      expect(kept.n).toBe(1)
    } finally {
      saver.close()
    }
  })
})
