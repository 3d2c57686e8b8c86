/**
 * Child process for the crash and concurrency tests: writes a stream of checkpoints (and one
 * pending write each) to a database, printing `ack <checkpoint_id>` after each awaited write
 * returned. Exits 1, printing the error, on any failure (a SQLITE_BUSY would be one).
 *
 * Each writer's checkpoints carry its own channel values (messages naming its tag, a `writer`
 * channel) under versions from the saver's own `getNextVersion`, each chain starting from no
 * version: two writers of one thread mint their versions independently, as two LangGraph
 * runs do, and each checkpoint must still read back its own writer's values.
 *
 * argv: filename threadId count(0 = until killed) tag busyTimeoutMs
 * goFile (optional: print `ready`, then start writing only once this file exists, so that
 * several children really write at the same time)
 */
import { existsSync } from "node:fs"
import type { RunnableConfig } from "@langchain/core/runnables"
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { makeSqliteSaver } from "../src/index.js"
import { bumpVersions, conversationCheckpoint } from "./helpers.js"

const [filename, threadId, countArg, tag, busyArg, goFile] = process.argv.slice(2)
const count = Number(countArg)
const saver = makeSqliteSaver({ filename: filename!, busyTimeoutMs: Number(busyArg ?? 200) })
let config: RunnableConfig = {
  configurable: { thread_id: threadId, checkpoint_ns: "" }
}
const versions: Record<string, number> = {}
if (goFile !== undefined) {
  process.stdout.write("ready\n")
  while (!existsSync(goFile)) await new Promise((resolve) => setTimeout(resolve, 2))
}
try {
  for (let step = 1; count === 0 || step <= count; step++) {
    const checkpoint = conversationCheckpoint((step % 30) + 1, tag)
    checkpoint.channel_values.writer = `${tag}:${step}`
    const newVersions = bumpVersions(
      saver,
      versions,
      step === 1 ? ["messages", "writer", "step", "loadedPlugins"] : ["messages", "writer", "step"]
    )
    checkpoint.channel_versions = { ...versions }
    config = await saver.put(
      { configurable: { ...config.configurable, thread_id: threadId } },
      checkpoint,
      { source: "loop", step, parents: {}, writer: tag } as CheckpointMetadata,
      newVersions
    )
    await saver.putWrites(config, [["messages", `${tag}:${step}`]], `task-${tag}`)
    process.stdout.write(`ack ${checkpoint.id} ${tag}:${step}\n`)
  }
  process.stdout.write(`stat ${saver.database.busyRetries}\n`)
  saver.close()
} catch (error) {
  process.stdout.write(`error ${String((error as { code?: string }).code)} ${String(error)}\n`)
  process.exit(1)
}
