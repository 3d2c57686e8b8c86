/**
 * A deleted conversation cannot be read back from the database's bytes: not from the file (its
 * free pages, the unused space inside pages, the WAL next to it), and not from an online
 * backup — what the Matrix sync uploads. The same for what retention prunes. Each test first
 * sees the marker in those bytes before the delete, so it would fail if nothing were erased.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { AIMessage, HumanMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { afterAll, describe, expect, it } from "vitest"
import { makeSqliteSaver, type OwnedSqliteSaver } from "../src/index.js"
import { bumpVersions, conversationCheckpoint, tempDir } from "./helpers.js"

const t = tempDir("plugboard-privacy-")
afterAll(t.cleanup)
let files = 0

const MARKER = "PRIVATE-7c1e94-do-not-keep"

/** Writes `steps` checkpoints to a thread; `secret(step)` is stored in messages and a write. */
const writeThread = async (
  saver: OwnedSqliteSaver,
  thread: string,
  steps: number,
  secret: (step: number) => string
): Promise<void> => {
  const versions: Record<string, number> = {}
  let config: RunnableConfig = { configurable: { thread_id: thread } }
  const messages = []
  for (let step = 1; step <= steps; step++) {
    const checkpoint = conversationCheckpoint(step, thread)
    // A short message (kept inside a page) and a long one (spilling onto overflow pages).
    messages.push(new HumanMessage({ content: `${secret(step)} short`, id: `${thread}-h${step}` }))
    messages.push(new AIMessage({ content: `${secret(step)} long `.repeat(400), id: `${thread}-a${step}` }))
    checkpoint.channel_values.messages = [...messages]
    checkpoint.channel_values.userContext = { note: secret(step) }
    const newVersions = bumpVersions(saver, versions, ["messages", "userContext", "step"])
    checkpoint.channel_versions = { ...versions }
    config = await saver.put(
      config,
      checkpoint,
      { source: "loop", step, parents: {} } as CheckpointMetadata,
      newVersions
    )
    await saver.putWrites(config, [["messages", `${secret(step)} pending`]], "task")
  }
}

/** The bytes a reader of the user's files would get: the database file, its WAL, and a backup. */
const bytesOf = async (saver: OwnedSqliteSaver, checkpoint: boolean) => {
  const filename = saver.database.filename
  if (checkpoint) saver.database.db.pragma("wal_checkpoint(TRUNCATE)")
  const backup = join(t.dir, `backup-${files++}.sqlite`)
  await saver.database.db.backup(backup)
  return {
    file: readFileSync(filename).includes(MARKER),
    wal: existsSync(`${filename}-wal`) && readFileSync(`${filename}-wal`).includes(MARKER),
    backup: readFileSync(backup).includes(MARKER)
  }
}

describe("deleted content is erased from the bytes, not only from the tables", () => {
  it("deleteThread: gone from the file, its WAL and an online backup; other threads intact", async () => {
    const saver = makeSqliteSaver({ filename: join(t.dir, `delete-${files++}.sqlite`) })
    try {
      // Interleaved with another thread, so the secret shares pages with content that stays.
      await writeThread(saver, "keep-before", 3, (s) => `kept ${s}`)
      await writeThread(saver, "secret", 6, (s) => `${MARKER} ${s}`)
      await writeThread(saver, "keep-after", 3, (s) => `kept after ${s}`)
      expect(await bytesOf(saver, true)).toEqual({ file: true, wal: false, backup: true })
      // The WAL holds it too while it is live.
      await writeThread(saver, "secret-2", 1, (s) => `${MARKER} again ${s}`)
      expect((await bytesOf(saver, false)).wal).toBe(true)

      await saver.deleteThread("secret")
      await saver.deleteThread("secret-2")

      // Straight after the delete, with no checkpoint of our own: nothing in any of the bytes.
      expect(await bytesOf(saver, false)).toEqual({ file: false, wal: false, backup: false })
      expect(await bytesOf(saver, true)).toEqual({ file: false, wal: false, backup: false })
      expect(await saver.getTuple({ configurable: { thread_id: "secret" } })).toBeUndefined()
      for (const [thread, label] of [
        ["keep-before", "kept"],
        ["keep-after", "kept after"]
      ] as const) {
        const tuple = await saver.getTuple({ configurable: { thread_id: thread } })
        const messages = tuple?.checkpoint.channel_values.messages as Array<{ content: unknown }>
        expect(messages.filter((m) => String(m.content).startsWith(`${label} 3 short`))).toHaveLength(1)
        expect(tuple?.pendingWrites).toEqual([["task", "messages", `${label} 3 pending`]])
      }
      expect(saver.database.integrityCheck()).toEqual(["ok"])
    } finally {
      saver.close()
    }
  })

  it("retention: a pruned checkpoint's values are gone from the file and an online backup", async () => {
    const saver = makeSqliteSaver({
      filename: join(t.dir, `prune-${files++}.sqlite`),
      retention: { keepCheckpoints: 2, pruneEvery: 1000 }
    })
    try {
      const versions: Record<string, number> = {}
      let config: RunnableConfig = { configurable: { thread_id: "pruned" } }
      for (let step = 1; step <= 6; step++) {
        const checkpoint = conversationCheckpoint(step, "pruned")
        // Only the first steps carry the secret, in a channel each step replaces.
        checkpoint.channel_values.userContext = { note: step <= 3 ? `${MARKER} ${step}` : `public ${step}` }
        const newVersions = bumpVersions(saver, versions, ["messages", "userContext", "step"])
        checkpoint.channel_versions = { ...versions }
        config = await saver.put(
          config,
          checkpoint,
          { source: "loop", step, parents: {} } as CheckpointMetadata,
          newVersions
        )
        await saver.putWrites(config, [["userContext", checkpoint.channel_values.userContext]], "task")
      }
      expect(await bytesOf(saver, true)).toMatchObject({ file: true, backup: true })
      expect(await saver.prune("pruned")).toBe(4)
      expect(await bytesOf(saver, true)).toEqual({ file: false, wal: false, backup: false })
      const head = await saver.getTuple({ configurable: { thread_id: "pruned" } })
      expect(head?.checkpoint.channel_values.userContext).toEqual({ note: "public 6" })
    } finally {
      saver.close()
    }
  })
})
