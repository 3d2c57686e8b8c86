/**
 * A saved conversation whose stored state cannot be decoded: it used to answer 503 forever and
 * echo the stored bytes. Now it is moved aside in its file (kept), logged without its bytes, and
 * the session works again.
 */
import { createRequire } from "node:module"
import { join } from "node:path"
import { ScriptedChatModel } from "@plugboard/models"
import { databaseFileName } from "@plugboard/sqlite"
import { describe, expect, it } from "vitest"
import { call, collect, recordingLogger, start, stream, user } from "./helpers.js"

/** The part of better-sqlite3 this test uses. */
interface Db {
  prepare(sql: string): {
    run(...args: ReadonlyArray<unknown>): { changes: number }
    all(...args: ReadonlyArray<unknown>): Array<unknown>
  }
  close(): void
}
// The SQLite driver the adapters use (host-node itself does not depend on it), to damage a file.
const BetterSqlite3 = createRequire(new URL("../../adapters/package.json", import.meta.url))(
  "better-sqlite3"
) as new (
  file: string,
  options?: { readonly?: boolean }
) => Db

const GARBAGE = Buffer.from("\u0000\u0001SECRET-BYTES-of-a-damaged-blob\u00ff\u00fe{{{", "latin1")

describe("a thread whose stored state cannot be decoded", () => {
  it("is moved aside and logged without its bytes; the session answers again", async () => {
    const { logger, records } = recordingLogger()
    const server = await start({
      logger,
      model: ScriptedChatModel.script(["First answer.", "Second answer."])
    })
    try {
      const u = await user(server.app.oracleDid)
      await collect((await stream(server.url, "talk", u.headers, "Hello")).events)
      const file = join(server.dir, "users", databaseFileName(u.did))
      const db = new BetterSqlite3(file)
      const damaged = db.prepare("UPDATE blobs SET value = ? WHERE thread_id = 'talk'").run(GARBAGE).changes
      db.close()
      expect(damaged).toBeGreaterThan(0)

      const { response, events } = await stream(server.url, "talk", u.headers, "Are you there?")
      const second = await collect(events)
      expect(response.status).toBe(200)
      expect(second.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      const history = await call(`${server.url}/messages/talk`, { headers: u.headers })
      expect(history.status).toBe(200)
      expect(history.body.messages.map((m: { content: string }) => m.content)).toEqual([
        "Are you there?",
        "Second answer."
      ])
      const report = records.find((r) => r.message.includes("could not be decoded"))
      // A new thread's first turn saves one checkpoint, its messages in it as one full copy.
      expect(report?.fields).toMatchObject({ threadId: "talk", checkpoints: 1 })
      const everything = JSON.stringify([records, second, history.body])
      expect(everything).not.toContain("SECRET-BYTES")
      // Kept, not deleted: the damaged rows are in the file's quarantine tables.
      const check = new BetterSqlite3(file, { readonly: true })
      const kept = check
        .prepare("SELECT value FROM quarantined_blobs WHERE thread_id = 'talk'")
        .all() as Array<{
        value: Buffer
      }>
      check.close()
      expect(kept.some((row) => Buffer.compare(Buffer.from(row.value), GARBAGE) === 0)).toBe(true)
    } finally {
      await server.stop()
    }
  })
})
