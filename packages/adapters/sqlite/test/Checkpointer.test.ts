/** The core `Checkpointer` port's conformance suite, on the per-user SQLite registry. */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { CheckpointerConformance } from "@plugboard/testing"
import { Effect } from "effect"
import { makeCheckpointer, type SqliteSaver, UserDatabaseRegistry } from "../src/index.js"
import { conversationCheckpoint, tempDir } from "./helpers.js"

CheckpointerConformance.run<SqliteSaver>("sqlite registry", () =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const t = tempDir()
      return { t, registry: new UserDatabaseRegistry({ directory: t.dir, maxOpen: 1 }) }
    }),
    ({ t, registry }) =>
      Effect.promise(async () => {
        await registry.close()
        t.cleanup()
      })
  ).pipe(
    Effect.map(({ registry }) => ({
      checkpointer: makeCheckpointer(registry),
      put: (saver, value) =>
        Effect.promise(async () => {
          const checkpoint = conversationCheckpoint(1)
          checkpoint.channel_values.marker = value
          // A version of its own (not a clock reading): a blob is never replaced once written.
          checkpoint.channel_versions.marker = saver.getNextVersion(undefined)
          await saver.put(
            { configurable: { thread_id: "t" } },
            checkpoint,
            { source: "loop", step: 1, parents: {} } as CheckpointMetadata,
            {
              marker: checkpoint.channel_versions.marker
            }
          )
        }),
      get: (saver) =>
        Effect.promise(async () => {
          const tuple = await saver.getTuple({ configurable: { thread_id: "t" } })
          return tuple?.checkpoint.channel_values.marker as string | undefined
        })
    }))
  )
)
